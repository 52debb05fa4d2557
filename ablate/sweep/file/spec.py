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

Why this file is long: the three shapes of a trial (read from the file, expanded, sampled or seeded
while a sweep runs) share one constructor, so a trial id is computed in one place only.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from ablate.config import ConfigError
from ablate.config.compose import Experiment
from ablate.config.load import resolve_paths
from ablate.errors import SweepError
from ablate.rundir import safe_name
from ablate.sweep.file.blocks import BLOCKS
from ablate.sweep.file.expand import as_layer, check_row, dotlist, expand_row, expanded_record, merge, set_dotted
from ablate.sweep.file.ids import SeedIds, trial_id
from ablate.sweep.file.spec_checks import (
    check_imports,
    check_launcher,
    check_no_split_keys,
    check_numbers,
    check_report,
    check_seeds,
    check_store,
    check_top,
    read_file,
)


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
    search: dict[str, Any] = field(default_factory=dict)  # a search trial: {phase, params, number} (else {})


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
    report: dict[str, Any]  # {equivalence: {ppl, bleu}}: how the report decides (ablate.report.verdicts)
    runs_root: Path
    seeds: tuple[int, ...]
    layer: dict[str, Any]  # the file's `overrides:` as a nested mapping
    rows: tuple[Mapping[str, Any], ...]
    blocks: dict[str, Any] = field(
        default_factory=dict
    )  # key -> spec of each policy's block (ablate.sweep.file.blocks)

    @property
    def runs_dir(self) -> Path:
        """``<runs>/<sweep name>``, the name made safe as a folder name (``..`` cannot leave ``runs/``)."""
        return self.runs_root / safe_name(self.name, fallback="sweep")

    @property
    def search(self) -> Any:
        """The ``search:`` block, a :class:`~ablate.sweep.file.search_spec.SearchSpec` (each row's trials
        sampled while the sweep runs), or None."""
        return self.blocks.get("search")

    @property
    def adaptive(self) -> Any:
        """The ``seeds: {start, max, until}`` block, an :class:`~ablate.sweep.file.seeds_spec.AdaptiveSeeds`
        (more seeds while rows are undecided), or None."""
        return self.blocks.get("seeds")


@dataclass(frozen=True)
class Sweep:
    """A validated sweep file (``source``) and its trials, in file order.

    A search sweep's trials are sampled while it runs (ablate.sweep.plan.search); until then ``trials``
    holds those sampled so far and ``templates`` one unsampled trial per row (the row's config at the
    first seed: validation, cost bounds, launcher checks). An adaptive sweep's trials hold seeds
    1..start and those its controller added."""

    source: SweepFile
    trials: tuple[Trial, ...]
    overrides: tuple[str, ...] = ()  # command-line overrides applied to every trial (recorded in the store)
    templates: tuple[Trial, ...] = ()

    def __getattr__(self, key: str) -> Any:
        """The file's own settings (path, name, store, launcher, blocks, search, ...) read through: one
        spelling of them, in :class:`SweepFile`."""
        if key not in _READ_THROUGH:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")
        return getattr(self.source, key)

    @property
    def rows(self) -> list[str]:
        return list(dict.fromkeys(t.row for t in (self.templates or self.trials)))

    @property
    def shapes(self) -> tuple[Trial, ...]:
        """Trials that stand for the sweep's configs: its trials, or a search sweep's row templates."""
        return self.trials + self.templates

    def study_records(self) -> dict[str, Any]:
        """What the store keeps of the file beyond its trials: its size, a search's spec (for the workers)."""
        out = expanded_record(self.source.rows, len(self.source.seeds))
        return {**out, "search": self.source.search.record()} if self.source.search is not None else out


_READ_THROUGH = frozenset(
    [f.name for f in fields(SweepFile) if f.name not in ("seeds", "layer", "rows")] + ["runs_dir", "search", "adaptive"]
)


# ----------------------------------------------------------------------------------------------
# Locating the file
# ----------------------------------------------------------------------------------------------


def project_sweeps_dir() -> Path:
    """The project's ``sweeps/`` folder: beside the package (editable install or a source tree)."""
    return Path(__file__).resolve().parents[3] / "sweeps"  # ablate/sweep/file/spec.py -> the project


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


