"""The durable trial store of a sweep, on Optuna storage (SQLite, journal file, or any SQLAlchemy URL).

One Optuna study per sweep. Each trial of the sweep file is an Optuna trial created WAITING with its
resolved config and row as user attributes. A crashed attempt stays FAIL with its reason, and a
retry is a new WAITING Optuna trial with the same ablate trial id and ``attempt + 1`` (Optuna cannot
move a finished trial back). A claim is atomic: ``set_trial_state_values(id, RUNNING)`` refuses a
trial that is not WAITING (taken under the store's file lock, because SQLite cannot lock a row), so
two workers never run the same attempt.
Creation of trials happens under a file lock next to the store, so two controllers starting at once
do not enqueue the same trial twice; for server databases (no shared file) a claim also refuses an
attempt that a lower-numbered twin already holds.

User attributes of an Optuna trial: ablate id, attempt, row, group, paper, seed, order, overrides,
config, run_dir, wandb_id; at run time token, host, pid, heartbeat, slurm_job; at the end metrics or
failure + failure_kind. User attributes of the study: imports, import_path, heartbeat,
``overrides`` (the command-line overrides of the last `ablate sweep`; absent in stores written
before they were recorded, which reads as none) and, for a search, ``search`` (its spec: workers
read the metric and the pruner from it).

What a trial's attempts amount to (done / pruned / running / waiting / failed) is decided in one place,
:mod:`ablate.sweep.store.state`; :func:`ablate.sweep.plan.trial_states` gives that view for a whole
sweep, with the trials its plans added. The store returns attempts and knows no policy.

Why this file is long: every write of the store (create, claim, beat, finish, prune, fail, reap,
retry) takes the same lock and the same attribute names; one class keeps those rules in one place.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ablate.sweep.file.spec import Sweep, SweepFile, Trial
from ablate.sweep.store.location import StoreLocation, locate
from ablate.sweep.store.opening import (
    open_store,
    optuna_storage,
    read_study_attrs,
    server_lock,
    studies_in,
    study_names,
)
from ablate.sweep.store.owner import Owner, file_records, recorded_owner
from ablate.sweep.store.patience import patient_methods
from ablate.sweep.store.reads import AttemptReader, by_trial
from ablate.sweep.store.state import FREE_ATTRS, IDENTITY_ATTRS, Attempt

OVERRIDES_ATTR = "overrides"  # study user attribute: command-line overrides of the last `ablate sweep`


# Every read and write after opening waits out a database server that stops answering (store/patience.py).
@patient_methods("attempts", "get", "by_trial", "study_attrs", "sync", "adopt", "create_trial", "retry", "claim")
@patient_methods("beat", "set_attr", "finish", "prune", "fail", "reap")
class SweepStore:
    """Opens (and on first write creates) the study of one sweep."""

    def __init__(self, location: StoreLocation | str, study_name: str) -> None:
        self.location = location if isinstance(location, StoreLocation) else StoreLocation.parse(location)
        self.url = self.location.url  # what a worker is handed to open the store again
        self.study_name = study_name
        self._storage: Any = None
        self._study_id: int | None = None
        self._engine: Any = None  # SQLAlchemy engine of a SQL store (ablate.sweep.store.opening)
        self._checked = False  # opened with Optuna's table creation and schema check (to write)
        self.reader = AttemptReader()  # finished attempts kept, one read per controller pass

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def for_sweep(cls, sweep: Sweep | SweepFile) -> SweepStore:
        return cls(locate(sweep), sweep.name)

    study_names = staticmethod(study_names)  # the studies of a store (other sweeps in it)

    def exists(self) -> bool:
        """Whether the sweep's study is in the store. It only looks: no file, study or lock file is made and
        no connection is kept (a read of the study names; a command that goes on to read opens the store
        then). A file that is not a store, or a server that cannot be reached, raises its one line."""
        return self._study_id is not None or self.study_name in studies_in(self.location)

    def open_to_write(self) -> None:
        """Open the store to write, creating the sweep's study when it is missing."""
        self._open(create=True)

    def _open(self, create: bool) -> None:
        if self._study_id is not None and (self._checked or not create):
            return
        self._study_id = None  # opened to read, now to write: opened again, with Optuna's checks
        # To write, under the lock: opening a SQLite store creates Optuna's schema when it is missing, and
        # two processes doing so at once collide. To read, no lock and no lock file left beside the store
        # by a dry run or a status: a SQL store is only SELECTed from, and Optuna's journal storage reads
        # its file without a lock of its own too (its writers append whole records under theirs).
        if not create:
            self._connect(create)  # creates nothing, not even a lock file
            return
        with self.lock():
            self._connect(create)

    def _connect(self, create: bool) -> None:
        opened = open_store(self.location, self.study_name, create)  # ablate.sweep.store.opening: to read or to write
        self._study_id, self._engine, self._storage, self._checked = (
            opened.study_id,
            opened.engine,
            opened.storage,
            opened.checked,
        )

    @property
    def storage(self) -> Any:
        """The Optuna storage, for writes and single reads (a pass's snapshot is then read again)."""
        self._open(create=False)
        self.reader.invalidate()
        return self._optuna()

    def _optuna(self) -> Any:
        if self._storage is None:  # opened to read with SQL: Optuna's storage made on first use
            self._storage = optuna_storage(self.location, create=False)
        return self._storage

    @contextlib.contextmanager
    def lock(self, claim: bool = False) -> Iterator[None]:
        """Serialize trial creation between processes (a lock file beside a file store, an advisory lock on
        PostgreSQL). What is read under it is read afresh: a controller pass's snapshot may predate another
        process's new trials. A ``claim`` on a server takes no lock: the server locks the trial's row."""
        self.reader.invalidate()
        path = self.location.file
        if path is None and claim:
            yield
            return
        if path is None:  # a server database: its own lock where it has one (the claim-time twin check stays)
            with server_lock(self.location, self.study_name):
                yield
            return
        from filelock import FileLock

        path.parent.mkdir(parents=True, exist_ok=True)
        # Not "<file>.lock": JournalFileBackend uses that name for its own (symlink) lock.
        with FileLock(str(path) + ".ablate-lock", timeout=120):
            yield

    # -- reading -------------------------------------------------------------------------------
    def attempts(self) -> list[Attempt]:
        """Every attempt of the sweep, in creation order (ablate.sweep.store.reads: how little is read)."""
        self._open(create=False)
        return self.reader.read(self._optuna, self._study_id, self._engine)

    def get(self, storage_id: int) -> Attempt:
        t = self.storage.get_trial(storage_id)
        return Attempt(t.number, storage_id, t.state.name, dict(t.user_attrs))

    def by_trial(self) -> dict[str, list[Attempt]]:
        """Attempts per ablate trial id, oldest first; duplicates left by racing enqueues dropped."""
        attempts = self.attempts()
        return self.reader.memo("by_trial", None, lambda: by_trial(attempts))

    def study_attrs(self) -> dict[str, Any]:
        self._open(create=False)
        if self._storage is None and self._engine is not None:
            return read_study_attrs(self._engine, self._study_id)
        return dict(self.storage.get_study_user_attrs(self._study_id))

    def owner(self) -> Owner | None:
        """The sweep file the last `ablate sweep` of this study ran (ablate.sweep.store.owner); None when
        none is recorded."""
        return recorded_owner(self.study_attrs(), self.location.file) if self.exists() else None

    def recorded_overrides(self) -> tuple[str, ...] | None:
        """The command-line overrides recorded by the last `ablate sweep`; None when none are recorded."""
        if not self.exists():
            return None
        value = self.study_attrs().get(OVERRIDES_ATTR)
        return tuple(str(v) for v in value) if isinstance(value, list) else None

    # -- writing -------------------------------------------------------------------------------
    def sync(self, sweep: Sweep) -> list[Trial]:
        """Create every trial of the sweep that the store does not hold yet; return those created.

        Also records the sweep's command-line overrides, so `status`, `table` and a later `ablate
        sweep` without them open the same trials.
        """
        self._open(create=True)
        attrs = {
            OVERRIDES_ATTR: list(sweep.overrides),
            "imports": list(sweep.imports),
            "import_path": str(sweep.path.parent),
            **file_records(sweep.path, self.location.file),
            "heartbeat": dict(sweep.heartbeat),
        }
        attrs.update(sweep.study_records())  # e.g. a search's spec: its workers read the pruner there
        have_attrs = self.study_attrs()
        for key, value in attrs.items():
            if key not in have_attrs or _json(have_attrs[key]) != _json(value):  # a rerun: no write (commit)
                self._storage.set_study_user_attr(self._study_id, key, value)
        created = []
        with self.lock():
            have = set(self.by_trial())
            for t in sweep.trials:
                if t.trial_id not in have:
                    self._create(_trial_attrs(t), attempt=0)
                    created.append(t)
        return created

    def adopt(self, attempts: list[Attempt]) -> int:
        """Create these finished attempts of another sweep here, COMPLETE, with their attributes and
        metrics; returns how many (one without a finite dev PPL is left to run again)."""
        import optuna
        from optuna.trial import TrialState

        self._open(create=True)
        adopted = 0
        with self.lock():
            for a in attempts:
                ppl = (a.attrs.get("metrics") or {}).get("val/ppl")
                if not isinstance(ppl, (int, float)) or not math.isfinite(ppl):
                    continue  # Optuna's COMPLETE needs a value: such an attempt runs again instead
                value = float(ppl)
                frozen = optuna.trial.create_trial(state=TrialState.COMPLETE, value=value, user_attrs=dict(a.attrs))
                self.reader.invalidate()
                self._storage.create_new_trial(self._study_id, template_trial=frozen)
                adopted += 1
        return adopted

    def create_trial(self, t: Trial) -> None:
        """Enqueue one trial (a sampled search trial; the caller holds the lock and checked it is new)."""
        self._create(_trial_attrs(t), attempt=0)

    def _create(self, attrs: Mapping[str, Any], attempt: int) -> None:
        import optuna
        from optuna.trial import TrialState

        frozen = optuna.trial.create_trial(state=TrialState.WAITING, user_attrs={**attrs, "attempt": attempt})
        self.reader.invalidate()
        self._storage.create_new_trial(self._study_id, template_trial=frozen)

    def retry(self, previous: Attempt, extra: Mapping[str, Any] | None = None) -> bool:
        """Enqueue attempt+1 of a failed attempt, unless someone already did (same run dir: resumes);
        ``extra``: identity attributes the new attempt adds (``alone``)."""
        with self.lock():
            for a in self.by_trial().get(previous.ablate_id, []):
                if a.attempt > previous.attempt or a.state in ("WAITING", "RUNNING", "COMPLETE"):
                    return False
            keep = {k: v for k, v in previous.attrs.items() if k in IDENTITY_ATTRS and k not in FREE_ATTRS}
            self._create({**keep, **dict(extra or {})}, attempt=previous.attempt + 1)
        return True

    def claim(self, storage_id: int, token: str) -> bool:
        """Atomically take a WAITING attempt (or re-enter one this token holds, e.g. a SLURM requeue)."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        st = self.storage
        # Under the lock: SQLite has no SELECT ... FOR UPDATE, so two processes can both read
        # WAITING and both "win" set_trial_state_values (seen with two controllers). PostgreSQL
        # and MySQL lock the row (no lock taken), and journal appends are ordered.
        with self.lock(claim=True):
            try:
                # A fresh heartbeat before the state flips: a reaper must never see a RUNNING
                # attempt without one (it would look dead since the epoch).
                st.set_trial_user_attr(storage_id, "heartbeat", time.time())
                claimed = st.set_trial_state_values(storage_id, TrialState.RUNNING)
            except UpdateFinishedTrialError:
                return False
            if claimed:
                st.set_trial_user_attr(storage_id, "token", token)
        if claimed:
            me = self.get(storage_id)
            twin = [
                a
                for a in self.attempts()
                if a.ablate_id == me.ablate_id
                and a.attempt == me.attempt
                and a.number < me.number
                and a.state != "FAIL"
            ]
            if twin:  # created by a racing enqueue on a server database: the lower number wins
                self.fail(storage_id, f"duplicate of trial #{twin[0].number}", "duplicate")
                return False
            try:
                self.beat(storage_id)
            except UpdateFinishedTrialError:  # reaped or finished meanwhile: not ours any more
                return False
            return True
        current = self.get(storage_id)
        return current.state == "RUNNING" and current.attrs.get("token") == token

    def beat(self, storage_id: int, **extra: Any) -> None:
        st = self.storage
        st.set_trial_user_attr(storage_id, "heartbeat", time.time())
        for key, value in {"host": socket.gethostname(), "pid": os.getpid(), **extra}.items():
            st.set_trial_user_attr(storage_id, key, value)

    def set_attr(self, storage_id: int, key: str, value: Any) -> bool:
        """Set a user attribute; False when the attempt finished meanwhile (a race that is fine)."""
        from optuna.exceptions import UpdateFinishedTrialError

        try:
            self.storage.set_trial_user_attr(storage_id, key, value)
        except UpdateFinishedTrialError:
            return False
        return True

    def finish(self, storage_id: int, metrics: Mapping[str, Any]) -> None:
        from optuna.trial import TrialState

        clean = {k: v for k, v in metrics.items() if isinstance(v, (int, float, str, bool)) or v is None}
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in clean.items()}
        self.storage.set_trial_user_attr(storage_id, "metrics", clean)
        ppl = metrics.get("val/ppl")
        values = [float(ppl)] if isinstance(ppl, (int, float)) and math.isfinite(ppl) else None
        self.storage.set_trial_state_values(storage_id, TrialState.COMPLETE, values=values)

    def prune(self, storage_id: int, metrics: Mapping[str, Any]) -> None:
        """Mark an attempt PRUNED (stopped early by its row's pruner: a result, never retried)."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        try:
            self.storage.set_trial_user_attr(storage_id, "metrics", dict(metrics))
            self.storage.set_trial_state_values(storage_id, TrialState.PRUNED)
        except UpdateFinishedTrialError:
            pass

    def fail(self, storage_id: int, reason: str, kind: str) -> None:
        """Mark an attempt FAIL with a one-line reason (no-op when it already finished)."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        st = self.storage
        try:
            st.set_trial_user_attr(storage_id, "failure", reason.splitlines()[0][:500] if reason else kind)
            st.set_trial_user_attr(storage_id, "failure_kind", kind)
            st.set_trial_state_values(storage_id, TrialState.FAIL)
        except UpdateFinishedTrialError:
            pass

    def reap(self, grace_s: float, alive: Callable[[Attempt], bool | None] = lambda a: None) -> list[Attempt]:
        """Fail RUNNING attempts whose heartbeat is older than ``grace_s``.

        ``alive`` may know better than the heartbeat (a SLURM job that is pending after a requeue is
        alive): True keeps, False reaps, None = heartbeat. A cancelled job is failed by its launcher's
        ``poll`` (kind ``cancelled``), not here.
        """
        reaped = []
        now = time.time()
        for a in self.attempts():
            if a.state != "RUNNING":
                continue
            verdict = alive(a)
            silent = a.silent_s(now)  # claims always set one first
            if verdict is False or (verdict is None and silent > grace_s):
                reason = f"no heartbeat for {silent:.0f} s (worker died on {a.attrs.get('host', '?')})"
                self.fail(a.storage_id, reason, "stale")
                reaped.append(self.get(a.storage_id))
        return reaped


def _json(value: Any) -> str:
    """A study attribute as the store keeps it (JSON), to compare a value with the stored one."""
    return json.dumps(value, sort_keys=True)


def _trial_attrs(t: Trial) -> dict[str, Any]:
    return {
        "ablate_id": t.trial_id,
        "row": t.row,
        "group": t.group,
        "paper": t.paper,
        "seed": t.seed,
        "order": t.order,
        "overrides": list(t.overrides),
        "config": t.config,
        "run_dir": t.run_dir,
        # W&B run ids allow [a-z0-9]; the trial id keeps every retry and requeue in one W&B run.
        "wandb_id": t.trial_id,
        **({"search": dict(t.search)} if t.search else {}),
    }
