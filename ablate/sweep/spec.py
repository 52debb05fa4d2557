"""Sweep files: YAML -> validated rows -> trials (fully resolved configs with a stable id). Pure.

A sweep file names an experiment and the rows of an ablation table (Vaswani et al. 2017, Table 3).
Every row runs once per seed; ``grid:`` expands a row to the product of value lists and ``zip:`` to
paired values. Nothing here imports user modules, edits ``sys.path``, looks at launchers, touches the
store or launches anything: :func:`read_sweep_file` checks the file's own keys and :func:`expand`
turns its rows into trials, or either raises one :class:`SweepError` naming file, row and key.
Variants registered by a sweep's ``imports:`` must be imported before :func:`expand` (see
:mod:`ablate.sweep.loader`, which also checks ``launcher:`` against the launcher registry).

The trial id is a hash of the resolved config minus what cannot change the result (logging, paths,
data-loader workers), so the same trial has the same id whatever the row order or the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ablate.config import ConfigError, load_config, read_yaml, to_dict
from ablate.config_schema import hash_view
from ablate.sweep.errors import SweepError
from ablate.sweep.expand import as_layer, check_keys, check_row, dotlist, expand_row, merge

# Top-level keys of a sweep file, each with what it holds (used in "unknown key" hints and docs).
SWEEP_KEYS = {
    "name": "study name in the store (default: the file's stem)",
    "description": "free text",
    "experiment": "experiment file, relative to the sweep file",
    "overrides": "dotlist or mapping applied to every row",
    "seeds": "every row runs once per seed (train.seed)",
    "store": "sqlite (file beside the sweep file) | journal:PATH | any SQLAlchemy URL",
    "runs": "parent directory of the run directories, relative to the sweep file (default: runs)",
    "launcher": "{name: local|slurm, ...}",
    "wandb": "{project, entity, mode}",
    "imports": "user modules that register variants, imported before validation",
    "max_retries": "retries of a crashed trial within one `ablate sweep`",
    "heartbeat": "{interval_s, grace_s}: a RUNNING trial silent for grace_s is reaped",
    "cost": "{flops_per_second, mfu}: throughput assumption of --dry-run",
    "rows": "the rows of the table",
}
WANDB_KEYS = ("project", "entity", "mode")
WANDB_MODES = ("auto", "online", "offline", "disabled")
HEARTBEAT_KEYS = ("interval_s", "grace_s")
COST_KEYS = ("flops_per_second", "mfu")

# Parts of a resolved config that cannot change a trial's result (and so stay out of its id).
_ID_EXCLUDED = ("logging", "data.cache_dir", "data.num_workers", "data.root")


@dataclass(frozen=True)
class Trial:
    """One training run: a row at one seed, with its resolved config."""

    trial_id: str  # 16 hex digits of the config hash
    row: str
    group: str
    paper: str | None
    seed: int
    order: int  # position in the sweep file (display order)
    overrides: tuple[str, ...]  # what this row changes, as dotlist items (for tables)
    config: dict[str, Any]  # fully resolved (to_dict), logging filled in for the sweep
    run_dir: str  # absolute, deterministic: <runs>/<sweep>/<row>-s<seed>-<id8>
    resources: dict[str, Any] = field(default_factory=dict)  # per-row launcher resources (SLURM)


@dataclass(frozen=True)
class SweepFile:
    """A sweep file's own settings, checked, with its rows still as written (nothing expanded)."""

    path: Path
    name: str
    experiment: Path
    store: str
    launcher: dict[str, Any]  # {name, ...options}; the options are checked by the launcher registry
    wandb: dict[str, Any]
    imports: tuple[str, ...]
    max_retries: int
    heartbeat: dict[str, float]
    cost: dict[str, float]
    runs_root: Path
    seeds: tuple[int, ...]
    layer: dict[str, Any]  # the file's `overrides:` as a nested mapping
    rows: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class Sweep:
    """A validated sweep file and its trials, in file order."""

    path: Path
    name: str
    experiment: Path
    store: str
    launcher: dict[str, Any]
    wandb: dict[str, Any]
    imports: tuple[str, ...]
    max_retries: int
    heartbeat: dict[str, float]
    cost: dict[str, float]
    runs_root: Path
    trials: tuple[Trial, ...]
    overrides: tuple[str, ...] = ()  # command-line overrides applied to every trial (recorded in the store)

    @property
    def rows(self) -> list[str]:
        return list(dict.fromkeys(t.row for t in self.trials))


# ----------------------------------------------------------------------------------------------
# Locating the file
# ----------------------------------------------------------------------------------------------


def project_sweeps_dir() -> Path:
    """The project's ``sweeps/`` folder: beside the package (editable install or a source tree)."""
    import ablate

    return Path(ablate.__file__).resolve().parent.parent / "sweeps"


