"""The one place that decides whether a trial runs on GPUs or on the CPU.

The dry-run cost model, the local launcher's slot assignment and the trainer's precision all ask
:func:`device_kind`, so they cannot disagree. ``auto`` means "a CUDA device if one is visible";
torch is imported only for ``auto`` (and cached), so explicit settings stay import-free.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from typing import Any, Literal

DeviceKind = Literal["cpu", "gpu"]

GPU_ACCELERATORS = ("gpu", "cuda")


# Where a GPU driver shows itself on Linux: NVIDIA's, WSL2's (/dev/dxg), Jetson's (/dev/nvmap), and AMD's
# for ROCm builds of torch.
DRIVER_PATHS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/nvmap", "/dev/kfd")


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """Whether torch sees a CUDA device. Without any GPU driver on Linux or macOS it cannot, and torch's
    import (2-3 s, most of a dry run of ``accelerator: auto`` on a laptop or a login node) is skipped."""
    no_driver = (sys.platform.startswith("linux") or sys.platform == "darwin") and not any(
        map(os.path.exists, DRIVER_PATHS)
    )
    if no_driver and sys.modules.get("torch") is None:  # a process that has torch already asks it
        return False
    import torch

    return bool(torch.cuda.is_available())


def device_kind(accelerator: str | None) -> DeviceKind:
    """``gpu`` for trainer.accelerator gpu/cuda, or auto with a visible CUDA device; else ``cpu``."""
    accel = str(accelerator or "auto").lower()
    if accel in GPU_ACCELERATORS:
        return "gpu"
    if accel == "auto":
        return "gpu" if cuda_available() else "cpu"
    return "cpu"


def devices_of(trainer: Mapping[str, Any], count_visible: bool = False) -> int:
    """Devices one trial trains on: trainer.devices (a count or a list) x trainer.num_nodes.

    ``devices: auto`` (or -1) counts as 1 for the dry run's estimate; ``count_visible`` counts the
    visible CUDA devices instead, as Lightning will (a training process resolving its budget)."""
    d = trainer.get("devices", 1)
    if isinstance(d, list) or (hasattr(d, "__len__") and not isinstance(d, str)):
        n = len(d)
    elif isinstance(d, int) and d > 0 or str(d).isdigit():
        n = int(d)
    elif count_visible and device_kind(trainer.get("accelerator")) == "gpu":
        import torch

        n = max(1, torch.cuda.device_count())
    else:
        n = 1
    return n * int(trainer.get("num_nodes", 1) or 1)
