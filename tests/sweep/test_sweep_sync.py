"""`ablate sync`: says so when there is nothing to upload, and fails clearly without a network."""

from __future__ import annotations

from pathlib import Path

from ablate.cli import main
from ablate.sweep.file.spec import load_sweep


def test_sync_with_nothing_to_upload(write_sweep, capsys):
    path = write_sweep()
    assert main(["sync", str(path)]) == 0
    assert "no offline W&B runs to sync" in capsys.readouterr().out


def test_sync_without_network_is_a_clear_error(write_sweep, capsys, monkeypatch):
    path = write_sweep()
    run = Path(load_sweep(path).trials[0].run_dir) / "wandb" / "offline-run-20260101_000000-abc"
    run.mkdir(parents=True)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1")  # nothing listens on 443 here
    assert main(["sync", str(path)]) == 2
    err = capsys.readouterr().err
    assert "1 offline run(s) to sync but 127.0.0.1 is unreachable" in err and "again where there is a network" in err
