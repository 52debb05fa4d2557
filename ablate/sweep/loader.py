"""Opening a sweep for a command: file -> plugins -> launcher check -> recorded overrides -> trials.

Every command that takes a sweep file (`sweep`, `status`, `sync`, `table`, the end-of-sweep summary)
opens it here, in one order, before anything is stored or launched:

1. read and check the file's own keys (:func:`ablate.sweep.file.spec.read_sweep_file`, pure);
2. check the store URL, import the file's ``imports:`` (:mod:`ablate.sweep.file.plugins`), check
   ``launcher:`` against the launcher registry;
3. pick the command-line overrides (see below) and expand the rows into trials (configs validated);
4. check each row's ``resources:`` against the launcher.

Command-line overrides change the trials' configs and so their ids, so they are part of the sweep:
`ablate sweep FILE a=1` records them in the store, and every later command on FILE that gives none
(`status`, `table`, `sync`, `ablate sweep FILE`) uses the recorded ones and says so in one line.
An `ablate sweep` that gives different overrides replaces the recorded ones (one line says so; the
trials of the old ones stay in the store and `status` counts them as no longer in the sweep);
`ablate sweep FILE --clear-overrides` goes back to the file as written. A dry run records nothing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.file.expand import count_trials
from ablate.sweep.file.plugins import import_plugins
from ablate.sweep.file.spec import Sweep, SweepFile, expand, read_sweep_file
from ablate.sweep.file.spec import check_launcher as check_launcher_shape
from ablate.sweep.plan import trial_states
from ablate.sweep.store.location import check_store_url, file_of, store_url
from ablate.sweep.store.state import TrialView
from ablate.sweep.store.store import SweepStore

# `ablate sweep` refuses a sweep of more trials than this unless --max-trials says how many are meant.
MAX_TRIALS = 500


@dataclass(frozen=True)
class OpenSweep:
    """A checked sweep, its store (not created by opening) and one-line notes for the user."""

    sweep: Sweep
    store: SweepStore
    notes: tuple[str, ...] = ()


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


def check_sweep_file(sf: SweepFile) -> None:
    """What needs more than the file itself: the store's database, the plugins, the launcher."""
    from ablate.sweep.launch import check_launcher

    check_store_url(store_url(sf), f"{sf.path}: store")
    import_plugins(sf.imports, sf.path.parent, str(sf.path))
    check_launcher(sf)


def check_store_writable(url: str, where: str) -> None:
    """A file store (SQLite, journal) must be creatable where the URL points; checked without a trace
    (a temporary file in the nearest existing folder, removed at once)."""
    path = file_of(url)
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


def check_size(sf: SweepFile, max_trials: int) -> int:
    """The sweep's trial count, counted before anything is built; above ``max_trials`` a SweepError."""
    n, per_row = count_trials(sf.rows, len(sf.seeds))
    if n > max_trials:
        big = ", ".join(f"{name!r} {k:,}" for name, k in per_row[:3])
        raise SweepError(
            f"{sf.path}: the sweep expands to {n:,} trials (largest rows: {big}; {len(sf.seeds)} seed(s)), "
            f"over the limit of {max_trials:,}; check grid:/seeds, or pass --max-trials {n} to confirm"
        )
    return n


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
    from ablate.sweep.launch import check_launcher

    sf = read_sweep_file(path)
    moved: tuple[str, ...] = ()
    if launcher is not None:
        sf, moved = other_launcher(sf, launcher_option(launcher))
    if max_trials is not None:
        check_size(sf, max_trials)
    check_sweep_file(sf)
    if writing:
        check_store_writable(store_url(sf), f"{sf.path}: store")
    store = SweepStore.for_sweep(sf)
    recorded = store.recorded_overrides()
    chosen, note = _choose_overrides(overrides, recorded, clear_overrides)
    sweep = expand(sf, chosen)
    check_launcher(sf, sweep.trials)
    return OpenSweep(sweep, store, (*moved, *((note,) if note else ())))


def load_results(path: str | Path, overrides: Sequence[str] | None = None) -> list[TrialView]:
    """Every trial of a sweep file (file order, seeds inner) with its state, as the store sees it."""
    opened = open_sweep(path, overrides)
    return trial_states(opened.store, opened.sweep)


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
    """``--launcher``: a launcher's name, or a YAML mapping of its settings (``{name: ray, address: auto}``)."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SweepError(f"--launcher {text!r}: not YAML ({' '.join(str(exc).split())[:120]})") from None
    return check_launcher_shape(f"--launcher {text!r}", value)
