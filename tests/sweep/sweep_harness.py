"""Helpers of the sweep tests (a module with a unique name, so tests import it whatever conftest
pytest saw first): the fake trainer's injection and environment, its call log, and the CLI as a
subprocess."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

TINY_EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 64, "max_len": 32, "max_tokens": 256},
    "train": {"max_steps": 6, "warmup_steps": 2, "val_every_steps": 3, "log_every_steps": 1},
    "trainer": {"accelerator": "cpu"},
    "logging": {"wandb": "disabled", "progress_bar": False},
}

# What a local slot runs in the tests: ablate.sweep.launch.worker.main with the fake trainer passed in.
FAKE_WORKER = (sys.executable, str(HERE / "fake_worker.py"))
FAKE_TRIAL_FN = "fake_trainer:train"  # what a SLURM array task trains with (this folder on PYTHONPATH)


def use_fake_trainer(set_attr: Callable[[Any, str, Any], None] = setattr) -> None:
    """Make the launchers of this process train with the fake trainer (their own settings)."""
    from ablate.sweep.launch.local import LocalLauncher
    from ablate.sweep.launch.slurm import SlurmLauncher

    set_attr(LocalLauncher, "worker_command", FAKE_WORKER)
    set_attr(SlurmLauncher, "trial_fn", FAKE_TRIAL_FN)


def fake_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of a controller subprocess: quiet, offline, this folder importable (SLURM jobs)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    env.update({"WANDB_MODE": "disabled", "WANDB_SILENT": "true"})
    env.update(extra or {})
    return env


def calls(run_dir: str | Path) -> list[dict[str, Any]]:
    """The fake trainer's record of its executions in one run directory."""
    p = Path(run_dir) / "calls.log"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def ablate_cmd(*args: str) -> list[str]:
    """``ablate ARGS`` as a subprocess whose launchers run the fake trainer."""
    return [sys.executable, str(HERE / "fake_controller.py"), *args]
