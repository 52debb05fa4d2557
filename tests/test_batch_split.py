"""The global batch as the recipe: the memory model against its measurements, the split it chooses, trial
ids that do not depend on the split, and the dry run's batch plan for sweeps/table3.yaml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ablate.config import load_config, model_section
from ablate.config.batch_split import GIB, MEMORY_USE, choose_split, peak_bytes
from ablate.config.size import count_parameters
from ablate.errors import ConfigError
from ablate.sweep.file.spec import load_sweep

REPO = Path(__file__).resolve().parents[1]
BASE = REPO / "experiments" / "base.yaml"
BIG = ["model.d_model=1024", "model.d_ff=4096", "model.n_heads=16"]
VOCAB = 37_000


def _model(overrides: list[str]):
    model = model_section(dict(load_config(BASE, overrides).model))
    return model, count_parameters(model, VOCAB)


@pytest.mark.parametrize(("overrides", "measured_gib", "tolerance"), [([], 4.8, 0.01), (BIG, 9.0, 0.03)])
def test_the_memory_model_gives_the_measured_peaks(overrides, measured_gib, tolerance):
    # One H200, bf16 autocast, eager, 6,250 tokens a side (docs/results/gpu-h200.md): base fitted, big predicted
    model, params = _model(overrides)
    assert peak_bytes(model, VOCAB, params, 6250) / GIB == pytest.approx(measured_gib, rel=tolerance)


def test_one_80_gib_gpu_holds_the_papers_whole_batch_for_base_and_big():
    for overrides in ([], BIG):
        model, params = _model(overrides)
        split = choose_split(model, VOCAB, params, 25_000, devices=1, memory_bytes=80 * GIB, min_batch=258)
        assert (split.devices, split.max_tokens, split.accumulate) == (1, 25_000, 1)
        assert split.text() == "1x25,000x1"


def test_a_small_device_accumulates_batches_that_fit_it():
    model, params = _model(BIG)
    split = choose_split(model, VOCAB, params, 25_000, devices=1, memory_bytes=16 * GIB, min_batch=258)
    assert split.accumulate > 1 and split.max_tokens * split.accumulate >= 25_000
    assert split.max_tokens * (split.accumulate - 1) < 25_000  # the fewest batches: one fewer would not cover it
    assert split.peak_bytes <= MEMORY_USE * 16 * GIB
    four = choose_split(model, VOCAB, params, 25_000, devices=4, memory_bytes=80 * GIB, min_batch=258)
    assert (four.max_tokens, four.accumulate) == (6_250, 1)


def test_a_device_that_cannot_hold_one_pair_is_refused_in_one_line():
    model, params = _model(BIG)
    with pytest.raises(ConfigError) as err:
        choose_split(model, VOCAB, params, 25_000, devices=1, memory_bytes=2 * GIB, min_batch=258)
    assert "\n" not in str(err.value) and "train.global_tokens" in str(err.value) and "2 GiB" in str(err.value)


def _variant(tmp_path: Path, name: str, edit) -> Path:
    data = yaml.safe_load((REPO / "sweeps" / "table3.yaml").read_text())
    data["experiment"] = str(BASE)
    edit(data)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _ids(path: Path) -> list[str]:
    return [t.trial_id for t in load_sweep(path).trials]


def test_the_same_global_batch_split_otherwise_keeps_every_trial_id(tmp_path):
    table3 = _ids(REPO / "sweeps" / "table3.yaml")

    def four_gpus(d):  # 4 GPUs a trial, a per-device batch and accumulation written in: ablate's choice anyway
        d["overrides"] = [o for o in d["overrides"] if not o.startswith("trainer.devices")]
        d["overrides"] += ["trainer.devices=4", "data.max_tokens=3125", "train.accumulate_grad_batches=2"]
        d["launcher"]["gpus_per_node"] = d["launcher"]["tasks_per_node"] = 4

    def another_batch(d):
        d["overrides"] = [o.replace("global_tokens=25000", "global_tokens=12500") for o in d["overrides"]]

    assert _ids(_variant(tmp_path, "four.yaml", four_gpus)) == table3
    assert set(_ids(_variant(tmp_path, "half.yaml", another_batch))).isdisjoint(table3)


def test_a_split_written_out_without_a_global_batch_is_still_identity(tmp_path):
    def written(d, tokens):
        d["overrides"] = [o for o in d["overrides"] if "global_tokens" not in o] + [f"data.max_tokens={tokens}"]

    a = _ids(_variant(tmp_path, "a.yaml", lambda d: written(d, 6250)))
    b = _ids(_variant(tmp_path, "b.yaml", lambda d: written(d, 3125)))
    assert set(a).isdisjoint(b)  # no global batch stated: the batch a device runs is the recipe, as before


def test_the_dry_run_prints_each_trials_split_and_step(tmp_path, capsys):
    from ablate.cli import main

    assert main(["sweep", str(REPO / "sweeps" / "table3.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    base = next(line for line in out.splitlines() if line.startswith("base "))
    assert "1x25,000x1" in base and " ms" in base
    assert "planned for 80 GiB a device" in out

    small = _variant(tmp_path, "small.yaml", lambda d: d.update(cost={"memory_gb": 16}))
    assert main(["sweep", str(small), "--dry-run"]) == 0
    big = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("big "))
    tokens, accumulate = re.search(r" 1x([\d,]+)x(\d+) ", big).groups()
    assert int(accumulate) > 1 and int(tokens.replace(",", "")) * int(accumulate) >= 25_000


def test_a_global_batch_too_small_or_a_device_too_small_is_one_line_before_anything_runs(tmp_path, capsys):
    from ablate.cli import main

    with pytest.raises(ConfigError, match="train.global_tokens: 100 cannot hold one pair of max_len=256"):
        load_config(BASE, ["train.global_tokens=100"])
    model, params = _model([])
    with pytest.raises(ConfigError, match="over 512 device"):
        choose_split(model, VOCAB, params, 25_000, devices=512, memory_bytes=None, min_batch=258)
    tiny = _variant(tmp_path, "tiny.yaml", lambda d: d.update(cost={"memory_gb": 1}))
    assert main(["sweep", str(tiny), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "row 'base': train.global_tokens" in err and "memory_gb" in err
    assert not (tmp_path / ".ablate").exists()
