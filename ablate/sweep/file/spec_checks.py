"""The checks of a sweep file's own top-level keys (name, store, seeds, wandb, heartbeat, cost, launcher). Pure.

Each raises one :class:`SweepError` line naming the file, the key and the fix. Used by
:func:`ablate.sweep.file.spec.read_sweep_file`; the rows are checked by :mod:`ablate.sweep.file.expand`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ablate.config import ConfigError, read_yaml
from ablate.config.schema import SEED_MAX
from ablate.errors import SweepError, check_known_keys

# Top-level keys of a sweep file, each with what it holds (used in "unknown key" hints and docs).
SWEEP_KEYS = {
    "name": "study name in the store (default: the file's stem)",
    "description": "free text",
    "experiment": "experiment file, relative to the sweep file",
    "overrides": "dotlist or mapping applied to every row",
    "seeds": "every row runs once per seed (train.seed); {start, max, until: decided}: more only while undecided",
    "store": "sqlite (file beside the sweep file) | journal:PATH | any SQLAlchemy URL",
    "runs": "parent directory of the run directories, relative to the sweep file (default: runs)",
    "launcher": "{name: local|slurm|ray, ...}",
    "wandb": "{project, entity, mode}",
    "imports": "user modules that register variants, imported before validation",
    "max_retries": "retries of a crashed trial within one `ablate sweep`",
    "heartbeat": "{interval_s, grace_s}: a RUNNING trial silent for grace_s is reaped",
    "cost": "{flops_per_second, mfu, step_overhead_s, memory_gb}: throughput and device memory assumed by --dry-run",
    "report": "{equivalence: {ppl: 0.02, bleu: 0.3}}: margins within which a row counts as the same as base",
    "rows": "the rows of the table (optional with search:, which then tunes the experiment as one row)",
}
# A policy's own top-level key (search:, a plugin's) is a block: ablate.sweep.file.blocks reads it.
WANDB_KEYS = ("project", "entity", "mode")
WANDB_MODES = ("auto", "online", "offline", "disabled")
HEARTBEAT_KEYS = ("interval_s", "grace_s")
COST_KEYS = ("flops_per_second", "mfu", "step_overhead_s", "memory_gb")

# ----------------------------------------------------------------------------------------------
# Small checks shared with the launchers
# ----------------------------------------------------------------------------------------------


def _mapping(where: str, data: Mapping[str, Any], key: str, valid: Sequence[str]) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise SweepError(f"{where}: {key} must be a mapping with keys {', '.join(valid)}")
    check_known_keys(f"{where}: {key}", value, valid)
    return dict(value)


# ----------------------------------------------------------------------------------------------
# The file's own keys
# ----------------------------------------------------------------------------------------------


def read_file(file: Path) -> dict[str, Any]:
    try:
        return read_yaml(file)
    except ConfigError as exc:
        import yaml

        try:
            top = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (yaml.YAMLError, OSError, UnicodeDecodeError):
            top = None
        if isinstance(top, list):
            raise SweepError(
                f"{file}: the top level of a sweep file must be a mapping (name:, experiment:, rows:); "
                "a list of rows goes under `rows:`"
            ) from None
        raise SweepError(str(exc)) from None


def check_seeds(where: str, seeds: Any) -> tuple[int, ...]:
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
    ):
        raise SweepError(f"{where}: seeds must be a non-empty list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise SweepError(f"{where}: seeds lists a seed twice: {seeds}")
    if out := [s for s in seeds if not 0 <= s <= SEED_MAX]:  # a trial would fail at start, then its retries
        raise SweepError(f"{where}: seeds: {out[0]} is out of range; seeds are 0..{SEED_MAX:,} (numpy and torch's)")
    return tuple(seeds)


def check_store(where: str, store: Any) -> str:
    """The store's syntax; whether an SQLAlchemy URL names a known database is checked by the store."""
    store = str(store)
    if store.startswith("journal:") and not store[len("journal:") :]:
        raise SweepError(f"{where}: store: journal: needs a path, e.g. journal:sweeps.journal")
    if store != "sqlite" and not store.startswith("journal:") and "://" not in store:
        raise SweepError(
            f"{where}: store {store!r}: use sqlite, journal:PATH or an SQLAlchemy URL like postgresql://..."
        )
    return store


