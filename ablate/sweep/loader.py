"""Opening a sweep for a command: file -> plugins -> launcher check -> recorded overrides -> trials.

Every command that takes a sweep file (`sweep`, `status`, `sync`, `table`, the end-of-sweep summary)
opens it here, in one order, before anything is stored or launched:

1. read and check the file's own keys (:func:`ablate.sweep.spec.read_sweep_file`, pure);
2. check the store URL, import the file's ``imports:`` (:mod:`ablate.sweep.plugins`), check
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

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ablate.sweep.plugins import import_plugins
from ablate.sweep.spec import Sweep, SweepFile, expand, read_sweep_file
from ablate.sweep.state import TrialView
from ablate.sweep.store import SweepStore, check_store_url, store_url


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


def open_sweep(path: str | Path, overrides: Sequence[str] | None = None, *, clear_overrides: bool = False) -> OpenSweep:
    """Check and expand a sweep file with its command-line overrides (None: those recorded).

    Read-only: nothing is created, not even the store (its recorded overrides are read if it exists).
    """
    from ablate.sweep.launch import check_launcher

    sf = read_sweep_file(path)
    check_sweep_file(sf)
    store = SweepStore.for_sweep(sf)
    recorded = store.recorded_overrides()
    chosen, note = _choose_overrides(overrides, recorded, clear_overrides)
    sweep = expand(sf, chosen)
    check_launcher(sf, sweep.trials)
    return OpenSweep(sweep, store, (note,) if note else ())


def load_results(path: str | Path, overrides: Sequence[str] | None = None) -> list[TrialView]:
    """Every trial of a sweep file (file order, seeds inner) with its state, as the store sees it."""
    opened = open_sweep(path, overrides)
    return opened.store.trial_states(opened.sweep)
