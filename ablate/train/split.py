"""A trial's batch split, settled on the machine it runs on (``train.global_tokens``; the rule and the
memory model are :mod:`ablate.config.batch_split`'s).

A new run chooses for its devices' memory; a resumed run keeps the split its run directory started
with, because its sampler's saved position counts batches of that size (a requeued job that lands
on another kind of GPU goes on with the same batches).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ablate.config import read_yaml
from ablate.config.batch_split import split_of
from ablate.devices import device_kind, devices_of
from ablate.rundir import RunDir


def device_memory_bytes(accelerator: str | None) -> float | None:
    """The smallest visible CUDA device's memory on a GPU trial; None on the CPU, where one batch a device
    is planned (the dry run plans the same: host memory is shared with everything else on the host)."""
    if device_kind(accelerator) != "gpu":
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    return float(min(torch.cuda.get_device_properties(i).total_memory for i in range(torch.cuda.device_count())))


def settle_split(cfg: DictConfig, output_dir: str | Path | None, resume: bool, say: Callable[[str], None]) -> None:
    """Set ``data.max_tokens`` and ``train.accumulate_grad_batches`` of a config that states
    ``train.global_tokens`` (nothing to do otherwise), and ``say`` the split in one line."""
    if cfg.train.get("global_tokens") is None:
        return
    kept = _resumed_split(cfg, output_dir) if resume else None
    if kept is not None:
        max_tokens, accumulate, devices = kept
        now = devices_of(cfg.trainer, count_visible=True)
        if now != devices:  # other devices than it started on: the same batches, accumulated to the same step
            accumulate = max(1, math.ceil(int(cfg.train.global_tokens) / (now * max_tokens)))
        cfg.data.max_tokens, cfg.train.accumulate_grad_batches = max_tokens, accumulate
        moved = f"; {devices} -> {now} device(s), so {accumulate} accumulated" if now != devices else ""
        say(f"batch split: kept from the run being resumed ({max_tokens:,} tokens a side a batch{moved})")
        return
    plain = OmegaConf.to_container(cfg, resolve=True)
    devices = devices_of(cfg.trainer, count_visible=True)
    split = split_of(plain, devices, device_memory_bytes(cfg.trainer.get("accelerator")))
    cfg.data.max_tokens, cfg.train.accumulate_grad_batches = split.max_tokens, split.accumulate
    say(split.line(int(cfg.train.global_tokens)))


def _resumed_split(cfg: DictConfig, output_dir: str | Path | None) -> tuple[int, int, int] | None:
    """(max_tokens, accumulate, devices) of the run directory this run resumes, when it holds a checkpoint
    of the same global batch."""
    if output_dir is None:
        return None
    rd = RunDir(output_dir)
    if not (rd.last_ckpt.is_file() and rd.config.is_file()):
        return None
    saved = read_yaml(rd.config)
    train, data = saved.get("train") or {}, saved.get("data") or {}
    if train.get("global_tokens") != cfg.train.global_tokens or "max_tokens" not in data:
        return None
    devices = devices_of(saved.get("trainer") or {}, count_visible=True)
    return int(data["max_tokens"]), int(train.get("accumulate_grad_batches", 1)), devices
