"""A run's identity: its directory name, config hash, W&B run id, and what may change when it resumes."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from ablate.atomic import folder_problem
from ablate.config import read_yaml, to_dict
from ablate.config.schema import hash_view
from ablate.rundir import RunDir, RunDirError, safe_name

# Sections and fields that may change when a run is resumed (how long, on what, how it is logged);
# everything else (model, data, recipe, seed) must match the run directory's config.yaml.
_RESUME_MAY_CHANGE = {"trainer", "eval", "logging"}
_TRAIN_MAY_CHANGE = {
    "max_steps",
    "epochs",
    "target_tokens",
    "max_epochs",
    "max_time_minutes",
    "val_every_steps",
    "log_every_steps",
    "checkpoint_every_steps",
}


def _identity(cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    data = hash_view(to_dict(cfg) if isinstance(cfg, DictConfig) else dict(cfg))
    return {k: v for k, v in data.items() if k != "logging"}


def config_hash(cfg: DictConfig | dict[str, Any]) -> str:
    """sha256 of the resolved config without its logging section (names and W&B settings are not identity)."""
    return hashlib.sha256(json.dumps(_identity(cfg), sort_keys=True, default=str).encode()).hexdigest()


def overrides_hint(overrides: Sequence[str], limit: int = 40) -> str:
    """A short, path-safe hint of command-line overrides for a run folder's name: ``model.n_heads=4
    train.max_steps=100`` -> ``n_heads4-max_steps100`` (last key part + value; whole items up to ``limit``)."""
    parts: list[str] = []
    for item in overrides:
        key, _, value = item.partition("=")
        if key.startswith("logging."):  # where and how it is logged: no hint of what was trained
            continue
        part = safe_name(key.split(".")[-1] + value, keep="_.")
        if part and len("-".join([*parts, part])) <= limit:
            parts.append(part)
    return "-".join(parts)


def make_run_dir(cfg: DictConfig, hint: str = "") -> Path:
    """``<logging.output_dir>/[<name>-]<YYYYmmdd-HHMMSS>[-<hint>]-<hash8>``, created; a suffix avoids
    collisions. ``hint``: e.g. :func:`overrides_hint` of the command line."""
    parent = Path(cfg.logging.output_dir)
    if why := folder_problem(parent):  # the same on every try
        raise RunDirError(f"logging.output_dir={parent}: cannot create it ({why}); set it to a writable folder")
    name = [cfg.logging.name] if cfg.logging.name else []
    stem = "-".join([*name, time.strftime("%Y%m%d-%H%M%S"), *([hint] if hint else []), config_hash(cfg)[:8]])
    stem = safe_name(stem)
    for i in range(1000):
        path = parent / (stem if i == 0 else f"{stem}-{i}")
        try:
            path.mkdir()  # atomic: two processes never get the same directory
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: could not create a new run directory named {stem}-*")


def check_resumable(run_dir: Path, cfg: DictConfig) -> None:
    """Refuse (RunDirError) to resume a run directory whose model / data / recipe differ from ``cfg``."""
    saved_path = RunDir(run_dir).config
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
        raise RunDirError(
            f"{run_dir} holds a run with a different config ({'; '.join(diffs[:3])}); "
            f"choose another --output or delete its checkpoints/ to start over"
        )


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
