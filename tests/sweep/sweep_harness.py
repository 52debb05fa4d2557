"""Helpers of the sweep tests (a module with a unique name, so tests import it whatever conftest
pytest saw first): the fake trainer's environment, its call log, and the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

TINY_EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 64},
    "data": {"corpus": "builtin", "vocab_size": 64, "max_len": 32, "max_tokens": 256},
    "train": {"max_steps": 6, "warmup_steps": 2, "val_every_steps": 3, "log_every_steps": 1},
    "trainer": {"accelerator": "cpu"},
    "logging": {"wandb": "disabled", "progress_bar": False},
}


def fake_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of a controller that runs the fake trainer, quiet and offline."""
    env = dict(os.environ)
    env["ABLATE_TRIAL_FN"] = "fake_trainer:train"
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    env.update({"WANDB_MODE": "disabled", "WANDB_SILENT": "true"})
    env.update(extra or {})
    return env


def calls(run_dir: str | Path) -> list[dict[str, Any]]:
    """The fake trainer's record of its executions in one run directory."""
    p = Path(run_dir) / "calls.log"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def ablate_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ablate", *args]
