"""What SLURM's tools say about a job: was its SIGTERM the time limit (squeue), how did it end (sacct)?

The SLURM task asks ``squeue`` when a SIGTERM arrives (:mod:`ablate.sweep.launch.slurm`): SLURM never
requeues a job ended at its time limit, so then the task requeues itself and keeps its claim. The
controller reads ``sacct`` to learn how a job ended. Pure: parsing and the decision, tested on what the
tools printed on a real cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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


def exit_signal(code: str) -> int | None:
    """The signal of sacct's ``ExitCode`` (``exit:signal``, ``0:9`` for kill -9), None for none or junk."""
    _, _, sig = code.strip().partition(":")
    return int(sig) if sig.isdigit() and int(sig) > 0 else None


def parse_sacct(out: str) -> dict[str, tuple[str, int | None]]:
    """Each job's (state, signal) from ``sacct -n -P -o JobID,State,ExitCode,DerivedExitCode``: the state
    of the job's own line, the signal from its codes or else from any of its steps' (``10_1.0``).

    The steps are read because a task killed by a signal does not always show it in the job's codes: on
    SLURM 22.05 a kill -9 of the task left one job ``FAILED 9:0`` with derived code ``0:0`` (srun
    force-terminated the step, ``CANCELLED 0:9``) while the same kill of three others gave ``0:9``.
    Without the step the kill read as a crash and spent a retry."""
    ended: dict[str, tuple[str, int | None]] = {}
    for line in out.splitlines():
        job, state, code, derived = [part.strip() for part in (line.split("|") + ["", "", ""])[:4]]
        if not job or not state:
            continue
        base, step = job.partition(".")[0], "." in job
        sig = exit_signal(code) or exit_signal(derived)
        if not step:
            ended[base] = (state.split()[0], sig)
        elif base in ended and ended[base][1] is None and sig is not None:
            ended[base] = (ended[base][0], sig)
    return ended


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
