"""Fixtures of the sweep tests: a tiny experiment, sweep files in tmp dirs, a fake trainer.

Workers are real subprocesses (``python -m ablate.sweep.worker``); ``ABLATE_TRIAL_FN`` points them
at ``fake_trainer.train`` (this folder on PYTHONPATH), which follows the train() contract in ms.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

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


@pytest.fixture
def fake_trainer(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process controllers (commands.sweep) start workers that use the fake trainer."""
    for key, value in fake_env().items():
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(HERE))


@pytest.fixture
def write_sweep(tmp_path: Path) -> Callable[..., Path]:
    """write_sweep(rows=[...], **top_level_keys) -> path of a sweep file beside a tiny experiment."""
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(TINY_EXPERIMENT))

    def write(rows: list[dict[str, Any]] | None = None, filename: str = "sweep.yaml", **keys: Any) -> Path:
        data: dict[str, Any] = {
            "name": "t",
            "experiment": "exp.yaml",
            "seeds": [1],
            "launcher": {"name": "local", "slots": 2, "poll_s": 0.2},
            "heartbeat": {"interval_s": 1, "grace_s": 6},
            "wandb": {"mode": "disabled"},
            "max_retries": 2,
        }
        data.update(keys)
        data["rows"] = rows if rows is not None else [{"name": "base", "group": "base", "paper": "base"}]
        path = tmp_path / filename
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write


def calls(run_dir: str | Path) -> list[dict[str, Any]]:
    """The fake trainer's record of its executions in one run directory."""
    p = Path(run_dir) / "calls.log"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def ablate_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ablate", *args]
