"""A kind of model in one file (examples/masked_lm.py: an encoder-only masked LM registered as the family
``masked``): the dry run counts it, the real trainer trains it in a sweep, and `status` and `table` read it
in every format, with nothing in ablate naming it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sweep_harness import fake_env

from ablate.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "masked_lm.py"
MASKED = ["model.arch=masked", "model.max_positions=32", "data.block_size=16", "eval.test=false"]
ROWS = [
    {"name": "sinusoidal", "group": "base"},
    {"name": "rope", "group": "positions", "overrides": ["model.positional=rope"]},
]


def _sweep(write_sweep, tmp_path: Path, steps: int) -> Path:
    shutil.copy(EXAMPLE, tmp_path / "masked_lm.py")  # beside the sweep file, as a user keeps a plugin
    overrides = [*MASKED, f"train.max_steps={steps}", f"train.val_every_steps={steps}"]
    return write_sweep(rows=ROWS, imports=["masked_lm"], overrides=overrides, name="masked")


def _ablate(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "ablate", *args], env=fake_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def test_the_package_names_no_third_family() -> None:
    sources = {p: p.read_text() for p in (ROOT / "ablate").rglob("*.py")}
    assert [p for p, text in sources.items() if "masked_lm" in text or "MaskedLM" in text] == []


def test_a_family_plugin_dry_runs_with_its_closed_form_size(write_sweep, tmp_path, capsys, isolated_registries) -> None:
    path = _sweep(write_sweep, tmp_path, steps=20)
    assert main(["sweep", str(path), "--dry-run", "--json"]) == 0  # imports the plugin: isolated_registries
    trials = json.loads(capsys.readouterr().out)["trials"]  # forgets it and its family after the test
    assert [t["row"] for t in trials] == ["sinusoidal", "rope"]
    import masked_lm  # the module the sweep imported: build the model a trial would

    from ablate.config import load_config, model_section
    from ablate.model.build import build_model

    cfg = load_config(str(tmp_path / "exp.yaml"), MASKED)
    model = build_model(model_section(cfg.model), int(cfg.data.vocab_size))
    assert isinstance(model, masked_lm.MaskedLM)
    assert trials[0]["params"] == sum(p.numel() for p in model.parameters())  # the closed form, exactly
    assert trials[0]["flops"] > 0 and trials[0]["params"] == trials[1]["params"]  # RoPE has no parameters


def test_a_family_plugin_keeps_the_batch_and_masks_fixed(monkeypatch, isolated_registries) -> None:
    import numpy as np

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from masked_lm import MASK_ID, masked_batch

    from ablate.data.lm_blocks import blocks

    split = blocks(np.arange(37, dtype=np.int64) + 10, 9)  # 4 blocks of 9 (+1) tokens
    one, again = masked_batch(split, [2, 0], seed=5), masked_batch(split, [2, 0], seed=5)
    assert all(bool((one[k] == again[k]).all()) for k in one)  # a block's mask is a function of its index
    masked = one["tgt_in"] == MASK_ID
    assert bool(masked.any(1).all())  # every block predicts something
    assert bool((one["tgt_out"][masked] == torch_rows(split, [2, 0])[masked]).all())
    assert bool((one["tgt_out"][~masked] == 0).all())  # the rest is padding: not scored


def torch_rows(split, index):
    import torch

    return torch.from_numpy(split.take(index)[:, :-1])


@pytest.mark.slow
def test_a_family_plugin_sweeps_with_the_real_trainer_and_reads_back(
    write_sweep, tmp_path, capsys, isolated_registries
) -> None:
    path = _sweep(write_sweep, tmp_path, steps=30)
    assert "2 new trial(s)" in _ablate("sweep", str(path)).stdout  # real workers: the real trainer
    assert main(["status", str(path)]) == 0
    assert "2 done" in capsys.readouterr().out
    for fmt in ("text", "md", "csv", "json"):
        assert main(["table", str(path), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "rope" in out and "sinusoidal" in out
        if fmt == "md":
            assert "PPL over masked tokens" in out  # the family's unit, in the table's notes
        if fmt == "json":
            rope = next(r for r in json.loads(out)["rows"] if r["row"] == "rope")
            assert rope["ppl"] is not None and rope.get("bleu") is None
