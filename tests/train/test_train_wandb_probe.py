"""`ablate train` with a W&B API key and no network: one probe, then offline (auto) or one error line
(online asked for explicitly), instead of wandb.init stalling ~90 s and failing."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import ablate.train.run as run_module
from ablate.cli import main

MINI = str(Path(__file__).resolve().parents[2] / "experiments" / "mini.yaml")


@pytest.fixture
def no_wandb_server(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nothing listens on: the probe is refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("WANDB_MODE", raising=False)


def test_auto_mode_trains_offline_after_one_probe(no_wandb_server, monkeypatch, tmp_path, capsys) -> None:
    seen = {}

    def fake_train(cfg, output_dir=None, **kwargs):
        import os

        seen["mode"] = os.environ.get("WANDB_MODE")
        return {"run_dir": str(output_dir), "step": 0}

    monkeypatch.setattr(run_module, "train", fake_train)
    code = main(["train", MINI, "logging.wandb=auto", "--output", str(tmp_path / "r")])
    assert code == 0
    assert seen["mode"] == "offline"
    err = capsys.readouterr().err
    assert "unreachable" in err and "wandb sync" in err


def test_explicit_online_is_one_error_line_before_training(no_wandb_server, monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(run_module, "train", lambda *a, **k: pytest.fail("trained although W&B is unreachable"))
    code = main(["train", MINI, "logging.wandb=online", "--output", str(tmp_path / "r")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unreachable" in err[0] and "logging.wandb=offline" in err[0]
