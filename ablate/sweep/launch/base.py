"""The controller loop every launcher shares: sync the store, start work, reap, retry, show progress.

A launcher says how a claimed attempt starts (a local subprocess, a SLURM array task) and whether
an attempt it started is still alive; this loop does the rest, identically for both:

1. enqueue the sweep's trials the store lacks (under the store's lock, so two controllers agree);
2. give every failed trial one new attempt ("run the sweep again" retries failures), except the
   diverged ones, whose result is final;
3. until no attempt of the sweep is WAITING or RUNNING: reap dead attempts (the launcher knows its
   own; others by heartbeat), retry crashed ones up to ``max_retries``, start waiting ones, redraw.

The loop holds one plan (the opened sweep's, given to the constructor; else built when it runs) and
the plan's last :class:`~ablate.sweep.plan.base.Step`: the sweep the launcher works on is that Step's,
which grows as the plan adds trials (a search's samples, adaptive seeds), and is handed to the next
pass of the plan.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ablate.errors import AblateError, SweepError, unknown_key
from ablate.sweep.file.spec import Sweep
from ablate.sweep.launch.progress import ProgressView
from ablate.sweep.plan.base import Plan, Step
from ablate.sweep.plan.plans import plan_of, trial_states
from ablate.sweep.store.location import StoreLocation
from ablate.sweep.store.state import FINAL_KINDS, NO_AUTO_RETRY, Attempt, TrialView, count, free_retry
from ablate.sweep.store.store import SweepStore


class Launcher:
    """Base of the registered launchers; subclasses define KEYS, validate, start and alive."""

    KEYS: dict[str, str] = {}
    poll_s: float = 1.0
    # "module:function" the trials this launcher starts train with (None: ablate.train.run:train); the
    # launcher contract (ablate/sweep/launch/contract.py) sets a stand-in here, which a launcher must honour.
    trial_fn: str | None = None

    def __init__(
        self, sweep: Sweep, store: SweepStore, *, trial_fn: str | None = None, plan: Plan | None = None
    ) -> None:
        self.last, self.store = Step(sweep), store  # the plan's last answer: before it starts, the sweep given
        self.plan = plan  # None: built from the sweep and the store when the sweep runs
        if trial_fn is not None:  # a stand-in trainer ("module:function" or "path/file.py:function")
            self.trial_fn = trial_fn
        self.cfg = dict(sweep.launcher)
        self.poll_s = float(self.cfg.get("poll_s", self.poll_s))
        self.retries: Counter[str] = Counter()
        self.started: set[str] = set()  # ablate ids of the attempts this controller started (not adopted)
        self._cost_cache: dict[str, float] | None = None

    @property
    def sweep(self) -> Sweep:
        """The sweep as the plan last answered it (every trial added so far)."""
        return self.last.sweep

    # -- validation (pure; called while the sweep file is checked) ------------------------------
    @classmethod
    def validate(cls, cfg: Mapping[str, Any], where: str) -> dict[str, Any]:
        for key in cfg:
            if key not in cls.KEYS:
                raise unknown_key(where, key, list(cls.KEYS))
        poll = cfg.get("poll_s")
        if poll is not None and not (isinstance(poll, (int, float)) and not isinstance(poll, bool) and 0 < poll < 1e6):
            # 0 would ask the store in a loop without a pause: a database server's load, a core spent
            raise SweepError(f"{where}: poll_s must be a positive number of seconds (e.g. 1), got {poll!r}")
        return dict(cfg)

    @staticmethod
    def positive_int(cfg: Mapping[str, Any], key: str, where: str) -> None:
        value = cfg.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise SweepError(f"{where}: {key} must be a positive integer, got {value!r}")

    @classmethod
    def check_trials(cls, sweep: Sweep) -> None:
        """Refuse (SweepError) trials this launcher could not run as configured; pure, so the dry run
        refuses what the run would."""

    # Whether `ablate sweep --detach` may leave the trials running without a controller (their workers
    # live outside this process: SLURM jobs, Ray jobs), and `ablate status` then asks the scheduler.
    can_detach: bool = False

    @classmethod
    def launch_problem(cls, sweep: Sweep) -> str | None:
        """What keeps this machine from launching the sweep (checked before anything is stored; the dry
        run prints it as a note), or None."""
        return None

    @classmethod
    def needs(cls, sweep: Sweep, location: StoreLocation) -> list[str]:
        """What the sweep needs of the machines its trials run on, one line each (the dry run prints them);
        ``location``: the sweep's store, as the opened sweep located it."""
        return []

    @classmethod
    def reap_detached(cls, sweep: Sweep, store: SweepStore) -> list[str]:
        """For ``ablate status``: record what the scheduler says ended, as a running controller's poll
        would, and return the scheduler's view of each open attempt's job, one line each (nothing for
        launchers whose trials live in the controller)."""
        return []

    # -- hooks ----------------------------------------------------------------------------------
    def start(self, waiting: list[Attempt]) -> None:
        """Start some of the waiting attempts (in sweep order)."""
        raise NotImplementedError

    def alive(self, attempt: Attempt) -> bool | None:
        """True/False when the launcher knows whether a RUNNING attempt lives; None: ask the heartbeat."""
        return None

    def poll(self) -> None:
        """Notice finished children/jobs (and record the attempts they left RUNNING)."""

    def busy(self) -> bool:
        """Whether work this controller started is still in flight."""
        return False

    def capacity(self) -> int:
        """How many trials this launcher runs at once (a search samples no further ahead than that)."""
        return 4

    def shutdown(self) -> None:
        """Ctrl-C: stop or detach from what was started, leaving every trial resumable."""

    # -- the loop -------------------------------------------------------------------------------
    def trials(self) -> list[TrialView]:
        """The sweep's trials as the store sees them now (the one trial-state view)."""
        return self.store_views(self.sweep)

    def active(self) -> list[Attempt]:
        """Attempts of this sweep's trials that are WAITING or RUNNING."""
        return [a for v in self.trials() for a in v.attempts if a.state in ("WAITING", "RUNNING")]

    def retry_failed(self, first: bool) -> list[str]:
        """New attempts for failed trials; returns one line per retry made while the sweep runs (for the view)."""
        said = []
        for v in self.trials():
            last = v.deciding
            if v.state != "failed" or last is None or last.kind in FINAL_KINDS:
                continue
            if last.kind == "oom" and last.attrs.get("packed") and not last.attrs.get("alone"):
                # out of memory beside other trials: once more alone on a device, no retry spent
                if self.store.retry(last, {"alone": True}):
                    said.append(f"retrying {v.row} seed {v.seed} alone on a device: it ran out of memory packed")
            elif (free := free_retry(last)) is not None:  # killed or stopped from outside: resumes, no retry spent
                if self.store.retry(last, free):
                    why = str(last.attrs.get("failure") or last.kind)
                    said.append(f"resuming {v.row} seed {v.seed} at step {free['resumed_at']} (no retry spent): {why}")
            elif first:  # a new `ablate sweep` retries every failure once, cancelled ones included
                self.store.retry(last)
            elif last.kind not in NO_AUTO_RETRY and self.retries[last.ablate_id] < self.sweep.max_retries:
                if self.store.retry(last):
                    self.retries[last.ablate_id] += 1
                    n = self.retries[last.ablate_id]
                    why = str(last.attrs.get("failure") or last.kind or "failed")
                    said.append(f"retrying {v.row} seed {v.seed} ({n}/{self.sweep.max_retries}): {why}")
        return said

    def waiting(self) -> list[Attempt]:
        """Waiting attempts, the most expensive first (longest-processing-time-first scheduling).

        On a few slots the sweep ends when its last trial does: starting the big rows last (they come
        last in Table 3) left one slot idle for most of the big row's run. Ties keep sweep order.
        """
        active = self.active()  # one read of the store
        out = [a for a in active if a.state == "WAITING"]
        if not out:  # e.g. a rerun of a finished sweep: no costs to estimate
            return []
        # The order changes only when an attempt appears or changes state: 21 ms a pass at 10,000 trials.
        return list(self.store.reader.memo("waiting", self.sweep, lambda: self._by_cost(active, out)))

    def _by_cost(self, active: list[Attempt], out: list[Attempt]) -> list[Attempt]:
        order = {t.trial_id: t.order for t in self.sweep.trials}
        cost = self._costs()
        order.update({a.ablate_id: 0 for a in active if a.ablate_id not in order})
        return sorted(out, key=lambda a: (-cost.get(a.ablate_id, 0.0), order[a.ablate_id], a.attempt))

    def _costs(self) -> dict[str, float]:
        from ablate.sweep.plan.cost import estimate  # torch-free (ablate/config/size.py): once per controller

        if self._cost_cache is None:
            self._cost_cache = {}
        for t in self.sweep.trials:  # a search adds trials as it samples them
            if t.trial_id not in self._cost_cache:
                try:
                    flops = estimate(self.sweep, t)["flops"]  # None: not known yet
                except AblateError:  # the dry run's assumptions refuse it (cost: memory_gb); the trial decides
                    flops = None
                self._cost_cache[t.trial_id] = float(flops or 0.0)
        return self._cost_cache

    def run(self, detach: bool = False, view: ProgressView | None = None) -> dict[str, int]:
        """Drive the sweep to the end (or, detached, until everything is submitted)."""
        created = self.store.sync(self.sweep)
        if self.plan is None:  # a launcher made without the opened sweep's plan (the launcher contract, tests)
            self.plan = plan_of(self.sweep, self.store)
        plan = self.plan
        view = view or ProgressView(self.sweep, to_add=plan.to_add)
        self.last = plan.start(created)
        for line in self.last.notes:
            view.note(line)
        self.retry_failed(first=True)
        stop = self._stop = _StopOnCtrlC()
        try:
            with stop:
                self._loop(detach, view, stop)
        except KeyboardInterrupt:
            view.note("interrupted: stopping trials; run `ablate sweep` again to resume")
            self.shutdown()
            view.close()
            raise
        view.close()
        return count(self.trials())

    def _step_plan(self, view: ProgressView) -> bool:
        """The plan's pass: it may add trials into free room; whether more may come."""
        assert self.plan is not None
        room = self.capacity() - len(self.active())
        self.last = self.plan.step(self.sweep, room, self.store_views)
        for line in self.last.notes:
            view.note(line)
        return self.last.more

    def store_views(self, sweep: Sweep) -> list[TrialView]:
        """The trials of ``sweep`` as the store sees them now (with what its plans added)."""
        return trial_states(self.store, sweep, self.plan)

    def wait(self, seconds: float) -> None:
        """Sleep between passes, in slices, so a Ctrl-C (:meth:`stopping`) ends the wait within a
        quarter second; a launcher that can tell when a trial ends (its own child processes) also
        returns early then."""
        end = time.monotonic() + seconds
        while not self.stopping() and (left := end - time.monotonic()) > 0:
            time.sleep(min(0.25, left))

    def stopping(self) -> bool:
        """Whether a Ctrl-C asked the running loop to stop (a wait should end now)."""
        stop = self._stop
        return stop is not None and stop.requested

    def _idle_s(self, trials: Sequence[Any]) -> float:
        """How long to wait before the next pass: ``poll_s`` after a pass that saw a trial change state,
        doubling while nothing changes, up to half the heartbeat interval (a live trial's heartbeat must
        keep its pace). An idle controller then costs about one store read every few seconds: 1.35%
        of a core at a pass per second while two trials trained, measured on a real sweep."""
        seen = tuple((v.trial_id, v.state, v.n_attempts) for v in trials)
        most = max(self.poll_s, float(self.sweep.heartbeat["interval_s"]) / 2)
        changed, self._seen = seen != self._seen, seen
        self._idle = self.poll_s if changed else min(most, self._idle * 2)
        return self._idle

    _seen: tuple[Any, ...] = ()
    _idle: float = 0.0
    _last_trials: Sequence[Any] = ()
    _stop: _StopOnCtrlC | None = None  # set while run() drives the loop

    def _loop(self, detach: bool, view: ProgressView, stop: _StopOnCtrlC) -> None:
        settled = False  # a plan that settles (a search): one more pass after the last trial ends, to tell it
        while True:
            with self.store.reader.pass_snapshot():  # one read of the store for the whole pass
                active, more = self._pass(view, stop)
            if detach:
                return
            if not active and not self.busy() and not more:
                # A search tells results in the plan's step, before this read: a trial that ended in between
                # would stay RUNNING in its row study (seen on SLURM, where trials end at any time).
                # One more pass tells it, and makes the best re-runs if the row's search just ended.
                if self.plan is None or not self.plan.settles or settled:
                    return
                settled = True
                continue
            settled = False
            self.wait(self._idle_s(self._last_trials))

    def _pass(self, view: ProgressView, stop: _StopOnCtrlC) -> tuple[bool, bool]:
        """One look at the store and what follows from it: (trials still active, the plan may add more)."""
        stop.check()
        self.poll()
        grace = float(self.sweep.heartbeat["grace_s"])
        for a in self.store.reap(grace, self.alive):
            view.note(f"reaped {a.attrs.get('row')} seed {a.attrs.get('seed')}: {a.attrs.get('failure')}")
        for line in self.retry_failed(first=False):
            view.note(line)
        stop.check()  # not after a Ctrl-C that came while reaping: nothing new may start then
        more = self._step_plan(view)
        self.start(self.waiting())
        trials = self._last_trials = self.trials()
        view.update(trials)
        return any(a.state in ("WAITING", "RUNNING") for v in trials for a in v.attempts), more


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # what stops a controller: Ctrl-C, and a polite kill


class _StopOnCtrlC:
    """Ctrl-C as a flag the loop reads, not an exception raised wherever the main thread happens to be.

    Python's default handler raises KeyboardInterrupt at an arbitrary bytecode: inside a ``__del__``
    or a weakref callback (SQLAlchemy closes pooled connections there; the store opens many) it is
    printed as "Exception ignored" and lost, and the sweep ran on to the end and exited 0 (seen 1 run
    in 5). Between a claim and the spawn of its worker it would also leave a claimed attempt with no
    worker. The flag is checked at the top of each pass, before starting anything, and every quarter second
    of the wait between passes (:meth:`Launcher.wait`), so the sweep stops within about a quarter
    second of a Ctrl-C plus the pass in progress. A second Ctrl-C raises at once
    (a controller stuck in a long call, e.g. waiting for the store's lock).
    """

    def __init__(self) -> None:
        self.requested = False
        self._old: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt

    def __enter__(self) -> _StopOnCtrlC:
        if threading.current_thread() is threading.main_thread():
            self._old = {sig: signal.signal(sig, self._handler) for sig in STOP_SIGNALS}
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in (self._old or {}).items():
            signal.signal(sig, old)
