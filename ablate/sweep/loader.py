"""Opening a sweep for a command: file -> plugins -> launcher check -> recorded overrides -> trials.

Every command that takes a sweep file (`sweep`, `status`, `sync`, `table`, the end-of-sweep summary)
opens it here, in one order, before anything is stored or launched:

1. import the file's ``imports:`` (:mod:`ablate.sweep.file.plugins`: a plugin's variants and sweep-file
   blocks), then read and check the file's own keys and blocks (:func:`ablate.sweep.file.spec.read_sweep_file`);
2. locate the store and check its URL; check ``launcher:`` against the launcher registry;
3. pick the command-line overrides (see below) and expand the rows into trials (configs validated);
4. check each row's ``resources:`` against the launcher.

Each check runs once, and what it found stays on the :class:`OpenSweep`: the store (at the location
found once), the launcher class, and the sweep's plan (built once, when first asked), so the commands,
the dry run, the table and the launcher ask the opened sweep rather than the registries.

Command-line overrides change the trials' configs and so their ids, so they are part of the sweep:
`ablate sweep FILE a=1` records them in the store, and every later command on FILE that gives none
(`status`, `table`, `sync`, `ablate sweep FILE`) uses the recorded ones and says so in one line.
An `ablate sweep` that gives different overrides replaces the recorded ones (one line says so; the
trials of the old ones stay in the store and `status` counts them as no longer in the sweep);
`ablate sweep FILE --clear-overrides` goes back to the file as written. A dry run records nothing.

Then `ablate sweep`'s checks that need more than the file (:func:`check_this_machine`: a runs folder this
machine can make, the local corpus files the trials read; :func:`name_clash`: another sweep file that owns
the name in the store), each one line, before anything is stored, prepared or launched.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ablate.errors import SweepError
from ablate.sweep.file.plugins import import_plugins
from ablate.sweep.file.spec import Sweep, SweepFile, expand, read_sweep_file
from ablate.sweep.file.spec import check_launcher as check_launcher_shape
from ablate.sweep.plan import plan_of, trial_states
from ablate.sweep.plan.base import Plan
from ablate.sweep.size import check_read_size, check_size, say_long_expansion
from ablate.sweep.store.location import StoreLocation, check_store_url, locate
from ablate.sweep.store.owner import clash_line
from ablate.sweep.store.state import TrialView
from ablate.sweep.store.store import SweepStore

if TYPE_CHECKING:
    from ablate.sweep.launch.base import Launcher


@dataclass(frozen=True)
class OpenSweep:
    """A checked sweep, its store (not created by opening), its launcher class and one-line notes for the
    user; its plan is built once, when a command first asks for it."""

    sweep: Sweep
    store: SweepStore
    launcher: type[Launcher]  # the class the file's launcher: (or --launcher) names, checked once at opening
    notes: tuple[str, ...] = ()

    @cached_property
    def plan(self) -> Plan:
        """The sweep's plan: the one every part of a command asks (the dry run, ``status``, the table, the
        launcher's passes). Built when first asked: `sync` needs none."""
        return plan_of(self.sweep, self.store)


def _choose_overrides(
    given: Sequence[str] | None, recorded: tuple[str, ...] | None, clear: bool
) -> tuple[tuple[str, ...], str | None]:
    """(the overrides to use, a note about them or None)."""
    if given:
        given = tuple(given)
        if recorded and given != recorded:
            return given, (
                f"command-line overrides {' '.join(given)} differ from those recorded with this sweep "
                f"({' '.join(recorded)}); `ablate sweep` records them in their place"
            )
        return given, None
    if recorded and clear:
        return (), f"the recorded command-line overrides ({' '.join(recorded)}) are cleared: the file as written"
    if recorded:
        return recorded, f"using the command-line overrides recorded with this sweep: {' '.join(recorded)}"
    return (), None


def _import_plugins(modules: Sequence[str], file: Path) -> None:
    import_plugins(modules, file.parent, str(file))


def check_sweep_file(sf: SweepFile) -> tuple[StoreLocation, type[Launcher], dict[str, Any]]:
    """What needs more than the file itself: the store's database, the launcher (its plugins are imported
    as it is read). Returns the store's location, the launcher class and its checked settings."""
    from ablate.sweep.launch import check_launcher

    location = locate(sf)
    check_store_url(location, f"{sf.path}: store")
    return (location, *check_launcher(sf))