def read_sweep_file(path: str | Path, imports: Callable[[tuple[str, ...], Path], None] | None = None) -> SweepFile:
    """Parse a sweep file and check its own keys and its blocks (rows are checked by :func:`expand`).

    ``imports``: called with the file's ``imports:`` and its path before anything else is checked, so that
    a plugin's block is known (the loader imports them there; this module never imports user code)."""
    file = resolve_sweep_path(path)
    data = read_file(file)
    where = str(file)
    if imports is not None:
        imports(check_imports(where, data.get("imports")), file)
    owners = {k: BLOCKS.get(k) for k, v in data.items() if k in BLOCKS and BLOCKS.get(k).claims(v)}
    name, max_retries, imports_ = check_top(where, data, BLOCKS.names(), any(b.rows_optional for b in owners.values()))
    if not name and ":" in file.stem:  # as check_top does for a name given in the file
        raise SweepError(
            f"{where}: the sweep is named after its file, {file.stem!r}: rename it without ':' or set name:"
        )
    experiment = (file.parent / str(data["experiment"])).resolve()
    if not experiment.is_file():
        raise SweepError(f"{where}: experiment: no such file {experiment} (paths are relative to the sweep file)")
    wandb, heartbeat, cost = check_numbers(where, data)
    blocks = {k: owner.read(where, data[k]) for k, owner in owners.items()}
    rows = data["rows"] if "rows" in data or not any(b.rows_optional for b in owners.values()) else [{"name": "search"}]
    if not isinstance(rows, list) or not rows:
        raise SweepError(f"{where}: rows must be a non-empty list of {{name, group, overrides}}")
    seeds = next((found for k, spec in blocks.items() if (found := owners[k].seeds(spec))), None)
    return SweepFile(
        path=file,
        name=name or file.stem,
        experiment=experiment,
        store=check_store(where, data.get("store", "sqlite")),
        launcher=check_launcher(where, data.get("launcher", {"name": "local"})),
        wandb=wandb,
        imports=imports_,
        max_retries=max_retries,
        heartbeat=heartbeat,
        cost=cost,
        report=check_report(where, data.get("report")),
        runs_root=(file.parent / str(data.get("runs", "runs"))).resolve(),
        seeds=seeds or check_seeds(where, data.get("seeds", [1])),
        layer=as_layer(f"{where}: overrides", data.get("overrides")),
        rows=tuple(rows),
        blocks=blocks,
    )


# ----------------------------------------------------------------------------------------------
# Rows -> trials
# ----------------------------------------------------------------------------------------------


def make_trial(
    sf: SweepFile,
    row: Mapping[str, Any],
    label: str,
    paper: str | None,
    layer: dict[str, Any],
    cli: Sequence[str],
    seed: int,
    order: int,
    search: Mapping[str, Any] | None = None,
    experiment: Experiment | None = None,
) -> Trial:
    group = str(row.get("group", ""))
    layers: list[tuple[str, Any]] = []
    if layer:  # a path the row names is read from the sweep file's folder, as an experiment file's is
        layers.append((f"{sf.path}: row {label!r}", resolve_paths(copy.deepcopy(layer), sf.path.parent)))
    if cli:
        layers.append(("command line", list(cli)))
    layers.append((f"{sf.path}: seeds", {"train": {"seed": seed}}))
    logging: dict[str, Any] = {"group": sf.name, "name": label, "tags": [t for t in (group,) if t]}
    # W&B job type: "trial" for a grid row's run, a search's phase (search | final) for a search's
    logging["job_type"] = str(search.get("phase", "search")) if search else "trial"
    for key, target in (("project", "project"), ("entity", "entity"), ("mode", "wandb")):
        if sf.wandb.get(key):
            logging[target] = sf.wandb[key]
    layers.append((f"{sf.path}: wandb", {"logging": logging}))
    try:
        config = (experiment or experiment_of(sf)).config(layers)
    except ConfigError as exc:
        raise SweepError(str(exc)) from None
    check_no_split_keys(f"{sf.path}: row {label!r}", dotlist(layer), config)
    check_no_split_keys("command line", cli, config)
    tid = trial_id(config)
    run_dir = sf.runs_dir / f"{safe_name(label, fallback='row')}-s{seed}-{tid[:8]}"
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
        search=dict(search or {}),
    )


def experiment_of(sf: SweepFile) -> Experiment:
    """The sweep's experiment with its sweep-wide overrides, loaded once for all its rows."""
    try:
        layer = resolve_paths(copy.deepcopy(sf.layer), sf.path.parent)  # its paths: from the file's folder
        return Experiment(sf.experiment, [(f"{sf.path}: overrides", layer)] if layer else [])
    except ConfigError as exc:
        raise SweepError(str(exc)) from None


