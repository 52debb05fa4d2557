"""A run directory's identity: its name, config hash, W&B run id, provenance, and device defaults."""

from __future__ import annotations

import hashlib
import json
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

from ablate.config import read_yaml, to_dict

# Sections and fields that may change when a run is resumed (how long, on what, how it is logged);
# everything else (model, data, recipe, seed) must match the run directory's config.yaml.
_RESUME_MAY_CHANGE = {"trainer", "eval", "logging"}
_TRAIN_MAY_CHANGE = {"max_steps", "max_epochs", "max_time_minutes", "val_every_steps", "log_every_steps",
                     "checkpoint_every_steps"}

PACKAGES = ("ablate", "torch", "lightning", "numpy", "sentencepiece", "sacrebleu", "wandb", "omegaconf", "optuna")


def _identity(cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    data = to_dict(cfg) if isinstance(cfg, DictConfig) else dict(cfg)
    return {k: v for k, v in data.items() if k != "logging"}


def config_hash(cfg: DictConfig | dict[str, Any]) -> str:
    """sha256 of the resolved config without its logging section (names and W&B settings are not identity)."""
    return hashlib.sha256(json.dumps(_identity(cfg), sort_keys=True, default=str).encode()).hexdigest()


def make_run_dir(cfg: DictConfig) -> Path:
    """``<logging.output_dir>/<name or run>-<YYYYmmdd-HHMMSS>-<hash8>``, created; a suffix avoids collisions."""
    parent = Path(cfg.logging.output_dir)
    parent.mkdir(parents=True, exist_ok=True)
    stem = f"{cfg.logging.name or 'run'}-{time.strftime('%Y%m%d-%H%M%S')}-{config_hash(cfg)[:8]}"
    stem = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in stem)
    for i in range(1000):
        path = parent / (stem if i == 0 else f"{stem}-{i}")
        try:
            path.mkdir()  # atomic: two processes never get the same directory
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: could not create a new run directory named {stem}-*")


def check_resumable(run_dir: Path, cfg: DictConfig, error: type[Exception]) -> None:
    """Refuse to resume a run directory whose model / data / recipe differ from ``cfg``."""
    saved_path = run_dir / "config.yaml"
    if not saved_path.is_file():
        return
    saved, new = _resume_identity(read_yaml(saved_path)), _resume_identity(cfg)
    diffs = []
    for section in sorted(set(saved) | set(new)):
        a, b = saved.get(section) or {}, new.get(section) or {}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                diffs.append(f"{section}.{key}: {a.get(key)!r} -> {b.get(key)!r}")
    if diffs:
        raise error(f"{run_dir} holds a run with a different config ({'; '.join(diffs[:3])}); "
                    f"choose another --output or delete its checkpoints/ to start over")


def wandb_mode(setting: str) -> str:
    """``auto`` -> online only with WANDB_API_KEY (else offline; never wait on a network that may be absent)."""
    if setting != "auto":
        return setting
    env = os.environ.get("WANDB_MODE")
    if env in ("online", "offline", "disabled"):
        return env
    return "online" if os.environ.get("WANDB_API_KEY") else "offline"


def _resume_identity(cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    """The part of a config that must not change when a run resumes (model, data, recipe, seed)."""
    data = _identity(cfg)
    out = {k: v for k, v in data.items() if k not in _RESUME_MAY_CHANGE}
    out["train"] = {k: v for k, v in (out.get("train") or {}).items() if k not in _TRAIN_MAY_CHANGE}
    return out


def wandb_run_id(cfg: DictConfig, run_dir: Path) -> str:
    """Deterministic W&B id from the run's identity (what may not change on resume + the run directory's
    name): a resumed run appends to its W&B run; one config run in two directories gives two runs."""
    key = json.dumps(_resume_identity(cfg), sort_keys=True, default=str)
    return hashlib.sha256(f"{key}:{run_dir.resolve().name}".encode()).hexdigest()[:16]


def resolve_precision(precision: str | None, accelerator: str) -> str:
    """None -> bf16-mixed on a GPU, 32-true on CPU (bf16 matmuls run ~400x slower on this kind of CPU)."""
    if precision is not None:
        return precision
    import torch

    gpu = accelerator in ("gpu", "cuda") or (accelerator == "auto" and torch.cuda.is_available())
    return "bf16-mixed" if gpu else "32-true"


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
    devices: dict[str, Any] = {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                               "cuda": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]}
    if trainer is not None:
        devices.update({"accelerator": type(trainer.accelerator).__name__, "world_size": trainer.world_size,
                        "num_nodes": trainer.num_nodes, "precision": str(trainer.precision),
                        "strategy": type(trainer.strategy).__name__})
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
