"""ablate/devices.py: where no GPU driver is present, `auto` is the CPU without importing torch (2-3 s of
every dry run of an `accelerator: auto` experiment on a laptop or a login node)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ablate import devices


def test_no_driver_means_no_cuda_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    devices.cuda_available.cache_clear()
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(os.path, "exists", lambda path: False)
    monkeypatch.setitem(sys.modules, "torch", None)  # importing torch would raise
    try:
        assert devices.cuda_available() is False and devices.device_kind("auto") == "cpu"
    finally:
        devices.cuda_available.cache_clear()


def test_a_driver_means_torch_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    devices.cuda_available.cache_clear()
    monkeypatch.setattr(os.path, "exists", lambda path: path == "/dev/nvidiactl")
    monkeypatch.setitem(sys.modules, "torch", None)
    try:
        with pytest.raises(ImportError):
            devices.cuda_available()
    finally:
        devices.cuda_available.cache_clear()


@pytest.mark.skipif(any(map(os.path.exists, devices.DRIVER_PATHS)), reason="this machine has a GPU driver")
def test_auto_on_this_driverless_machine_imports_no_torch() -> None:
    code = "import sys; from ablate.devices import device_kind; print(device_kind('auto'), 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["cpu", "False"]
