"""The one view of a sweep trial's state: :class:`TrialView` (done | pruned | running | waiting | failed).

A sweep trial (a row at one seed) is one or more attempts in the store (Optuna trials): a crash
leaves a FAIL attempt and a retry adds a new one. What the trial *is* follows from its attempts in
one way only, here: done when any attempt completed, else what the newest attempt says (PRUNED ->
pruned, RUNNING -> running, WAITING or none -> waiting, anything else -> failed). The controller, `ablate status`, the
live progress display and the report all read trials through this view.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ablate.rundir import read_progress
from ablate.sweep.file.spec import Sweep, Trial

STATES = ("done", "pruned", "running", "waiting", "failed")  # pruned: a search trial stopped early (final)

# Failure kinds. Diverged trials are final (rerunning the same seed diverges again); cancelled ones and
# errors of ablate's own checks ("error": a config, data or length error, which would repeat) wait for
# the next `ablate sweep`; the rest (crashes, timeouts, stale workers) are retried up to max_retries.
# "oom": out of device memory, which repeats on the same device - except for a trial that shared its device
# with others (packed): the controller retries it once alone on a device (no retry spent).
FINAL_KINDS = ("diverged", "duplicate")
NO_AUTO_RETRY = ("diverged", "duplicate", "cancelled", "error", "oom")
# Attempts lost from outside the trial: its worker died by a signal without a word ("killed": kill -9,
# a logout), its controller stopped it ("interrupted": Ctrl-C, SIGTERM), or it vanished with its
# controller ("stale"). None is the trial's fault, and each resumes from its checkpoint, so the retry
# spends none of max_retries (:func:`free_retry`) - while the trial keeps making progress: FREE_STALLS
# such losses in a row without a new step (a kernel out-of-memory kill at start-up, a node that drops it
# at once) would repeat, and are retried as crashes from then on.
LOST_KINDS = ("killed", "interrupted", "stale")
FREE_STALLS = 5


# Attributes an attempt is created with, which never change: a retry copies them, and a store read
# fetches them once per attempt (ablate.sweep.store.reads). Written at run time: token, host, pid, heartbeat,
# slurm_job, worker_pid, devices; at the end metrics or failure + failure_kind.
IDENTITY_ATTRS = (
    "ablate_id",
    "attempt",
    "row",
    "group",
    "paper",
    "seed",
    "order",
    "overrides",
    "config",
    "run_dir",
    "wandb_id",
    "search",
    "alone",  # a retry of a packed trial that ran out of memory: it takes a device of its own
    "resumed_at",  # a free retry after a loss from outside: the furthest step its run had reached
    "stalls",  # ... and how many such losses in a row had reached no new step (see FREE_ATTRS)
)
FREE_ATTRS = ("resumed_at", "stalls")  # a free retry's marks: given by free_retry, never copied by a retry


@dataclass
class Attempt:
    """One Optuna trial of a sweep trial: its state and attributes."""

    number: int
    storage_id: int
    state: str  # WAITING | RUNNING | COMPLETE | FAIL | PRUNED
    attrs: dict[str, Any]

    @property
    def ablate_id(self) -> str:
        return str(self.attrs.get("ablate_id", ""))

    @property
    def attempt(self) -> int:
        return _number(self.attrs.get("attempt"), 0, int)

    @property
    def kind(self) -> str | None:
        return self.attrs.get("failure_kind")

    def silent_s(self, now: float | None = None) -> float:
        """Seconds since the last heartbeat (0 when it never beat: claims always beat first)."""
        now = time.time() if now is None else now
        return now - _number(self.attrs.get("heartbeat"), now, float)

    def malformed(self) -> list[str]:
        """Attributes of this attempt with a type ablate never writes (a store from another version or
        edited by hand), each as "name (type)"; readers treat them as absent."""
        bad = []
        for key, types in _ATTR_TYPES.items():
            value = self.attrs.get(key)
            if value is not None and (not isinstance(value, types) or isinstance(value, bool) and types != (bool,)):
                bad.append(f"{key} ({type(value).__name__})")
        return bad


# The types ablate writes for the attributes it reads back (anything else reads as absent).
_ATTR_TYPES: dict[str, tuple[type, ...]] = {
    "attempt": (int,),
    "heartbeat": (int, float),
    "metrics": (dict,),
    "failure": (str,),
    "failure_kind": (str,),
    "run_dir": (str,),
}


def _number(value: Any, default: Any, kind: type) -> Any:
    """``kind(value)``, or ``default`` when the store holds something else (see Attempt.malformed)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return kind(value)
    return default


