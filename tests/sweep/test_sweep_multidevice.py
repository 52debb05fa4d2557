"""A local sweep whose trial trains on 2 devices (gloo DDP on 2 CPU ranks; local multi-GPU trials take
the same path): Lightning re-executes the worker's command line for rank 1, and only rank 0 may claim
the attempt and record its result. Before, rank 1 recorded an empty result first and the table showed
n/a. Rank 1 also ends first (rank 0 alone runs the final evaluation) and must exit 0 then: Lightning's
DDP launcher kills every rank when one exits non-zero, and it killed rank 0 in the middle of that
evaluation, three attempts in a row. Also: a trial asking for more devices than its launcher slot gives
it is refused before launch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ablate.cli import main
from ablate.sweep.loader import load_results

EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 120, "max_len": 64, "max_tokens": 256, "tokenizer_sample": 1000},
    "train": {"max_steps": 12, "warmup_steps": 4, "val_every_steps": 6, "log_every_steps": 3},
    "trainer": {"accelerator": "cpu", "devices": 2, "strategy": "ddp"},
    "eval": {"beam_size": 1, "bleu_max_sentences": 10, "test": False},
    "logging": {"wandb": "disabled", "progress_bar": False},
}


# The default evaluation (test split on, beam 4, every sentence) on 1,000 + 1,000 sentences: rank 0's final
# evaluation takes several seconds, longer than the DDP launcher's 5 s look at its children.
FULL_EVAL = {
    **EXPERIMENT,
    "data": {**EXPERIMENT["data"], "args": {"n_train": 2000, "n_valid": 1000, "n_test": 1000}},
    "eval": {},
}


def _write(tmp_path: Path, per_trial: int, experiment: dict = EXPERIMENT) -> Path:
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(experiment))
    path = tmp_path / "ddp.yaml"
    launcher = {"name": "local", "slots": 2, "devices_per_trial": per_trial, "poll_s": 0.5}
    spec = {"name": "ddp", "experiment": "exp.yaml", "seeds": [1], "launcher": launcher, "wandb": {"mode": "disabled"}}
    path.write_text(yaml.safe_dump({**spec, "rows": [{"name": "base", "group": "base", "paper": "base"}]}))
    return path


def test_more_devices_than_the_slot_gives_is_refused_before_launch(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, per_trial=1)
    assert main(["sweep", str(path)]) == 2
    err = capsys.readouterr().err
    assert "trainer.devices=2" in err and "launcher.devices_per_trial=1" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.integration
@pytest.mark.slow
def test_a_two_device_local_trial_records_its_full_metrics(tmp_path: Path) -> None:
    path = _write(tmp_path, per_trial=2, experiment=FULL_EVAL)
    env = dict(os.environ, ABLATE_CACHE=str(tmp_path / "cache"), WANDB_MODE="disabled", WANDB_SILENT="true")
    out = subprocess.run(
        [sys.executable, "-m", "ablate", "sweep", str(path)], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (result,) = load_results(path)
    assert result.state == "done" and result.n_attempts == 1
    assert result.metrics["val/ppl"] > 1 and "val/bleu" in result.metrics and result.metrics["step"] == 12
    assert "test/bleu" in result.metrics and result.metrics["val/bleu_sentences"] == 1000  # the full evaluation
    assert not (Path(result.run_dir) / "error.txt").exists()
    table = subprocess.run(
        [sys.executable, "-m", "ablate", "table", str(path), "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
    )
    rows = json.loads(table.stdout)["rows"]
    assert rows[0]["ppl"] == pytest.approx(result.metrics["val/ppl"])
