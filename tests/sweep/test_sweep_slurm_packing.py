"""Packing on SLURM against a real slurmctld: one array task runs ``trials_per_device`` trials at once,
each its own attempt in the store; a requeue resumes each; a packed trial out of memory is retried
alone in a job of its own, with no retry spent.

Skipped unless ``sinfo`` answers. The controller is tests/sweep/fake_controller.py (the fake trainer).
"""

from __future__ import annotations

import subprocess

import pytest
from sweep_harness import ablate_cmd, attempts_by_row, calls, fake_env
from sweep_harness import wait_for as _wait

from ablate.rundir import read_progress
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.loader import load_results

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

LAUNCHER = {"name": "slurm", "cpus_per_task": 2, "mem_gb": 1, "timeout_min": 10, "poll_s": 1, "trials_per_device": 2}
ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={32 * (i + 1)}"]} for i in range(2)]


def _sweep(path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(ablate_cmd("sweep", str(path)), env=fake_env(), capture_output=True, text=True, timeout=300)


def test_one_job_runs_two_trials_at_once_each_its_own_attempt(slurm_cluster, write_sweep):
    path = write_sweep(rows=ROWS, launcher=LAUNCHER, overrides=["train.max_steps=8"], fake={"*": {"step_s": 0.25}})
    done = _sweep(path)
    assert done.returncode == 0, done.stdout + done.stderr
    (a,), (b,) = list(attempts_by_row(path).values())
    job = a.attrs["slurm_job"]
    assert b.attrs["slurm_job"] == job and {a.attrs["token"], b.attrs["token"]} == {f"slurm:{job}:0", f"slurm:{job}:1"}
    assert a.attrs["packed"] == b.attrs["packed"] == 2
    ra, rb = load_results(path)
    ca, cb = calls(ra.run_dir)[0], calls(rb.run_dir)[0]
    assert ca["on_device"] == cb["on_device"] == "2" and ca["threads"]["omp"] == "1"  # 2 CPUs shared by 2
    ends = [c["time"] + r.metrics["wall_time_s"] for c, r in ((ca, ra), (cb, rb))]
    assert max(ca["time"], cb["time"]) < min(ends)  # they ran together


def test_a_requeued_pack_resumes_each_trial_from_its_checkpoint(slurm_cluster, write_sweep):
    path = write_sweep(
        rows=ROWS,
        launcher=LAUNCHER,
        heartbeat={"interval_s": 1, "grace_s": 8},
        overrides=["train.max_steps=60"],
        fake={"*": {"hold_at": 5}},  # both held at step 5 until the requeue's SIGTERM; the rest runs at once
    )
    proc = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        dirs = [t.run_dir for t in load_sweep(path).trials]
        _wait(lambda: all(read_progress(d).get("step", 0) >= 5 for d in dirs), what="both trials at step 5")
        job = list(attempts_by_row(path).values())[0][0].attrs["slurm_job"]
        subprocess.run(["scontrol", "requeue", job], check=True)
        out, _ = proc.communicate(timeout=400)
    finally:
        proc.kill()
    assert proc.returncode == 0, out.decode()
    for attempts, run_dir in zip(list(attempts_by_row(path).values()), dirs):
        assert [(a.attempt, a.state) for a in attempts] == [(0, "COMPLETE")]  # the same attempt, never reaped
        starts = [c["start"] for c in calls(run_dir)]
        assert len(starts) == 2 and starts[1] >= 5


def test_a_packed_trial_out_of_memory_runs_again_alone(slurm_cluster, write_sweep):
    path = write_sweep(
        rows=ROWS,
        launcher=LAUNCHER,
        overrides=["train.max_steps=4"],
        fake={"r0": {"mode": "oom_packed"}},
        max_retries=0,
    )
    done = _sweep(path)
    assert done.returncode == 0, done.stdout + done.stderr
    r0, r1 = list(attempts_by_row(path).values())
    assert [(a.state, a.kind) for a in r0] == [("FAIL", "oom"), ("COMPLETE", None)]
    assert r0[1].attrs["alone"] is True and r0[1].attrs["slurm_job"] != r0[0].attrs["slurm_job"]
    assert r0[1].attrs["token"] == f"slurm:{r0[1].attrs['slurm_job']}"  # a job of its own, not a pack
    assert [c["on_device"] for c in calls(load_sweep(path).trials[0].run_dir)] == ["2", None]