def decide(attempts: Sequence[Attempt]) -> tuple[str, Attempt | None]:
    """(state, the attempt that decides it: the completed one, else the newest) of a trial's attempts."""
    if not attempts:
        return "waiting", None
    for a in attempts:
        if a.state == "COMPLETE":
            return "done", a
    last = attempts[-1]
    return {"RUNNING": "running", "WAITING": "waiting", "PRUNED": "pruned"}.get(last.state, "failed"), last


@dataclass
class TrialView:
    """A trial of the sweep file and what the store knows about it."""

    trial: Trial
    attempts: tuple[Attempt, ...]  # oldest first (retries and requeues resume the same run dir)
    state: str  # done | pruned | running | waiting | failed
    deciding: Attempt | None  # the completed attempt, else the newest (None: not in the store yet)

    @classmethod
    def of(cls, trial: Trial, attempts: Iterable[Attempt] = ()) -> TrialView:
        attempts = tuple(attempts)
        state, deciding = decide(attempts)
        return cls(trial, attempts, state, deciding)

    # -- the trial's identity (from the sweep file) ------------------------------------------------
    @property
    def trial_id(self) -> str:
        return self.trial.trial_id

    @property
    def row(self) -> str:
        return self.trial.row

    @property
    def group(self) -> str:
        return self.trial.group

    @property
    def paper(self) -> str | None:
        return self.trial.paper

    @property
    def seed(self) -> int:
        return self.trial.seed

    @property
    def overrides(self) -> list[str]:
        return list(self.trial.overrides)

    @property
    def config(self) -> dict[str, Any]:
        return self.trial.config

    # -- what the store knows ----------------------------------------------------------------------
    @property
    def attrs(self) -> Mapping[str, Any]:
        return self.deciding.attrs if self.deciding is not None else {}

    @property
    def n_attempts(self) -> int:
        return len(self.attempts)

    @property
    def latest(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def metrics(self) -> dict[str, Any]:
        """The trainer's final metrics (val/ppl, val/bleu, test/*, params, ...) once done, else {}
        (a pruned search trial: the metric and step it was pruned at)."""
        metrics = self.attrs.get("metrics")
        return dict(metrics) if self.state in ("done", "pruned") and isinstance(metrics, Mapping) else {}

    @property
    def failure(self) -> str | None:
        failure = self.attrs.get("failure") if self.state == "failed" else None
        return None if failure is None else str(failure)

    @property
    def run_dir(self) -> str:
        run_dir = self.attrs.get("run_dir")
        return run_dir if isinstance(run_dir, str) else self.trial.run_dir

    def malformed(self) -> list[str]:
        """The attributes of its attempts that the store holds with a foreign type (read as absent)."""
        return sorted({bad for a in self.attempts for bad in a.malformed()})

    @functools.cached_property
    def params(self) -> int | None:
        """Trainable parameters: measured when done, else the closed form from the config."""
        measured = self.metrics.get("params")
        if isinstance(measured, (int, float)) and not isinstance(measured, bool):
            return int(measured)
        from ablate.config import model_section
        from ablate.config.size import count_parameters  # closed forms: no torch

        return int(count_parameters(model_section(self.config["model"]), self.config["data"]["vocab_size"]))

    def progress(self) -> dict[str, Any]:
        """The run's progress.json (step, max_steps, val/ppl, elapsed_s, eta_s) once it started, else {}."""
        return read_progress(self.run_dir) if self.state != "waiting" else {}


def views(sweep: Sweep, by_trial: Mapping[str, Sequence[Attempt]]) -> list[TrialView]:
    """One view per trial of the sweep, in file order, from the store's attempts per ablate id."""
    return [TrialView.of(t, by_trial.get(t.trial_id, ())) for t in sweep.trials]


def count(trials: Iterable[TrialView]) -> dict[str, int]:
    """Trials per state, every state present (in STATES order)."""
    out = dict.fromkeys(STATES, 0)
    for v in trials:
        out[v.state] += 1
    return out


def free_retry(last: Attempt) -> dict[str, Any] | None:
    """The attributes of a retry that spends no retry, for an attempt lost from outside (``LOST_KINDS``)
    while its trial still makes progress; None when the retry must spend one (see ``FREE_STALLS``)."""
    if last.kind not in LOST_KINDS:
        return None
    step = int(read_progress(last.attrs.get("run_dir") or "").get("step") or 0)
    best = int(last.attrs.get("resumed_at", -1))  # the furthest step any earlier loss had reached
    # Progress is a step beyond the furthest reached: killed between two checkpoints again and again, a
    # run re-logs steps it had logged before, and those do not count (the stalls then run out).
    stalls = 0 if step > best else int(last.attrs.get("stalls", 0)) + 1
    return None if stalls >= FREE_STALLS else {"resumed_at": max(step, best), "stalls": stalls}
