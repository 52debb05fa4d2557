"""The one place that decides whether a trial runs on GPUs or on the CPU.

The dry-run cost model, the local launcher's slot assignment and the trainer's precision all ask
:func:`device_kind`, so they cannot disagree. ``auto`` means "a CUDA device if one is visible";
torch is imported only for ``auto`` (and cached), so explicit settings stay import-free.
"""

from __future__ import annotations

import functools
from typing import Literal

DeviceKind = Literal["cpu", "gpu"]

GPU_ACCELERATORS = ("gpu", "cuda")


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
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
