"""Sweep files: YAML -> validated rows -> trials (fully resolved configs with a stable id). Pure.

A sweep file names an experiment and the rows of an ablation table (Vaswani et al. 2017, Table 3).
Every row runs once per seed; ``grid:`` expands a row to the product of value lists and ``zip:`` to
paired values. Nothing here touches the store or launches anything: :func:`load_sweep` either
returns every trial of the sweep or raises one :class:`SweepError` naming file, row and key.

The trial id is a hash of the resolved config minus what cannot change the result (logging, paths,
data-loader workers), so the same trial has the same id whatever the row order or the file.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ablate.config import ConfigError, load_config, to_dict
from ablate.sweep.errors import SweepError
from ablate.sweep.expand import as_layer, dotlist, expand_row, merge

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
ROW_KEYS = ("name", "group", "paper", "overrides", "grid", "zip", "resources", "note")
WANDB_KEYS = ("project", "entity", "mode")
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
# Parsing and validation
# ----------------------------------------------------------------------------------------------


def unknown_key(where: str, key: object, valid: Sequence[str]) -> SweepError:
    close = difflib.get_close_matches(str(key), list(valid), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else f" (valid: {', '.join(valid)})"
    return SweepError(f"{where}: unknown key {key!r}{hint}")


def _check_keys(where: str, mapping: Mapping[str, Any], valid: Sequence[str]) -> None:
    for key in mapping:
        if key not in valid:
            raise unknown_key(where, key, valid)


def trial_id(config: Mapping[str, Any]) -> str:
    """16 hex digits of SHA-256 over the parts of a resolved config that change the result."""
    cfg = json.loads(json.dumps(config))  # a deep copy of plain data
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


def import_user_modules(modules: Sequence[str], base: Path, where: str) -> None:
    """Import the sweep's ``imports:`` (the sweep file's folder first on sys.path)."""
    for entry in (str(base), str(Path.cwd())):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    for mod in modules:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name and mod.startswith(exc.name):
                raise SweepError(
                    f"{where}: imports: no module {mod!r} (looked beside the sweep file and on sys.path); "
                    "fix the name or install it"
                ) from None
            raise


def load_sweep(path: str | Path, overrides: Sequence[str] = ()) -> Sweep:
    """Parse, validate and expand a sweep file; ``overrides`` (dotlist) apply to every trial."""
    from ablate.config import read_yaml

    file = resolve_sweep_path(path)
    try:
        data = read_yaml(file)
    except ConfigError as exc:
        raise SweepError(str(exc)) from None
    where = str(file)
    _check_keys(where, data, list(SWEEP_KEYS))
    for required in ("experiment", "rows"):
        if required not in data:
            raise SweepError(f"{where}: missing key {required!r} ({SWEEP_KEYS[required]})")
    name = str(data.get("name") or file.stem)
    if not name or "/" in name:
        raise SweepError(f"{where}: name {name!r} must be a non-empty name without '/'")
    experiment = (file.parent / str(data["experiment"])).resolve()
    if not experiment.is_file():
        raise SweepError(f"{where}: experiment: no such file {experiment} (paths are relative to the sweep file)")

    seeds = data.get("seeds", [1])
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
    ):
        raise SweepError(f"{where}: seeds must be a non-empty list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise SweepError(f"{where}: seeds lists a seed twice: {seeds}")
    max_retries = data.get("max_retries", 2)
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise SweepError(f"{where}: max_retries must be an integer >= 0, got {max_retries!r}")
    store = str(data.get("store", "sqlite"))
    if store.startswith("journal:") and not store[len("journal:") :]:
        raise SweepError(f"{where}: store: journal: needs a path, e.g. journal:sweeps.journal")
    if store != "sqlite" and not store.startswith("journal:") and "://" not in store:
        raise SweepError(
            f"{where}: store {store!r}: use sqlite, journal:PATH or an SQLAlchemy URL like postgresql://..."
        )

    wandb = _mapping(where, data, "wandb", WANDB_KEYS)
    if wandb.get("mode", "auto") not in ("auto", "online", "offline", "disabled"):
        raise SweepError(f"{where}: wandb.mode must be auto, online, offline or disabled, got {wandb['mode']!r}")
    heartbeat = {"interval_s": 10.0, "grace_s": 120.0, **_mapping(where, data, "heartbeat", HEARTBEAT_KEYS)}
    cost = _mapping(where, data, "cost", COST_KEYS)
    for key, value in {**heartbeat, **cost}.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise SweepError(f"{where}: {key} must be a positive number, got {value!r}")
    if heartbeat["grace_s"] <= heartbeat["interval_s"]:
        raise SweepError(f"{where}: heartbeat.grace_s must exceed heartbeat.interval_s")

    launcher = data.get("launcher", {"name": "local"})
    if isinstance(launcher, str):
        launcher = {"name": launcher}
    if not isinstance(launcher, Mapping):
        raise SweepError(f"{where}: launcher must be a name or {{name: local|slurm, ...}}, got {launcher!r}")
    from ablate.sweep.launch import LAUNCHERS

    lname = launcher.get("name", "local")
    if lname not in LAUNCHERS:
        raise SweepError(f"{where}: launcher: {LAUNCHERS.unknown_message(lname)}")
    launcher = LAUNCHERS.get(lname).validate(dict(launcher, name=lname), f"{where}: launcher")

    imports = data.get("imports") or []
    if not isinstance(imports, list) or not all(isinstance(m, str) for m in imports):
        raise SweepError(f"{where}: imports must be a list of module names, got {imports!r}")
    import_user_modules(imports, file.parent, where)

    runs_root = (file.parent / str(data.get("runs", "runs"))).resolve()
    sweep_layer = as_layer(f"{where}: overrides", data.get("overrides"))
    rows = data["rows"]
    if not isinstance(rows, list) or not rows:
        raise SweepError(f"{where}: rows must be a non-empty list of {{name, group, overrides}}")

    trials: list[Trial] = []
    seen_rows: dict[str, int] = {}
    seen_ids: dict[str, str] = {}
    for index, row in enumerate(rows):
        rwhere = f"{where}: row {index + 1}"
        if not isinstance(row, Mapping) or "name" not in row:
            raise SweepError(
                f"{rwhere}: a row must be a mapping with at least name: (e.g. {{name: base, group: base}})"
            )
        rwhere = f"{where}: row {row['name']!r}"
        _check_keys(rwhere, row, ROW_KEYS)
        resources = row.get("resources") or {}
        if not isinstance(resources, Mapping):
            raise SweepError(f"{rwhere}: resources must be a mapping of launcher settings")
        if resources:
            LAUNCHERS.get(lname).validate({**launcher, **resources}, f"{rwhere}: resources")
        row_layer = as_layer(f"{rwhere}: overrides", row.get("overrides"))
        for label, paper, exp_layer in expand_row(rwhere, row):
            if label in seen_rows:
                raise SweepError(
                    f"{where}: row name {label!r} appears twice (rows {seen_rows[label]} and {index + 1}); "
                    "names must be unique"
                )
            seen_rows[label] = index + 1
            layer = merge(row_layer, exp_layer)
            for seed in seeds:
                trials.append(
                    _make_trial(
                        file,
                        name,
                        experiment,
                        sweep_layer,
                        layer,
                        overrides,
                        seed,
                        label,
                        row,
                        paper,
                        len(trials),
                        runs_root,
                        wandb,
                        dict(resources),
                    )
                )
                t = trials[-1]
                if t.trial_id in seen_ids:
                    raise SweepError(
                        f"{where}: row {label!r} (seed {seed}) resolves to the same config as row "
                        f"{seen_ids[t.trial_id]!r}; "
                        "remove one of them or make their overrides differ"
                    )
                seen_ids[t.trial_id] = label
    return Sweep(
        path=file,
        name=name,
        experiment=experiment,
        store=store,
        launcher=launcher,
        wandb=wandb,
        imports=tuple(imports),
        max_retries=max_retries,
        heartbeat=heartbeat,
        cost=cost,
        runs_root=runs_root,
        trials=tuple(trials),
    )


def _mapping(where: str, data: Mapping[str, Any], key: str, valid: Sequence[str]) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise SweepError(f"{where}: {key} must be a mapping with keys {', '.join(valid)}")
    _check_keys(f"{where}: {key}", value, valid)
    return dict(value)


def _make_trial(
    file: Path,
    sweep_name: str,
    experiment: Path,
    sweep_layer: dict[str, Any],
    layer: dict[str, Any],
    cli: Sequence[str],
    seed: int,
    label: str,
    row: Mapping[str, Any],
    paper: str | None,
    order: int,
    runs_root: Path,
    wandb: Mapping[str, Any],
    resources: dict[str, Any],
) -> Trial:
    group = str(row.get("group", ""))
    layers: list[tuple[str, Any]] = []
    if sweep_layer:
        layers.append((f"{file}: overrides", sweep_layer))
    if layer:
        layers.append((f"{file}: row {label!r}", layer))
    if cli:
        layers.append(("command line", list(cli)))
    layers.append((f"{file}: seeds", {"train": {"seed": seed}}))
    logging: dict[str, Any] = {"group": sweep_name, "name": label, "tags": [t for t in (group,) if t]}
    if wandb.get("project"):
        logging["project"] = wandb["project"]
    if wandb.get("entity"):
        logging["entity"] = wandb["entity"]
    if wandb.get("mode"):
        logging["wandb"] = wandb["mode"]
    layers.append((f"{file}: wandb", {"logging": logging}))
    try:
        cfg = load_config(experiment, layers=layers)
    except ConfigError as exc:
        raise SweepError(str(exc)) from None
    config = to_dict(cfg)
    tid = trial_id(config)
    run_dir = runs_root / sweep_name / f"{_safe(label)}-s{seed}-{tid[:8]}"
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
        resources=resources,
    )


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