def check_store_writable(location: StoreLocation, where: str) -> None:
    """A file store (SQLite, journal) must be creatable where the URL points; checked without a trace
    (a temporary file in the nearest existing folder, removed at once)."""
    url, path = location.url, location.file
    if path is None:
        return
    path = path if path.is_absolute() else Path.cwd() / path
    fix = "point store: of the sweep file at a writable place (e.g. sqlite or journal:PATH)"
    if path.exists():
        if path.is_dir():
            raise SweepError(f"{where}: {url}: {path} is a folder, not a store file; {fix}")
        if not os.access(path, os.R_OK | os.W_OK):
            raise SweepError(f"{where}: {url}: {path} is not writable; {fix}")
        return
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise SweepError(f"{where}: {url}: {folder} is a file, not a folder, so {path.name} cannot go there; {fix}")
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".ablate-probe-"):
            pass
    except OSError as exc:
        raise SweepError(f"{where}: {url}: cannot create files in {folder} ({exc.strerror}); {fix}") from None


def open_sweep(
    path: str | Path,
    overrides: Sequence[str] | None = None,
    *,
    clear_overrides: bool = False,
    max_trials: int | None = None,
    writing: bool = False,
    launcher: str | None = None,
) -> OpenSweep:
    """Check and expand a sweep file with its command-line overrides (None: those recorded).

    ``max_trials``: refuse (before building any trial) a sweep of more trials. ``writing``: also check
    that the store can be created (`ablate sweep`, dry runs included). ``launcher``: the command line's
    ``--launcher`` (a name or a YAML mapping) in place of the file's ``launcher:``; the trials, their ids
    and the store stay the same (where a trial runs is no part of it).
    Read-only: nothing is created, not even the store (its recorded overrides are read if it exists).
    """
    from ablate.sweep.launch import check_resources

    sf = read_sweep_file(path, imports=_import_plugins)  # a plugin's block is known when the blocks are read
    moved: tuple[str, ...] = ()
    if launcher is not None:
        sf, moved = other_launcher(sf, launcher_option(launcher))
    if max_trials is not None:
        check_size(sf, max_trials)
    location, launcher_class, settings = check_sweep_file(sf)
    store = SweepStore(location, sf.name)
    if max_trials is None:
        check_read_size(sf, store)
    if writing:
        check_store_writable(location, f"{sf.path}: store")
    recorded = store.recorded_overrides()
    chosen, note = _choose_overrides(overrides, recorded, clear_overrides)
    say_long_expansion(sf)
    sweep = expand(sf, chosen)
    check_one_family(sweep)
    check_resources(sf, launcher_class, settings, sweep.trials)
    return OpenSweep(sweep, store, launcher_class, (*moved, *((note,) if note else ())))


def check_one_family(spec: Sweep) -> None:
    """Rows of two kinds of model (model.arch: a translator's and a language model's) in one sweep: its table
    would set one's perplexity against the other's as an effect; one line names a row of each."""
    from ablate.family import family_of

    first: dict[str, str] = {}
    for trial in spec.shapes:
        first.setdefault(family_of(trial.config).name, trial.row)
    if len(first) > 1:
        rows = " and ".join(f"row {row!r} (model.arch={name})" for name, row in first.items())
        raise SweepError(
            f"{spec.path}: {rows} are different kinds of model: one table compares rows of one kind; "
            "put them in two sweep files"
        )


def load_results(path: str | Path, overrides: Sequence[str] | None = None) -> list[TrialView]:
    """Every trial of a sweep file (file order, seeds inner) with its state, as the store sees it."""
    opened = open_sweep(path, overrides)
    return trial_states(opened.store, opened.sweep, opened.plan)


def other_launcher(sf: SweepFile, chosen: dict[str, Any]) -> tuple[SweepFile, tuple[str, ...]]:
    """``sf`` on the ``--launcher`` ``chosen``, and a note per row whose ``resources:`` name keys of the
    file's own launcher that the chosen one does not take (a SLURM time limit on Ray): those are left
    out, since they were written for the other launcher, and the rest is checked as usual."""
    from ablate.sweep.launch import LAUNCHERS

    own, name = sf.launcher["name"], chosen["name"]
    if name == own or name not in LAUNCHERS:  # an unknown name is refused by the launcher check
        return replace(sf, launcher=chosen), ()
    keys, rows, notes = LAUNCHERS.get(name).KEYS, [], []
    for row in sf.rows:
        resources = row.get("resources") or {}
        dropped = sorted(str(k) for k in resources if k not in keys) if isinstance(resources, dict) else []
        if dropped:
            notes.append(
                f"row {row.get('name')!r}: resource key(s) {', '.join(dropped)} are for launcher {own}; "
                f"--launcher {name} leaves them out"
            )
            row = {**row, "resources": {k: v for k, v in resources.items() if k in keys}}
        rows.append(row)
    return replace(sf, launcher=chosen, rows=tuple(rows)), tuple(notes)