def resolve_sweep_path(name: str | Path) -> Path:
    """A path as given, else a bare name looked up in the working directory, then in ``sweeps/``."""
    given = Path(name)
    candidates = [given]
    if given.suffix not in (".yaml", ".yml"):
        candidates.append(given.with_name(given.name + ".yaml"))
    if len(given.parts) == 1:  # a bare name: also the project's sweeps/ folder
        candidates += [project_sweeps_dir() / c.name for c in list(candidates)]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    where = ", ".join(str(c) for c in candidates)
    raise SweepError(f"{name}: no such sweep file (looked at {where}); give a path to a sweep YAML")


# ----------------------------------------------------------------------------------------------
# Small checks shared with the launchers
# ----------------------------------------------------------------------------------------------


def _mapping(where: str, data: Mapping[str, Any], key: str, valid: Sequence[str]) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise SweepError(f"{where}: {key} must be a mapping with keys {', '.join(valid)}")
    check_keys(f"{where}: {key}", value, valid)
    return dict(value)


def trial_id(config: Mapping[str, Any]) -> str:
    """16 hex digits of SHA-256 over the parts of a resolved config that change the result."""
    cfg = hash_view(json.loads(json.dumps(config)))  # a deep copy of plain data, ids kept across renames
    for key in _ID_EXCLUDED:
        node, *rest = key.split(".")
        if rest:
            cfg.get(node, {}).pop(rest[0], None)
        else:
            cfg.pop(node, None)
    blob = json.dumps(cfg, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _safe(name: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in name)
    return keep.strip("._") or "row"


# ----------------------------------------------------------------------------------------------
# The file's own keys
# ----------------------------------------------------------------------------------------------


def _read(file: Path) -> dict[str, Any]:
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


def _check_seeds(where: str, seeds: Any) -> tuple[int, ...]:
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
    ):
        raise SweepError(f"{where}: seeds must be a non-empty list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise SweepError(f"{where}: seeds lists a seed twice: {seeds}")
    return tuple(seeds)


def _check_store(where: str, store: Any) -> str:
    """The store's syntax; whether an SQLAlchemy URL names a known database is checked by the store."""
    store = str(store)
    if store.startswith("journal:") and not store[len("journal:") :]:
        raise SweepError(f"{where}: store: journal: needs a path, e.g. journal:sweeps.journal")
    if store != "sqlite" and not store.startswith("journal:") and "://" not in store:
        raise SweepError(
            f"{where}: store {store!r}: use sqlite, journal:PATH or an SQLAlchemy URL like postgresql://..."
        )
    return store


def _check_numbers(where: str, data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(wandb, heartbeat, cost) mappings, checked."""
    wandb = _mapping(where, data, "wandb", WANDB_KEYS)
    if wandb.get("mode", "auto") not in WANDB_MODES:
        raise SweepError(f"{where}: wandb.mode must be auto, online, offline or disabled, got {wandb['mode']!r}")
    heartbeat = {"interval_s": 10.0, "grace_s": 120.0, **_mapping(where, data, "heartbeat", HEARTBEAT_KEYS)}
    cost = _mapping(where, data, "cost", COST_KEYS)
    for key, value in {**heartbeat, **cost}.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise SweepError(f"{where}: {key} must be a positive number, got {value!r}")
    if heartbeat["grace_s"] <= heartbeat["interval_s"]:
        raise SweepError(f"{where}: heartbeat.grace_s must exceed heartbeat.interval_s")
    return wandb, heartbeat, cost


def _check_launcher(where: str, launcher: Any) -> dict[str, Any]:
    if isinstance(launcher, str):
        launcher = {"name": launcher}
    if not isinstance(launcher, Mapping):
        raise SweepError(f"{where}: launcher must be a name or {{name: local|slurm, ...}}, got {launcher!r}")
    return {**launcher, "name": str(launcher.get("name", "local"))}


def _check_top(where: str, data: Mapping[str, Any]) -> tuple[str, int, tuple[str, ...]]:
    """(name, max_retries, imports)."""
    check_keys(where, data, list(SWEEP_KEYS))
    for required in ("experiment", "rows"):
        if required not in data:
            raise SweepError(f"{where}: missing key {required!r} ({SWEEP_KEYS[required]})")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise SweepError(f"{where}: name must be a string, got {name!r} (quote it)")
    if name is not None and (not name or "/" in name):
        raise SweepError(f"{where}: name {name!r} must be a non-empty name without '/'")
    max_retries = data.get("max_retries", 2)
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise SweepError(f"{where}: max_retries must be an integer >= 0, got {max_retries!r}")
    imports = data.get("imports") or []
    if not isinstance(imports, list) or not all(isinstance(m, str) for m in imports):
        raise SweepError(f"{where}: imports must be a list of module names, got {imports!r}")
    return name or "", max_retries, tuple(imports)


def read_sweep_file(path: str | Path) -> SweepFile:
    """Parse a sweep file and check its own keys (rows are checked by :func:`expand`)."""
    file = resolve_sweep_path(path)
    data = _read(file)
    where = str(file)
    name, max_retries, imports = _check_top(where, data)
    experiment = (file.parent / str(data["experiment"])).resolve()
    if not experiment.is_file():
        raise SweepError(f"{where}: experiment: no such file {experiment} (paths are relative to the sweep file)")
    wandb, heartbeat, cost = _check_numbers(where, data)
    rows = data["rows"]
    if not isinstance(rows, list) or not rows:
        raise SweepError(f"{where}: rows must be a non-empty list of {{name, group, overrides}}")
    return SweepFile(
        path=file,
        name=name or file.stem,
        experiment=experiment,
        store=_check_store(where, data.get("store", "sqlite")),
        launcher=_check_launcher(where, data.get("launcher", {"name": "local"})),
        wandb=wandb,
        imports=imports,
        max_retries=max_retries,
        heartbeat=heartbeat,
        cost=cost,
        runs_root=(file.parent / str(data.get("runs", "runs"))).resolve(),
        seeds=_check_seeds(where, data.get("seeds", [1])),
        layer=as_layer(f"{where}: overrides", data.get("overrides")),
        rows=tuple(rows),
    )


# ----------------------------------------------------------------------------------------------
# Rows -> trials
# ----------------------------------------------------------------------------------------------


def _make_trial(sf: SweepFile, row: Mapping[str, Any], label: str, paper: str | None, layer: dict[str, Any],
                cli: Sequence[str], seed: int, order: int) -> Trial:  # fmt: skip
    group = str(row.get("group", ""))
    layers: list[tuple[str, Any]] = []
    if sf.layer:
        layers.append((f"{sf.path}: overrides", sf.layer))
    if layer:
        layers.append((f"{sf.path}: row {label!r}", layer))
    if cli:
        layers.append(("command line", list(cli)))
    layers.append((f"{sf.path}: seeds", {"train": {"seed": seed}}))
    logging: dict[str, Any] = {"group": sf.name, "name": label, "tags": [t for t in (group,) if t]}
    for key, target in (("project", "project"), ("entity", "entity"), ("mode", "wandb")):
        if sf.wandb.get(key):
            logging[target] = sf.wandb[key]
    layers.append((f"{sf.path}: wandb", {"logging": logging}))
    try:
        config = to_dict(load_config(sf.experiment, layers=layers))
    except ConfigError as exc:
        raise SweepError(str(exc)) from None
    tid = trial_id(config)
    run_dir = sf.runs_root / sf.name / f"{_safe(label)}-s{seed}-{tid[:8]}"
    config["logging"]["output_dir"] = str(run_dir.parent)
    return Trial(
        trial_id=tid,
        row=label,
        group=group,
        paper=None if paper is None else str(paper),
        seed=seed,
        order=order,
        overrides=tuple(dotlist(layer)),
        config=config,
        run_dir=str(run_dir),
        resources=dict(row.get("resources") or {}),
    )


def expand(sf: SweepFile, overrides: Sequence[str] = ()) -> Sweep:
    """Every trial of a checked sweep file; ``overrides`` (dotlist) apply to every trial."""
    where = str(sf.path)
    trials: list[Trial] = []
    seen_rows: dict[str, int] = {}
    seen_ids: dict[str, str] = {}
    for index, row in enumerate(sf.rows):
        rwhere = check_row(where, index, row)
        row_layer = as_layer(f"{rwhere}: overrides", row.get("overrides"))
        for label, paper, exp_layer in expand_row(rwhere, row):
            if label in seen_rows:
                raise SweepError(
                    f"{where}: row name {label!r} appears twice (rows {seen_rows[label]} and {index + 1}); "
                    "names must be unique"
                )
            seen_rows[label] = index + 1
            for seed in sf.seeds:
                t = _make_trial(sf, row, label, paper, merge(row_layer, exp_layer), overrides, seed, len(trials))
                if t.trial_id in seen_ids:
                    raise SweepError(
                        f"{where}: row {label!r} (seed {seed}) resolves to the same config as row "
                        f"{seen_ids[t.trial_id]!r}; remove one of them or make their overrides differ"
                    )
                seen_ids[t.trial_id] = label
                trials.append(t)
    header = {k: getattr(sf, k) for k in ("path", "name", "experiment", "store", "launcher", "wandb", "imports")}
    return Sweep(
        **header,
        max_retries=sf.max_retries,
        heartbeat=sf.heartbeat,
        cost=sf.cost,
        runs_root=sf.runs_root,
        trials=tuple(trials),
        overrides=tuple(overrides),
    )


def load_sweep(path: str | Path, overrides: Sequence[str] = ()) -> Sweep:
    """Parse, check and expand a sweep file (pure: its ``imports:`` must already be imported)."""
    return expand(read_sweep_file(path), overrides)


def describe_trial(t: Trial) -> dict[str, Any]:
    """The JSON-able summary of a trial used by --dry-run --json."""
    return {
        "trial_id": t.trial_id,
        "row": t.row,
        "group": t.group,
        "paper": t.paper,
        "seed": t.seed,
        "overrides": list(t.overrides),
        "run_dir": t.run_dir,
    }
