"""What slurmctld says about a job that is being stopped: was its SIGTERM the time limit?

The SLURM task asks ``squeue`` when a SIGTERM arrives (:mod:`ablate.sweep.launch.slurm`): SLURM never
requeues a job ended at its time limit, so then the task requeues itself and keeps its claim. Pure:
parsing and the decision, tested on what squeue printed on a real cluster.
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
