"""Where and with what a run was made (``provenance.json``): git SHA and dirty flag, package versions,
host, devices, command line."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from ablate.train.identity import config_hash

PACKAGES = ("ablate", "torch", "lightning", "numpy", "sentencepiece", "sacrebleu", "wandb", "omegaconf", "optuna")


def _git(*args: str) -> str | None:
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def provenance(cfg: DictConfig, trainer: Any = None, resumed: bool = False) -> dict[str, Any]:
    """Where and with what the run was made: git SHA + dirty flag, versions, host, devices, command."""
    import torch

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    sha = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain") if sha else None
    devices: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
    }
    if trainer is not None:
        devices.update(
            {
                "accelerator": type(trainer.accelerator).__name__,
                "world_size": trainer.world_size,
                "num_nodes": trainer.num_nodes,
                "precision": str(trainer.precision),
                "strategy": type(trainer.strategy).__name__,
            }
        )
    return {
        "git_sha": sha,
        "git_dirty": bool(status) if status is not None else None,
        "versions": versions,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "devices": devices,
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "command": sys.argv,
        "config_hash": config_hash(cfg),
        "resumed": resumed,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
