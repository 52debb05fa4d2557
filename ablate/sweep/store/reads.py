"""How the store's attempts are read: finished ones once, the rest each time; one read per controller pass.

Every pass of the controller loop (poll, reap, retry, start, the progress view) asked the store for all
attempts, and Optuna's ``get_all_trials`` builds each trial with its JSON-decoded attributes: the cost
grew with the sweep's size times the reads per pass. Two rules cut it down:

- **Finished attempts (COMPLETE, FAIL, PRUNED) never change** (Optuna refuses to update a finished
  trial), so they are read once and kept. Each read asks only for WAITING and RUNNING attempts, plus
  one lookup of the next trial number: an attempt that left that set since the last read is fetched
  alone; when there are more trials than known (one created and finished elsewhere in between),
  everything is read again.
- **Within a controller pass** (:meth:`AttemptReader.pass_snapshot`) the first read is reused until
  this process writes to the store (every write path calls :meth:`invalidate`), so the pass works from
  one consistent picture and re-reads only after its own changes. Outside a pass every call reads.

Writes by other processes are seen at the next read, as before: a pass is one moment.

On a SQL store (SQLite, PostgreSQL, MySQL) the reading itself is done with SQL on Optuna's tables
(:mod:`ablate.sweep.store.sql_reads`); through Optuna's API (below) on a journal file, or where those tables
are not as expected. :attr:`AttemptReader.generation` rises whenever an attempt appears or changes
state, so what is built from the attempts is rebuilt only then.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ablate.stack_private import optuna_trial_id
from ablate.sweep.store.sql_reads import LIVE, SchemaMismatch, TableReader
from ablate.sweep.store.state import Attempt

T = TypeVar("T")


def _attempt(t: Any) -> Attempt | None:
    if "ablate_id" not in t.user_attrs:
        return None
    return Attempt(t.number, optuna_trial_id(t), t.state.name, dict(t.user_attrs))


class AttemptReader:
    def __init__(self) -> None:
        self.finished: dict[int, Attempt] = {}  # storage id -> attempt: final, never read again
        self.live_ids: set[int] = set()
        self.other = 0  # trials without an ablate id (not ours to show), counted to check the total
        self._snapshot: list[Attempt] | None = None
        self._in_pass = False
        self.full_reads = 0  # how often everything was read (the benchmark reports it)
        self.generation = 0  # rises when an attempt appears or changes state (every API read: may have)
        self._table: TableReader | None = None
        self._table_generation = -1
        self._sql = True  # False once the tables were not as expected: the API from then on
        self._memo: dict[str, tuple[Any, Any]] = {}
        self._memo_generation = -1

    def memo(self, key: str, owner: Any, build: Callable[[], T]) -> T:
        """``build()``, kept while no attempt appears or changes state and ``owner`` is the same object
        (a trial view of 10,000 trials took 13 ms to build, and a controller pass asked for it 3 times)."""
        if self._memo_generation != self.generation:
            self._memo, self._memo_generation = {}, self.generation
        hit = self._memo.get(key)
        if hit is not None and hit[0] is owner:
            return hit[1]
        value = build()
        self._memo[key] = (owner, value)
        return value

    def invalidate(self) -> None:
        self._snapshot = None

    @contextlib.contextmanager
    def pass_snapshot(self) -> Iterator[None]:
        self._in_pass, self._snapshot = True, None
        try:
            yield
        finally:
            self._in_pass, self._snapshot = False, None

    def read(self, storage: Any, study_id: int, engine: Any = None) -> list[Attempt]:
        """The attempts; ``storage`` is Optuna's storage or a function that makes it (only the API reads
        need it), ``engine`` a SQL store's engine (None: a journal store, read through the API)."""
        if self._snapshot is not None:
            return list(self._snapshot)
        attempts = self._read(storage, study_id, engine)
        if self._in_pass:
            self._snapshot = attempts
        return list(attempts)

    def _read(self, storage: Any, study_id: int, engine: Any = None) -> list[Attempt]:
        if engine is not None and self._sql:
            if self._table is None or self._table.study_id != study_id:
                self._table = TableReader(engine, study_id)
            try:
                attempts = self._table.read()
            except SchemaMismatch as exc:
                self._sql = False
                print(f"note: the store's tables: {exc}; reading through Optuna's API instead", file=sys.stderr)
            else:
                if self._table.generation != self._table_generation:
                    self._table_generation = self._table.generation
                    self.generation += 1
                return list(attempts)
        self.generation += 1
        return self._read_api(storage() if callable(storage) else storage, study_id)

    def _read_api(self, storage: Any, study_id: int) -> list[Attempt]:
        from optuna.trial import TrialState

        if not self.finished and not self.live_ids:
            return self._read_all(storage, study_id)
        states = (TrialState.WAITING, TrialState.RUNNING)
        live_trials = storage.get_all_trials(study_id, deepcopy=False, states=states)
        live_ids = {optuna_trial_id(t) for t in live_trials}
        for gone in self.live_ids - live_ids:  # finished since the last read: fetched alone
            a = _attempt(storage.get_trial(gone))
            if a is None:
                self.other += 1
            elif a.state not in LIVE:
                self.finished[gone] = a
        if self._more_than(storage, study_id, len(self.finished) + len(live_trials) + self.other):
            return self._read_all(storage, study_id)  # created and finished elsewhere in between
        self.live_ids = live_ids
        live = [a for t in live_trials if (a := _attempt(t)) is not None]
        return sorted([*self.finished.values(), *live], key=lambda a: a.number)

    @staticmethod
    def _more_than(storage: Any, study_id: int, known: int) -> bool:
        """Whether the study holds more than ``known`` trials. Trial numbers run 0, 1, 2, ... so that is
        whether number ``known`` exists: one indexed lookup (``get_n_trials`` reads every trial)."""
        try:
            storage.get_trial_id_from_study_id_trial_number(study_id, known)
        except KeyError:
            return False
        return True

    def _read_all(self, storage: Any, study_id: int) -> list[Attempt]:
        self.full_reads += 1
        trials = storage.get_all_trials(study_id, deepcopy=False)
        out = [a for t in trials if (a := _attempt(t)) is not None]
        self.finished = {a.storage_id: a for a in out if a.state not in LIVE}
        self.live_ids = {optuna_trial_id(t) for t in trials if t.state.name in LIVE}
        self.other = sum(1 for t in trials if "ablate_id" not in t.user_attrs and t.state.name not in LIVE)
        return out


def by_trial(attempts: Iterable[Attempt]) -> dict[str, list[Attempt]]:
    """Attempts per ablate trial id, oldest first; duplicates left by racing enqueues dropped."""
    out: dict[str, list[Attempt]] = {}
    for a in attempts:
        if a.kind == "duplicate":
            continue
        out.setdefault(a.ablate_id, []).append(a)
    for lst in out.values():
        lst.sort(key=lambda a: (a.attempt, a.number))
    return out
