"""A sweep with a W&B key but no network: one probe, one warning line, trials and the summary run offline;
a rerun of the finished sweep logs no second summary run. Multi-process (local workers): integration."""

from __future__ import annotations

import os
import time

import pytest

from ablate.cli import main

pytestmark = pytest.mark.integration


def test_no_network_falls_back_to_offline_once(write_sweep, fake_trainer, capsys, monkeypatch, tmp_path):
    for var, sub in (("WANDB_DIR", "wd"), ("WANDB_CACHE_DIR", "wc"), ("WANDB_CONFIG_DIR", "wcfg")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_SILENT", raising=False)
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    path = write_sweep(wandb={}, overrides=["logging.wandb=auto"])
    t0 = time.monotonic()
    assert main(["sweep", str(path)]) == 0
    assert time.monotonic() - t0 < 60
    out, err = capsys.readouterr()
    warnings = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "W&B server 127.0.0.1:9 unreachable" in warnings[0], err
    assert "Traceback" not in err and "wandb:" not in out + err
    assert os.environ["WANDB_MODE"] == "offline"  # what the workers inherited
    assert f"(offline; upload it and the trials' runs with `ablate sync {path}`)" in out
    assert main(["sweep", str(path)]) == 0
    out = capsys.readouterr().out
    assert "W&B summary run: results unchanged since the last one" in out
