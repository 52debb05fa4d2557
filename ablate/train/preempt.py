"""Preemption inside a SLURM job: stop at the next step, checkpoint there, leave the trial resumable.

SLURM tells a job to stop with SIGTERM (``scontrol requeue``, a preemption, ``scancel``) and, when the
job asked for it (submitit's ``--signal=USR2@<delay>``), with SIGUSR2 ahead of the time limit. The
sweep's SLURM task calls :func:`install` before it trains; from then on those signals only raise a
flag. The trainer looks at it at every step boundary (:func:`requested`; the real trainer through a
callback in :mod:`ablate.train.trainer`, which also takes SIGTERM back from Lightning's own handler),
writes ``last.ckpt`` at that step and raises :class:`Preempted`. The SLURM task then keeps its claim
and requeues the job when SLURM will not: after SIGUSR2 (the time limit is coming) and after a SIGTERM
that is the time limit itself (:func:`is_time_limit`: no SIGUSR2 came first, e.g. ``signal_delay_s: 0``
or a site that only sends SIGTERM; SLURM never requeues a TIMEOUT job). The requeued job re-enters
the same attempt and resumes from ``last.ckpt``.

Light on purpose (no Lightning import): the sweep tests' fake trainer polls it too.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGUSR2)

_seen: list[int] = []
_installed = False


class Preempted(BaseException):
    """Training stopped on a SLURM stop signal after writing last.ckpt; the trial is to be resumed."""


def _handler(signum: int, frame: Any) -> None:
    _seen.append(signum)  # nothing else here: the main thread may be anywhere (mid-step, mid-write)


def install() -> None:
    """Route SIGTERM and SIGUSR2 to the flag (main thread only: Python handles signals there)."""
    global _installed
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        signal.signal(sig, _handler)
    _installed = True


def reinstall() -> None:
    """Take the signals back after someone else (Lightning's signal connector) replaced the handlers."""
    if _installed:
        install()


def active() -> bool:
    """Whether :func:`install` ran in this process (a SLURM task of a sweep)."""
    return _installed


def requested() -> bool:
    """Whether a stop signal arrived."""
    return bool(_seen)


def signals() -> list[int]:
    """The stop signals received so far, in order."""
    return list(_seen)


def check(where: str = "") -> None:
    """Raise :class:`Preempted` once a stop signal arrived (the caller has checkpointed first)."""
    if _seen:
        name = signal.Signals(_seen[0]).name
        raise Preempted(f"{name} received; stopped{' ' + where if where else ''}")


def reset() -> None:
    """Forget the received signals and restore the default handlers (tests)."""
    global _installed
    _seen.clear()
    if _installed and threading.current_thread() is threading.main_thread():
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
    _installed = False


# slurmctld looks at time limits every 30 s: the SIGTERM of a time limit comes 0-30 s after the job's
# end time (6-22 s seen here). One that comes up to this long before the end time counts too (a site's
# own SIGTERM at the limit, clocks a little apart).
TIME_LIMIT_MARGIN_S = 60.0


@dataclass(frozen=True)
class JobInfo:
    """What slurmctld says about the job while it stops (``squeue -o %T|%r|%e``)."""

    state: str  # COMPLETING once slurmctld is ending it, whatever the cause; RUNNING before
    reason: str  # "TimeLimit" when it ended it at its time limit; "None" for scancel / scontrol requeue
    end_time: float | None  # epoch seconds; set to "now" by a time limit and by scancel alike


def parse_squeue(out: str) -> JobInfo | None:
    """``COMPLETING|TimeLimit|2026-11-24T12:49:18`` (local time) -> JobInfo; None when unreadable."""
    line = out.strip().splitlines()[0] if out.strip() else ""
    parts = [p.strip() for p in line.split("|")]
    if len(parts) != 3 or not parts[0]:
        return None
    try:
        end: float | None = datetime.fromisoformat(parts[2]).timestamp()
    except ValueError:  # N/A, Unknown, NONE
        end = None
    return JobInfo(parts[0].split()[0], parts[1], end)


def env_end_time(value: str | None) -> float | None:
    """``SLURM_JOB_END_TIME`` (epoch seconds, set by SLURM >= 23.02 at the job's start) as a float."""
    try:
        return float(value) if value else None
    except ValueError:
        return None


def is_time_limit(
    now: float, job: JobInfo | None, end_time: float | None = None, margin_s: float = TIME_LIMIT_MARGIN_S
) -> bool:
    """Whether a SIGTERM received at ``now`` is the job's time limit (SLURM will not requeue it).

    ``job`` is slurmctld's answer (None: no answer); ``end_time`` the job's end time from its
    environment (``SLURM_JOB_END_TIME``), used when slurmctld's has none. slurmctld answers for sure:
    a job it ended at its limit reads ``Reason=TimeLimit``; one it is ending for another reason
    (scancel, scontrol requeue, a preemption) reads COMPLETING with another reason - and after scancel
    its end time is "now", so the end time alone would take a cancel for a time limit. A job still
    RUNNING got its SIGTERM from someone else: a time limit when it comes near (or past) the end time.
    """
    if job is not None:
        if job.reason == "TimeLimit" or job.state.startswith("TIMEOUT"):
            return True
        if job.state != "RUNNING":
            return False
        end_time = job.end_time if job.end_time is not None else end_time
    return end_time is not None and now >= end_time - margin_s