def launcher_option(text: str) -> dict[str, Any]:
    """``--launcher``: a launcher's name, a YAML mapping of its settings (``{name: ray, address: auto}``),
    or a YAML file holding that mapping (a name ending in .yaml or .yml)."""
    import yaml

    where = f"--launcher {text!r}"
    if text.endswith((".yaml", ".yml")):
        path = Path(text)
        if not path.is_file():
            raise SweepError(f"{where}: no such file; give a launcher's name, its settings as YAML or a YAML file")
        text = path.read_text(encoding="utf-8")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SweepError(f"{where}: not YAML ({' '.join(str(exc).split())[:120]})") from None
    chosen = check_launcher_shape(where, value)
    from ablate.sweep.launch import LAUNCHERS

    if chosen["name"] not in LAUNCHERS:  # blamed on the option, not on the sweep file's launcher: key
        raise SweepError(f"{where}: {LAUNCHERS.unknown_message(chosen['name'])}")
    LAUNCHERS.get(chosen["name"]).validate(dict(chosen), where)
    return chosen


def runs_problem(spec: Sweep) -> str | None:
    """A runs folder this machine cannot write (every trial would be claimed, crash and wait), or None.

    Tried, not read from permission bits: a folder made and removed in the nearest existing one (root may
    pass ``os.access`` where no folder can be made, e.g. under /proc or on a read-only mount). The dry run
    writes nothing that stays."""
    probe = spec.runs_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        why = "is not a folder"
    else:
        try:
            os.rmdir(tempfile.mkdtemp(dir=probe, prefix=".ablate-probe-"))
            return None
        except OSError as exc:
            why = f"takes no new folder: {exc.strerror or exc}"
    return f"{spec.path}: runs: {spec.runs_dir} cannot be created ({probe} {why}); set runs: to a folder you can write"


def check_this_machine(spec: Sweep, dry_run: bool) -> None:
    """The runs folder and the local corpus files: an error where this machine runs the trials (the dry
    run refuses what the run would), a note in a dry run made here for a cluster."""
    for why, elsewhere in (
        (runs_problem(spec), "a plan for the cluster needs none of it"),
        (data_problem(spec), "the cluster's files may be elsewhere"),
    ):
        if why and (not dry_run or spec.launcher["name"] == "local"):
            raise SweepError(why)
        if why:
            print(f"note: {why} (here; {elsewhere})", file=sys.stderr)


def data_problem(spec: Sweep) -> str | None:
    """A trial's local corpus files that are not there (``textfiles`` with a wrong data.root), or None:
    the run would stop at the first trial; the dry run says it too."""
    from ablate.data.lookup import missing_files

    seen = set()
    for trial in spec.trials:
        data = trial.config.get("data") or {}
        key = json.dumps(data, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        if why := missing_files(data):
            return f"{spec.path}: row {trial.row!r}: {why}"
    return None


def prepared_problem(spec: Sweep) -> str | None:
    """A row whose prepared data cannot train or evaluate it (a language model's data.block_size or one of
    its eval.lengths longer than a split holds), where the data is prepared here; None otherwise."""
    from ablate.sweep.plan.budgets import prepared_problem as trial_problem

    seen = set()
    for trial in spec.shapes:
        key = json.dumps([trial.config.get(k) for k in ("data", "eval", "model")], sort_keys=True, default=str)
        if key not in seen and (why := trial_problem(trial.config)):
            return f"{spec.path}: row {trial.row!r}: {why}"
        seen.add(key)
    return None


def name_clash(spec: Sweep, store: SweepStore) -> str | None:
    """Another sweep file that ran under this name in this store and still owns it
    (ablate.sweep.store.owner), as one line; None when this file may run under the name."""
    owner = store.owner()
    if owner is None:
        return None

    def same_store(path: Path) -> bool:  # a copied project folder: the original opens its own store
        try:
            return locate(read_sweep_file(path, imports=_import_plugins)) == store.location
        except SweepError:  # no longer reads as a sweep: it cannot run under this name
            return False

    return clash_line(spec.path, spec.name, store.url, owner, same_store)
