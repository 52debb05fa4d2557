"""A SIGTERM that is the job's time limit (no SIGUSR2 before it) vs one that is not, with no SLURM:
the decision (:func:`ablate.sweep.launch.slurm_queue.is_time_limit`, fed with what squeue printed on the local
cluster in each case), the task's own requeue after it (SLURM client commands faked), and the
controller leaving a TIMEOUT job alone while it may still requeue itself.

The real-cluster counterpart is in test_sweep_preempt.py (``signal_delay_s: 0``).
"""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import datetime
from typing import Any

import pytest

from ablate.sweep.file.spec import load_sweep
from ablate.sweep.launch import slurm_job
from ablate.sweep.launch.slurm import SlurmLauncher
from ablate.sweep.launch.slurm_queue import JobInfo, env_end_time, is_time_limit, parse_squeue
from ablate.sweep.store.store import SweepStore
from ablate.train import preempt

NOW = 1_800_000_000.0


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t).isoformat(timespec="seconds")  # squeue's %e: local time


def test_squeue_lines_are_read():
    assert parse_squeue(f"COMPLETING|TimeLimit|{_stamp(NOW)}\n") == JobInfo("COMPLETING", "TimeLimit", NOW)
    assert parse_squeue("RUNNING|None|N/A") == JobInfo("RUNNING", "None", None)
    assert parse_squeue("") is None and parse_squeue("slurm_load_jobs error") is None
    assert env_end_time("1800000060") == NOW + 60 and env_end_time(None) is None and env_end_time("x") is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # What squeue printed inside the job's SIGTERM handler on the local cluster (slurm 22.05):
        (f"COMPLETING|TimeLimit|{_stamp(NOW)}", True),  # time limit (SIGTERM 7-22 s after it)
        (f"COMPLETING|None|{_stamp(NOW)}", False),  # scancel: the end time is "now" too
        (f"COMPLETING|None|{_stamp(NOW + 300)}", False),  # scontrol requeue: a new 5-minute end time
        (f"COMPLETING|Preempted|{_stamp(NOW)}", False),  # a preemption: SLURM requeues or cancels it
        # Still RUNNING: the SIGTERM came from someone else (a site's at the limit): the end time decides.
        (f"RUNNING|None|{_stamp(NOW + 20)}", True),
        (f"RUNNING|None|{_stamp(NOW - 5)}", True),
        (f"RUNNING|None|{_stamp(NOW + 600)}", False),
        ("TIMEOUT|None|N/A", True),
    ],
)
def test_a_sigterm_is_a_time_limit_only_when_slurmctld_says_so(line, expected):
    assert is_time_limit(NOW, parse_squeue(line)) is expected


def test_without_an_answer_the_environments_end_time_decides():
    assert is_time_limit(NOW, None, NOW + 30) and is_time_limit(NOW, None, NOW - 25)
    assert not is_time_limit(NOW, None, NOW + 3600) and not is_time_limit(NOW, None, None)
    assert is_time_limit(NOW, JobInfo("RUNNING", "None", None), NOW + 10)  # squeue had no end time


