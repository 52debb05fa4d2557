"""Preemption inside a SLURM job: stop at the next step, checkpoint there, leave the trial resumable.

SLURM tells a job to stop with SIGTERM (``scontrol requeue``, a preemption, ``scancel``) and, when the
job asked for it (submitit's ``--signal=USR2@<delay>``), with SIGUSR2 ahead of the time limit. The
sweep's SLURM task calls :func:`install` before it trains; from then on those signals only raise a
flag. The trainer looks at it at every step boundary (:func:`requested`; the real trainer through a
callback in :mod:`ablate.train.trainer`, which also takes SIGTERM back from Lightning's own handler),
writes ``last.ckpt`` at that step and raises :class:`Preempted`. The SLURM task then keeps its claim
and requeues the job when SLURM will not: after SIGUSR2 (the time limit is coming) and after a SIGTERM
that is the time limit itself (:func:`ablate.sweep.launch.slurm_queue.is_time_limit`: no SIGUSR2 came
first, e.g. ``signal_delay_s: 0`` or a site that only sends SIGTERM; SLURM never requeues a TIMEOUT
job). The requeued job re-enters the same attempt and resumes from ``last.ckpt``.

Light on purpose (no Lightning import): the sweep tests' fake trainer polls it too.
"""

from __future__ import annotations

import signal
import threading
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
