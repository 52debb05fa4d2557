"""Fixtures of the sweep tests: a tiny experiment, sweep files in tmp dirs, a fake trainer.

Workers are real subprocesses (``python -m ablate.sweep.worker``); ``ABLATE_TRIAL_FN`` points them
at ``fake_trainer.train`` (this folder on PYTHONPATH), which follows the train() contract in ms.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from sweep_harness import HERE, TINY_EXPERIMENT, fake_env


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
