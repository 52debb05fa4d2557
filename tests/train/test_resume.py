"""A trial killed at the worst moments and retried in the same run directory ends exactly like an
uninterrupted one: the same final model and numbers, the same metrics.csv step labels, no temp files.

The kill is simulated in-process: an exception raised once from a callback hook (monkeypatched here,
no hook in the production code), then ``train`` is called again on the same directory.
"""

from __future__ import annotations

import pytest
import torch

from ablate.config import load_config
from ablate.rundir import RunDir
from ablate.train.monitor import RunMonitor
from ablate.train.run import train

from .conftest import MINI, STEPS, STRAIGHT, csv_rows, losses

FINAL = (
    "val/nll",
    "val/ppl",
    "val/bleu",
    "val/bleu_sentences",
    "test/nll",
    "test/ppl",
    "test/bleu",
    "step",
    "checkpoint_step",
)


class Killed(Exception):
    """Stands for SIGKILL / preemption."""


def _run_killed(monkeypatch: pytest.MonkeyPatch, hook: str, when, overrides: list[str], out) -> None:
    def boom(self, trainer, *args):
        if when(trainer):
            raise Killed

    with monkeypatch.context() as mp:
        mp.setattr(RunMonitor, hook, boom)
        with pytest.raises(Killed):
            train(load_config(MINI, overrides=overrides), out)


def test_killed_during_the_final_validation_reports_the_same_final_model(straight_run, tmp_path, monkeypatch):
    # last.ckpt is written at step 12 (checkpoint_every_steps) just before the final validation, which is killed
    overrides = [*STRAIGHT, f"train.checkpoint_every_steps={STEPS // 3}"]
    out = tmp_path / "killed"
    _run_killed(monkeypatch, "on_validation_start", lambda tr: tr.global_step >= tr.max_steps, overrides, out)
    rd = RunDir(out)
    assert torch.load(rd.last_ckpt, weights_only=False)["global_step"] == STEPS
    assert torch.load(rd.best_ckpt, weights_only=False)["global_step"] < STEPS  # best never saw step 12
    assert not rd.metrics_file.exists()

    retried = train(load_config(MINI, overrides=overrides), out)
    straight = RunDir(straight_run).read_metrics()
    assert {k: retried[k] for k in FINAL} == pytest.approx({k: straight[k] for k in FINAL}, rel=1e-6)
    assert retried["checkpoint"] == straight["checkpoint"]
    assert rd.read_metrics()["checkpoint_step"] == straight["checkpoint_step"]
    assert rd.read_hypotheses("valid") == RunDir(straight_run).read_hypotheses("valid")


def test_resume_between_validations_keeps_step_labels_and_removes_stale_temps(straight_run, tmp_path, monkeypatch):
    # last.ckpt written in on_train_batch_end at step 6 (checkpoint_every_steps=2), killed as step 7 starts
    overrides = [*STRAIGHT, "train.checkpoint_every_steps=2"]
    out = tmp_path / "killed"
    _run_killed(monkeypatch, "on_train_batch_start", lambda tr: tr.global_step == 6, overrides, out)
    rd = RunDir(out)
    stale = [rd.checkpoints / ".last.ckpt.tmp-999999", rd.path / ".progress.json.tmp-999999"]
    for path in stale:  # what a writer killed mid-write leaves behind
        path.write_bytes(b"torn")

    train(load_config(MINI, overrides=overrides), out)
    assert not any(p.exists() for p in stale)

    def shape(run_dir):  # (step label, the metrics logged in that row) for every row of metrics.csv
        return [
            (r["step"], sorted(k for k, v in r.items() if v and k not in ("step", "epoch"))) for r in csv_rows(run_dir)
        ]

    assert shape(out) == shape(straight_run)
    resumed, straight = losses(out), losses(straight_run)
    assert [resumed[s] for s in range(STEPS)] == pytest.approx([straight[s] for s in range(STEPS)], rel=1e-5)
