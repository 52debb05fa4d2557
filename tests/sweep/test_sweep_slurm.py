"""The SLURM launcher against a real slurmctld: arrays, requeue -> resume, scancel -> reported, --detach.

Skipped unless ``sinfo`` answers (e.g. start the throw-away cluster of the shared tools and export
its SLURM_CONF). The controller is tests/sweep/fake_controller.py, whose SLURM launcher gives each
array task the fake trainer (``trial_fn``); jobs inherit this environment (PYTHONPATH) to import it.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from sweep_harness import ablate_cmd, calls, fake_env
from sweep_harness import wait_for as _wait

from ablate.errors import SweepError
from ablate.rundir import read_progress
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.loader import load_results
from ablate.sweep.store.store import SweepStore

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

LAUNCHER = {"name": "slurm", "cpus_per_task": 1, "mem_gb": 1, "timeout_min": 10, "poll_s": 1}


def _attempt(path):
    sweep = load_sweep(path)
    by = SweepStore.for_sweep(sweep).by_trial()
    return [by.get(t.trial_id, []) for t in sweep.trials]


def test_slurm_sweep_runs_an_array_with_lightning_told_not_to_requeue(slurm_cluster, write_sweep):
    rows = [{"name": "a", "group": "A"}, {"name": "b", "group": "A", "overrides": ["model.d_ff=64"]}]
    path = write_sweep(rows=rows, launcher=LAUNCHER)
    done = subprocess.run(ablate_cmd("sweep", str(path)), env=fake_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = load_results(path)
    assert [r.state for r in results] == ["done", "done"]
    for r, attempts in zip(results, _attempt(path)):
        (a,) = attempts
        assert "_" in a.attrs["slurm_job"] and a.attrs["token"] == f"slurm:{a.attrs['slurm_job']}"
        assert [c["plugins"] for c in calls(r.run_dir)] == [["SLURMEnvironment"]]


def test_requeued_job_resumes_from_its_checkpoint(slurm_cluster, write_sweep):
    path = write_sweep(
        rows=[{"name": "a", "group": "A"}],
        launcher=LAUNCHER,
        heartbeat={"interval_s": 1, "grace_s": 8},
        overrides=["train.max_steps=60"],
        fake={"*": {"hold_at": 5}},  # held at step 5 until the requeue's SIGTERM; the rest runs at once
    )
    proc = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        run_dir = load_sweep(path).trials[0].run_dir
        _wait(lambda: read_progress(run_dir).get("step", 0) >= 5, what="step 5")
        job = _attempt(path)[0][0].attrs["slurm_job"]
        subprocess.run(["scontrol", "requeue", job], check=True)
        out, _ = proc.communicate(timeout=400)
    finally:
        proc.kill()
    assert proc.returncode == 0, out.decode()
    (attempts,) = _attempt(path)
    assert [(a.attempt, a.state) for a in attempts] == [(0, "COMPLETE")]  # same attempt, never reaped
    starts = [c["start"] for c in calls(run_dir)]
    assert len(starts) == 2 and starts[1] >= 5 and len({c["wandb_id"] for c in calls(run_dir)}) == 1
    assert load_results(path)[0].metrics["resumed_from"] == starts[1]


def test_detach_then_scancel_is_reported_as_cancelled(slurm_cluster, write_sweep):
    path = write_sweep(
        rows=[{"name": "a", "group": "A"}],
        launcher=LAUNCHER,
        overrides=["train.max_steps=200"],
        fake={"*": {"hold_at": 2}},  # held at step 2 until scancel ends it
    )
    t0 = time.time()
    sub = subprocess.run(
        ablate_cmd("sweep", str(path), "--detach"), env=fake_env(), capture_output=True, text=True, timeout=120
    )
    assert sub.returncode == 0 and "submitted 1 job(s)" in sub.stdout, sub.stdout + sub.stderr
    assert time.time() - t0 < 60  # it does not wait for the trial
    run_dir = load_sweep(path).trials[0].run_dir
    _wait(lambda: read_progress(run_dir).get("step", 0) >= 2, what="the detached trial to run")
    job = _attempt(path)[0][0].attrs["slurm_job"]
    subprocess.run(["scancel", job], check=True)
    again = subprocess.run(ablate_cmd("sweep", str(path)), env=fake_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr
    (attempts,) = _attempt(path)
    assert [(a.state, a.kind) for a in attempts] == [("FAIL", "cancelled")]
    assert f"SLURM job {job} CANCELLED" in attempts[0].attrs["failure"]
    status = subprocess.run(ablate_cmd("status", str(path)), env=fake_env(), capture_output=True, text=True)
    assert "CANCELLED" in status.stdout and "1 failed" in status.stdout


def _kill_in_start_up(path) -> str:
    """SIGKILL the trial's job as soon as SLURM runs it: the worker is still starting (interpreter,
    imports), before any handler of ablate's is installed, so nothing of it can record the stop."""
    job = None

    def running() -> bool:
        nonlocal job
        try:
            attempts = _attempt(path)[0]
        except SweepError:  # the controller has not written its store yet
            return False
        job = attempts[-1].attrs.get("slurm_job") if attempts else None
        if not job:
            return False
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout
        return "RUNNING" in out

    _wait(running, what="the job to start")
    subprocess.run(["scancel", "--signal=KILL", "--full", job], check=True)
    _wait(
        lambda: "RUNNING" not in subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout,
        what="the killed job to leave the queue",
    )
    return job


def test_a_job_killed_in_its_start_up_is_never_left_running_detached(slurm_cluster, write_sweep):
    path = write_sweep(rows=[{"name": "a", "group": "A"}], launcher=LAUNCHER, heartbeat={"interval_s": 1, "grace_s": 8})
    sub = subprocess.run(
        ablate_cmd("sweep", str(path), "--detach"), env=fake_env(), capture_output=True, text=True, timeout=120
    )
    assert sub.returncode == 0, sub.stdout + sub.stderr
    job = _kill_in_start_up(path)
    status = ""
    for _ in range(60):  # sacct learns the job's end within seconds of it
        status = subprocess.run(ablate_cmd("status", str(path)), env=fake_env(), capture_output=True, text=True).stdout
        if "1 failed" in status:
            break
        time.sleep(1)
    (attempts,) = _attempt(path)
    assert [a.state for a in attempts] == ["FAIL"], status
    assert f"SLURM job {job}" in attempts[0].attrs["failure"] and "1 failed" in status, status


def test_a_job_killed_in_its_start_up_is_recorded_by_its_controller(slurm_cluster, write_sweep):
    """With a controller: it sees the job end through sacct and records it at once (a kill from outside
    is a cancellation: recorded with its reason, left for the next `ablate sweep`, not retried now)."""
    path = write_sweep(rows=[{"name": "a", "group": "A"}], launcher=LAUNCHER, heartbeat={"interval_s": 1, "grace_s": 8})
    cmd = ablate_cmd("sweep", str(path))
    proc = subprocess.Popen(cmd, env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        job = _kill_in_start_up(path)
        out, _ = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 1, out.decode()
    (attempts,) = _attempt(path)
    assert [(a.state, a.kind) for a in attempts] == [("FAIL", "cancelled")], out.decode()
    assert f"SLURM job {job} CANCELLED" in attempts[0].attrs["failure"]