class _Slurm:
    """Fake ``subprocess.run`` for squeue / scontrol: answers given per command name, calls recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, **answers: list[tuple[int, str, str]]) -> None:
        self.answers, self.calls = answers, []
        monkeypatch.setattr(slurm_job.subprocess, "run", self)
        monkeypatch.setenv("SLURM_JOB_ID", "77")
        monkeypatch.delenv("SLURM_PROCID", raising=False)
        monkeypatch.delenv("SLURM_JOB_END_TIME", raising=False)

    def __call__(self, cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(cmd[:2])
        rc, out, err = self.answers[cmd[0]].pop(0)
        return subprocess.CompletedProcess(cmd, rc, out, err)


def test_sigterm_at_the_time_limit_requeues_the_job(monkeypatch):
    # The first squeue is killed by the stop's second SIGTERM (seen in a bash trap): asked again.
    now = _stamp(time.time())
    fake = _Slurm(monkeypatch, squeue=[(-15, "", ""), (0, f"COMPLETING|TimeLimit|{now}\n", "")], scontrol=[(0, "", "")])
    assert slurm_job.requeue_if_needed([signal.SIGTERM, signal.SIGTERM]) is None
    assert fake.calls == [["squeue", "-h"], ["squeue", "-h"], ["scontrol", "requeue"]]


@pytest.mark.parametrize("why", ["scancel", "scontrol requeue"])
def test_other_sigterms_are_left_to_slurm(monkeypatch, why):
    end = time.time() + (0 if why == "scancel" else 300)
    fake = _Slurm(monkeypatch, squeue=[(0, f"COMPLETING|None|{_stamp(end)}\n", "")])
    assert slurm_job.requeue_if_needed([signal.SIGTERM]) is None
    assert fake.calls == [["squeue", "-h"]]  # no requeue: it would undo a cancel


def test_sigusr2_requeues_without_asking(monkeypatch):
    fake = _Slurm(monkeypatch, scontrol=[(0, "", "")])
    assert slurm_job.requeue_if_needed([signal.SIGUSR2, signal.SIGTERM]) is None
    assert fake.calls == [["scontrol", "requeue"]]


def test_only_rank_0_requeues(monkeypatch):
    fake = _Slurm(monkeypatch)
    monkeypatch.setenv("SLURM_PROCID", "1")
    assert slurm_job.requeue_if_needed([signal.SIGUSR2]) is None and fake.calls == []


def test_a_refused_requeue_gives_one_line(monkeypatch):
    refused = "scontrol: error: Requeue of JobId=77 failed: Requested operation is presently disabled"
    _Slurm(monkeypatch, squeue=[(1, "", "no controller")], scontrol=[(1, "", refused + "\n")])
    monkeypatch.setenv("SLURM_JOB_END_TIME", str(int(time.time()) - 10))  # squeue failed: the env decides
    line = slurm_job.requeue_if_needed([signal.SIGTERM])
    assert line is not None and "\n" not in line
    assert line.startswith("SIGTERM at the time limit: checkpointed, but scontrol requeue 77 failed")
    assert "presently disabled" in line and "rerun" in line


def test_the_controller_waits_for_a_timed_out_job_to_requeue_itself(write_sweep, monkeypatch):
    sweep = load_sweep(write_sweep(launcher={"name": "slurm"}, heartbeat={"interval_s": 1, "grace_s": 8}))
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    (a,) = store.attempts()
    assert store.claim(a.storage_id, "slurm:5")
    store.set_attr(a.storage_id, "slurm_job", "5")
    launcher = SlurmLauncher(sweep, store)
    monkeypatch.setattr(launcher, "_refresh_states", lambda ids: launcher._states.update({"5": "TIMEOUT"}))
    launcher.poll()  # fresh heartbeat: the job may be checkpointing and requeueing itself
    assert store.get(a.storage_id).state == "RUNNING"
    store.set_attr(a.storage_id, "heartbeat", time.time() - 60)
    launcher.poll()  # silent past the grace period: it did not come back
    got = store.get(a.storage_id)
    assert (got.state, got.kind, got.attrs["failure"]) == ("FAIL", "timeout", "SLURM job 5 TIMEOUT")


def _stopped_by_the_time_limit(cfg: Any, output_dir: str, **kwargs: Any) -> None:
    """A trial function that gets SLURM's SIGTERM and stops at a step, as the trainers do."""
    preempt._handler(signal.SIGTERM, None)
    preempt.check("at step 3")


def test_a_refused_requeue_fails_the_attempt_as_a_timeout(write_sweep, monkeypatch):
    sweep = load_sweep(write_sweep(launcher={"name": "slurm"}))
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    (a,) = store.attempts()
    store.set_attr(a.storage_id, "slurm_job", "77")
    _Slurm(monkeypatch, squeue=[(0, f"COMPLETING|TimeLimit|{_stamp(time.time())}", "")], scontrol=[(1, "", "denied")])
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "77")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "0")
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    monkeypatch.delenv("SLURM_CPUS_ON_NODE", raising=False)
    monkeypatch.setattr("ablate.sweep.launch.worker.slurm_trainer_kwargs", lambda: {})  # no Lightning import
    task = slurm_job.SlurmTrial(store.url, store.study_name, a.storage_id, f"{__name__}:_stopped_by_the_time_limit")
    try:
        with pytest.raises(SystemExit):
            task()
    finally:
        preempt.reset()
    got = store.get(a.storage_id)
    assert (got.state, got.kind, got.attrs["requeues"]) == ("FAIL", "timeout", 1)
    assert got.attrs["failure"] == (
        "SIGTERM at the time limit: checkpointed, but scontrol requeue 77 failed (denied); "
        "a rerun of the sweep retries it"
    )
