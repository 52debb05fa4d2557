"""A renamed sweep file, or a store that holds another sweep: say so, and reuse its finished trials on request.

A sweep's store is named after the sweep (``.ablate/<name>.db`` beside the file, or one study per sweep
in a shared store). Rename the file and `ablate sweep` finds no study of the new name: every row shows
"not started" and would train again. :func:`other_sweeps` finds the studies of other sweeps in the
same store and beside it; :func:`hint` turns them into one line; ``ablate sweep FILE --reuse NAME``
(:func:`reuse`) copies NAME's finished attempts whose trial id this sweep also has (the same resolved
config: an id is a hash of it) into this sweep's store, pointing at the run folders they finished in.
"""

from __future__ import annotations

from ablate.errors import SweepError
from ablate.sweep.file.spec import Sweep
from ablate.sweep.store.location import StoreLocation
from ablate.sweep.store.store import SweepStore


def _candidates(store: SweepStore) -> list[StoreLocation]:
    """Stores to look in: this one, and the other SQLite stores in its folder."""
    found = [store.location]
    path = store.location.file
    if path is not None and store.location.kind == "sqlite" and path.parent.is_dir():
        found += [StoreLocation.sqlite(p) for p in sorted(path.parent.glob("*.db")) if p != path]
    return found


def other_sweeps(spec: Sweep, store: SweepStore) -> list[tuple[str, StoreLocation, int]]:
    """(sweep name, its store, finished trials it shares with ``spec``) of every other sweep nearby."""
    mine = {t.trial_id for t in spec.trials}
    found = []
    for location in _candidates(store):
        for name in SweepStore.study_names(location):
            if name == spec.name or ":" in name:  # a search's row studies (<sweep>:<row>): not sweeps
                continue
            done = [a for a in SweepStore(location, name).attempts() if a.state == "COMPLETE" and a.ablate_id in mine]
            found.append((name, location, len(done)))
    return found


def hint(spec: Sweep, store: SweepStore) -> str | None:
    """One line when this sweep has no study yet but another sweep in its store finished some of its
    trials (a renamed sweep file), else None: sweeps that share no finished trial are not news."""
    if store.exists():
        return None
    others = [o for o in other_sweeps(spec, store) if o[2] > 0]
    if not others:
        return None
    listed = ", ".join(f"{name!r} ({n} finished trial(s) with this sweep's trial ids)" for name, _, n in others)
    best = max(others, key=lambda o: o[2])[0]
    return (
        f"no sweep {spec.name!r} in the store yet, but it holds {listed}; a renamed sweep file? "
        f"`ablate sweep {spec.path} --reuse {best}` takes over their finished trials"
    )


def check_reuse(spec: Sweep, store: SweepStore, name: str) -> StoreLocation:
    """The store of sweep ``name``, for ``--reuse`` (read-only: the dry run checks it too)."""
    found = {n: location for n, location, _ in other_sweeps(spec, store)}
    if name not in found:
        near = ", ".join(found) or "none"
        raise SweepError(f"--reuse {name}: no sweep of that name in or beside the store (found: {near})")
    return found[name]


def reuse(spec: Sweep, store: SweepStore, name: str) -> int:
    """Copy the finished attempts of sweep ``name`` that this sweep shares (by trial id) into its store."""
    location = check_reuse(spec, store, name)
    mine = {t.trial_id for t in spec.trials}
    have = {a.ablate_id for a in store.attempts() if a.state == "COMPLETE"} if store.exists() else set()
    done = [a for a in SweepStore(location, name).attempts() if a.state == "COMPLETE"]
    chosen = [a for a in done if a.ablate_id in mine and a.ablate_id not in have]
    return store.adopt(chosen)


def reused_runs(n: int, name: str) -> str:
    return f"reused {n} finished trial(s) of sweep {name!r} (their run folders stay where they are)"