def _reseed(runs_dir: str, first: Trial, seed: int, order: int, ids: SeedIds) -> Trial:
    """``first`` (a row's trial, loaded and checked) at another seed: the seed is the only key that the
    seeds layer sets, so the config is ``first``'s with it changed (a config load per seed cost ~8 ms:
    8 s of every `status`, `table` and dry run of a 1,000-seed sweep). Its sections but ``train`` are
    ``first``'s own: a trial's config is read, never changed in place (a deep copy per seed cost 0.4 s
    at 10,000 seeds)."""
    config = {**first.config, "train": {**first.config["train"], "seed": seed}}
    tid = ids(seed)
    run_dir = os.path.join(runs_dir, f"{safe_name(first.row, fallback='row')}-s{seed}-{tid[:8]}")  # as Path's /, faster
    return replace(first, trial_id=tid, seed=seed, order=order, config=config, run_dir=run_dir)


def row_layers(sf: SweepFile) -> list[tuple[Mapping[str, Any], str, str | None, dict[str, Any]]]:
    """(row, label, paper, layer) of every expanded row, names checked to be unique."""
    where = str(sf.path)
    out = []
    seen_rows: dict[str, int] = {}
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
            out.append((row, label, paper, merge(row_layer, exp_layer)))
    return out


ROW_ORDER = 100_000  # a trial a plan adds: display order = row position * ROW_ORDER + its own number


def row_trial(
    sweep: Sweep, row: str, seed: int, number: int, *, params: Mapping[str, Any] | None = None, search: Any = None
) -> Trial:
    """The trial of the sweep file's ``row`` at ``seed``, which a plan adds while the sweep runs (a search's
    sample, an adaptive seed): ``params`` (dotted key -> value) on top of the row's overrides, shown at
    ``number`` within its row; ``search``: the trial's search attributes ({phase, params, number})."""
    for i, (r, label, paper, layer) in enumerate(row_layers(sweep.source)):
        if label == row:
            sampled: dict[str, Any] = {}
            for key, value in (params or {}).items():
                set_dotted(sampled, key, value, f"{sweep.path}: search")
            order = i * ROW_ORDER + number
            return make_trial(
                sweep.source, r, label, paper, merge(layer, sampled), sweep.overrides, seed, order, search
            )
    began = "the search" if search is not None else "the sweep"
    raise SweepError(
        f"{sweep.path}: {'search' if search is not None else 'seeds'}: no row {row!r} in the sweep file "
        f"(renamed since {began} began?)"
    )


def expand(sf: SweepFile, overrides: Sequence[str] = ()) -> Sweep:
    """Every trial of a checked sweep file; ``overrides`` (dotlist) apply to every trial. The grid's
    trials (every row at every seed), as each block of the file makes them (ablate.sweep.file.blocks):
    a search sweep has no trials yet but its row templates (see :class:`Sweep`)."""
    empty = Sweep(source=sf, trials=(), overrides=tuple(overrides))

    def grid() -> Sweep:
        return replace(empty, trials=_grid(sf, overrides))

    build = grid
    for key, spec in sf.blocks.items():
        build = partial(BLOCKS.get(key).build, empty, spec, build)
    return build()


def _grid(sf: SweepFile, overrides: Sequence[str]) -> tuple[Trial, ...]:
    where = str(sf.path)
    trials: list[Trial] = []
    seen_ids: dict[str, str] = {}
    rows = row_layers(sf)  # the rows' own errors first, as before the experiment was loaded once
    runs_dir, experiment = str(sf.runs_dir), experiment_of(sf)
    for row, label, paper, layer in rows:
        first = ids = None
        for seed in sf.seeds:
            if first is None:
                t = first = make_trial(sf, row, label, paper, layer, overrides, seed, len(trials), None, experiment)
                ids = SeedIds(first.config)
            else:  # a row's configs differ only in train.seed: loaded once per row, not once per trial
                t = _reseed(runs_dir, first, seed, len(trials), ids)
            if t.trial_id in seen_ids:
                raise SweepError(
                    f"{where}: row {label!r} (seed {seed}) resolves to the same config as row "
                    f"{seen_ids[t.trial_id]!r}; remove one of them or make their overrides differ"
                )
            seen_ids[t.trial_id] = label
            trials.append(t)
    return tuple(trials)


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