def check_numbers(where: str, data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(wandb, heartbeat, cost) mappings, checked."""
    wandb = _mapping(where, data, "wandb", WANDB_KEYS)
    if wandb.get("mode", "auto") not in WANDB_MODES:
        raise SweepError(f"{where}: wandb.mode must be auto, online, offline or disabled, got {wandb['mode']!r}")
    heartbeat = {"interval_s": 10.0, "grace_s": 120.0, **_mapping(where, data, "heartbeat", HEARTBEAT_KEYS)}
    cost = _mapping(where, data, "cost", COST_KEYS)
    for key, value in {**heartbeat, **cost}.items():
        may_be_zero = key == "step_overhead_s"  # a step may have no fixed cost; a rate may not be 0
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or value < 0 or (value == 0 and not may_be_zero):
            kind = "a non-negative" if may_be_zero else "a positive"
            raise SweepError(f"{where}: {key} must be {kind} number, got {value!r}")
    if heartbeat["grace_s"] <= heartbeat["interval_s"]:
        raise SweepError(f"{where}: heartbeat.grace_s must exceed heartbeat.interval_s")
    return wandb, heartbeat, cost


def check_report(where: str, report: Any) -> dict[str, Any]:
    """``report: {equivalence: {ppl: relative margin, bleu: points}}``, checked (empty when absent)."""
    if report is None:
        return {}
    if not isinstance(report, Mapping):
        raise SweepError(f"{where}: report must be a mapping, e.g. {{equivalence: {{ppl: 0.02, bleu: 0.3}}}}")
    check_known_keys(f"{where}: report", report, ["equivalence"])
    margins = _mapping(f"{where}: report", report, "equivalence", ("ppl", "bleu"))
    for key, value in margins.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise SweepError(f"{where}: report.equivalence.{key} must be a positive number, got {value!r}")
    return {"equivalence": margins} if margins else {}


def check_launcher(where: str, launcher: Any) -> dict[str, Any]:
    if isinstance(launcher, str):
        launcher = {"name": launcher}
    if not isinstance(launcher, Mapping):
        raise SweepError(f"{where}: launcher must be a name or {{name: local|slurm|ray, ...}}, got {launcher!r}")
    return {**launcher, "name": str(launcher.get("name", "local"))}


def check_top(
    where: str, data: Mapping[str, Any], blocks: Sequence[str] = (), rows_optional: bool = False
) -> tuple[str, int, tuple[str, ...]]:
    """(name, max_retries, imports). ``blocks``: the keys of the policies' blocks (ablate.sweep.file.blocks);
    ``rows_optional``: a block of the file lets ``rows:`` be left out."""
    check_known_keys(where, data, [*SWEEP_KEYS, *(b for b in blocks if b not in SWEEP_KEYS)])
    for required in ("experiment",) if rows_optional else ("experiment", "rows"):
        if required not in data:
            raise SweepError(f"{where}: missing key {required!r} ({SWEEP_KEYS[required]})")
    for key in ("experiment", "runs"):  # paths: a NUL byte or a number would fail deep in the OS calls
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip() or "\x00" in value):
            raise SweepError(f"{where}: {key} must be a path (a non-empty string, no NUL byte), got {value!r}")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise SweepError(f"{where}: name must be a string, got {name!r} (quote it)")
    if name is not None and (not name or "/" in name or ":" in name):
        # ':' joins a search sweep's name to a row's in its row studies (<sweep>:<row>): a sweep named
        # with one could be taken for another sweep's row study, or the other way round.
        raise SweepError(f"{where}: name {name!r} must be a non-empty name without '/' or ':'")
    if name is not None and (name.startswith(".") or not any(c.isalnum() for c in name)):
        # it names the store's study and the runs folder: "." and ".." would be the runs folder itself
        # or its parent, and a hidden name hides the sweep's folder
        raise SweepError(f"{where}: name {name!r} must hold a letter or digit and not start with '.'")
    max_retries = data.get("max_retries", 2)
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise SweepError(f"{where}: max_retries must be an integer >= 0, got {max_retries!r}")
    return name or "", max_retries, check_imports(where, data.get("imports"))


def check_imports(where: str, imports: Any) -> tuple[str, ...]:
    imports = imports or []
    if not isinstance(imports, list) or not all(isinstance(m, str) for m in imports):
        raise SweepError(f"{where}: imports must be a list of module names, got {imports!r}")
    return tuple(imports)


SPLIT_CHOSEN = ("data.max_tokens", "train.accumulate_grad_batches")  # ablate's choice under train.global_tokens


def check_no_split_keys(where: str, given: Sequence[str], config: Mapping[str, Any]) -> None:
    """A row (or the command line) that sets a key of the batch split while ``train.global_tokens`` states
    the batch: ablate chooses those keys per trial from its devices, so the value given would be dropped
    without a word and the table would show a change the trial never ran."""
    tokens = (config.get("train") or {}).get("global_tokens")
    if tokens is None:
        return
    for item in given:
        key = str(item).split("=", 1)[0].strip()
        if key in SPLIT_CHOSEN:
            raise SweepError(
                f"{where}: {key} is set, but with train.global_tokens={tokens} ablate chooses it (the batch split "
                f"over each trial's devices); remove {key}, or drop train.global_tokens to set the batch yourself"
            )
