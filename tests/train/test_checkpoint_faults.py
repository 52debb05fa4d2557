"""Checkpoints cut short (a full disk, a copy stopped halfway): `ablate eval` says so in one line, and a
run resuming from a broken last.ckpt falls back to best.ckpt or to the start, keeping a copy of the
broken file, instead of crashing on every retry."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ablate.cli import main
from ablate.config import load_config
from ablate.rundir import CheckpointUnreadable, RunDir
from ablate.train.run import train
from ablate.train.system import checkpoint_step, read_checkpoint

from .conftest import MINI, STEPS, STRAIGHT


def _cut(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


@pytest.mark.parametrize("keep", [0, 5000])
def test_eval_of_a_cut_short_checkpoint_is_one_line(straight_run: Path, tmp_path: Path, capsys, keep: int) -> None:
    run = tmp_path / "run"
    shutil.copytree(straight_run, run)
    _cut(RunDir(run).best_ckpt, keep)
    capsys.readouterr()
    assert main(["eval", str(run), "--beam", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "best.ckpt: not a readable checkpoint" in err and "Traceback" not in err
    with pytest.raises(CheckpointUnreadable):
        read_checkpoint(RunDir(run).best_ckpt)


@pytest.mark.parametrize("with_best", [True, False])
def test_a_cut_short_last_checkpoint_resumes_from_best_or_the_start(
    straight_run: Path, tmp_path: Path, capsys, with_best: bool
) -> None:
    run = tmp_path / "run"
    shutil.copytree(straight_run, run)
    rd = RunDir(run)
    best_step = checkpoint_step(rd.best_ckpt)
    _cut(rd.last_ckpt, 3000)
    if not with_best:
        rd.best_ckpt.unlink()
    capsys.readouterr()
    metrics = train(load_config(MINI, overrides=[*STRAIGHT, f"train.max_steps={STEPS + 2}"]), run)
    out = capsys.readouterr().out
    assert metrics["step"] == STEPS + 2
    assert len(list(rd.checkpoints.glob("last.ckpt.broken-*"))) == 1  # a copy kept
    assert checkpoint_step(rd.last_ckpt) == STEPS + 2  # the broken one replaced by the run's own
    said = f"resuming from best.ckpt (step {best_step})" if with_best else "training starts again from step 0"
    assert "not a readable checkpoint" in out and said in out
