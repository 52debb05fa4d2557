"""Where and with what a run was made (``provenance.json``): for ablate's own repository, the sweep
file's and each plugin's (every git repository the run's code came from): the SHA, the dirty flag and,
when dirty, the uncommitted diff as a patch file beside it (``provenance/<repo>.patch``; untracked files
are listed, not copied); every installed package with its version; host, devices, command line. What a
researcher needs to rerun a row a year later."""

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


SWEEP_DIR_ENV = "ABLATE_SWEEP_DIR"  # set by the sweep worker: the folder of the sweep file (its repository)


def _git(*args: str, root: Path | None = None) -> str | None:
    root = root or Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _code_folders() -> list[Path]:
    """Folders the run's code came from: ablate, the sweep file's folder, each plugin module's folder
    (a class in a registry whose module is not ablate's)."""
    from ablate.registry import all_registries

    folders = [Path(__file__).resolve().parents[2]]
    if os.environ.get(SWEEP_DIR_ENV):
        folders.append(Path(os.environ[SWEEP_DIR_ENV]))
    for registry in all_registries().values():
        for name in registry:
            module = sys.modules.get(getattr(registry.get(name), "__module__", ""))
            if module is not None and not module.__name__.startswith("ablate") and getattr(module, "__file__", None):
                folders.append(Path(module.__file__).resolve().parent)
    return folders


def repositories(run_dir: Path | None = None) -> list[dict[str, Any]]:
    """SHA, dirty flag, untracked files and (dirty, ``run_dir`` given) the patch of each git repository
    the run's code came from, once per repository."""
    out: dict[str, dict[str, Any]] = {}
    for folder in _code_folders():
        top = _git("rev-parse", "--show-toplevel", root=folder)
        if top is None or top in out:
            continue
        root = Path(top)
        status = _git("status", "--porcelain", root=root) or ""
        record: dict[str, Any] = {"path": top, "sha": _git("rev-parse", "HEAD", root=root), "dirty": bool(status)}
        record["untracked"] = [line[3:] for line in status.splitlines() if line.startswith("??")]
        diff = _git("diff", "HEAD", root=root) if status else None
        if diff and run_dir is not None:
            patch = Path(run_dir) / "provenance" / f"{root.name}-{len(out)}.patch"
            patch.parent.mkdir(parents=True, exist_ok=True)
            patch.write_text(diff + "\n", encoding="utf-8")
            record["patch"] = str(patch.relative_to(run_dir))
        out[top] = record
    return list(out.values())


def installed_packages() -> dict[str, str]:
    """Every installed distribution and its version (``pip freeze``'s content, from importlib.metadata)."""
    found = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found[name] = dist.version
    return dict(sorted(found.items(), key=lambda kv: kv[0].lower()))


def provenance(
    cfg: DictConfig, trainer: Any = None, resumed: bool = False, run_dir: Path | None = None
) -> dict[str, Any]:
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
        "repositories": repositories(run_dir),
        "packages": installed_packages(),
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
