"""The Ray launcher against a real local Ray cluster (``ray start --head``, the ``ray_cluster`` fixture).

The controller is tests/sweep/fake_controller.py, whose Ray launcher starts each job with the fake
trainer (``trial_fn``); the jobs get this process's PYTHONPATH (the launcher passes it) to import it.
Covered: a 4-trial sweep end to end; a job stopped (``ray job stop``) or its worker killed (kill -9)
mid-training resumes from its checkpoint and completes once; a controller killed and rerun adopts
the running job; two controllers run every trial once; --detach then ``ablate status``; a cluster lost
mid-sweep (one line, its running trials marked lost, a rerun resumes them); a trial
asking more than the cluster has is refused before anything is stored.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from sweep_harness import ablate_cmd, attempt_marks, calls, fake_env, release, two_controllers
from sweep_harness import wait_for as _wait

from ablate.errors import SweepError
from ablate.rundir import read_progress
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.loader import load_results
from ablate.sweep.store.store import SweepStore

pytestmark = [pytest.mark.ray, pytest.mark.integration]

LAUNCHER = {"name": "ray", "poll_s": 0.5}
ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={32 * (i + 1)}"]} for i in range(4)]


def _first(path):
    sweep = load_sweep(path)
    try:
        return SweepStore.for_sweep(sweep).by_trial().get(sweep.trials[0].trial_id, [])
    except SweepError:  # the controller has not written its store yet
        return []


def _sweep(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(ablate_cmd(*args), env=fake_env(), capture_output=True, text=True, timeout=timeout)


def test_four_trials_run_as_ray_jobs_once_each(ray_cluster, write_sweep):
    path = write_sweep(rows=ROWS, launcher=LAUNCHER)
    t0 = time.monotonic()
    done = _sweep("sweep", str(path))
    took = time.monotonic() - t0
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(v == [(0, "COMPLETE", None)] for v in attempt_marks(path).values()), attempt_marks(path)
    sweep = load_sweep(path)
    by = SweepStore.for_sweep(sweep).by_trial()
    for t in sweep.trials:
        (a,) = by[t.trial_id]
        assert a.attrs["token"] == f"ray:{a.attrs['ray_job']}" and a.attrs["ray_job"].startswith("ablate-t-")
        assert len(calls(t.run_dir)) == 1 and calls(t.run_dir)[0]["threads"]["omp"] == "1"
    print(f"4 fake trials on Ray: {took:.1f} s")


@pytest.mark.parametrize("how", ["ray job stop", "kill -9"])
def test_a_stopped_or_killed_job_resumes_from_its_checkpoint_and_completes_once(ray_cluster, write_sweep, how):
    # held at step 4 until stopped or killed; the retry trains the rest at once
    path = write_sweep(rows=ROWS[:1], launcher=LAUNCHER, overrides=["train.max_steps=40"], fake={"*": {"hold_at": 4}})
    proc = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        run_dir = load_sweep(path).trials[0].run_dir
        _wait(lambda: read_progress(run_dir).get("step", 0) >= 4, what="step 4")
        if how == "kill -9":
            os.kill(calls(run_dir)[0]["pid"], signal.SIGKILL)
        else:
            from ray.job_submission import JobSubmissionClient

            JobSubmissionClient("auto").stop_job(_first(path)[0].attrs["ray_job"])
        out, _ = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, out.decode()
    (attempts,) = attempt_marks(path).values()
    kind = "interrupted" if how == "ray job stop" else "crashed"
    assert attempts == [(0, "FAIL", kind), (1, "COMPLETE", None)]
    starts = [c["start"] for c in calls(run_dir)]
    assert len(starts) == 2 and starts[1] >= 4  # the retry resumed from the checkpoint
    assert len({c["wandb_id"] for c in calls(run_dir)}) == 1  # one W&B run across the retry


def test_a_killed_controller_rerun_adopts_the_running_job(ray_cluster, write_sweep):
    path = write_sweep(rows=ROWS[:1], launcher=LAUNCHER, overrides=["train.max_steps=40"], fake={"*": {"step_s": 0.25}})
    first = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    run_dir = load_sweep(path).trials[0].run_dir
    try:
        _wait(lambda: read_progress(run_dir).get("step", 0) >= 3, what="step 3")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    again = _sweep("sweep", str(path))
    assert again.returncode == 0, again.stdout + again.stderr
    assert list(attempt_marks(path).values()) == [[(0, "COMPLETE", None)]]
    assert len(calls(run_dir)) == 1  # the job trained on; nothing was started twice


def test_two_controllers_run_every_trial_once(ray_cluster, write_sweep):
    path = write_sweep(rows=ROWS, launcher=LAUNCHER, overrides=["train.max_steps=4"], fake={"*": {"step_s": 0.2}})
    two_controllers(path)
    assert all(v == [(0, "COMPLETE", None)] for v in attempt_marks(path).values()), attempt_marks(path)
    assert all(len(calls(r.run_dir)) == 1 for r in load_results(path))


def test_detach_submits_and_status_follows_the_jobs(ray_cluster, write_sweep):
    # r0 waits at step 2 until status has seen it run, then is released
    path = write_sweep(rows=ROWS[:2], launcher=LAUNCHER, overrides=["train.max_steps=40"], fake={"r0": {"hold_at": 2}})
    sub = _sweep("sweep", str(path), "--detach", timeout=120)
    assert sub.returncode == 0 and "submitted 2 job(s): ablate-t-" in sub.stdout, sub.stdout + sub.stderr
    run_dir = load_sweep(path).trials[0].run_dir
    _wait(lambda: read_progress(run_dir).get("step", 0) >= 2, what="the detached trial to run")
    running = _sweep("status", str(path), timeout=60)
    job = _first(path)[0].attrs["ray_job"]
    assert f"job: r0 seed 1: Ray job {job} RUNNING" in running.stdout, running.stdout + running.stderr
    release(run_dir)
    _wait(lambda: all(r.state == "done" for r in load_results(path)), what="the detached jobs to finish")
    status = _sweep("status", str(path), timeout=60)
    assert status.returncode == 0 and "2 done" in status.stdout and "job:" not in status.stdout, status.stdout


@pytest.mark.parametrize(
    ("launcher", "said"),
    [
        ({"devices_per_trial": 64}, "asks num_cpus=64 per trial, which no node of the cluster has"),
        ({"memory_gb": 100000}, "asks num_cpus=1, memory=1.07374e+14 per trial"),
    ],
)
def test_a_trial_the_cluster_cannot_hold_is_refused_before_anything_is_stored(ray_cluster, write_sweep, launcher, said):
    path = write_sweep(rows=ROWS[:1], launcher={**LAUNCHER, **launcher})
    done = _sweep("sweep", str(path), timeout=120)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert not SweepStore.for_sweep(load_sweep(path)).exists()


def test_a_gpu_trial_on_a_cluster_without_gpus_is_refused(ray_cluster, write_sweep):
    path = write_sweep(rows=ROWS[:1], launcher=LAUNCHER, overrides=["trainer.accelerator=gpu"])
    done = _sweep("sweep", str(path), timeout=120)
    assert done.returncode == 2 and "num_gpus=1" in done.stderr and "no node of the cluster" in done.stderr, done.stderr


def test_packed_trials_ask_a_share_of_a_device_and_out_of_memory_retries_alone(ray_cluster, write_sweep):
    path = write_sweep(
        rows=ROWS[:2],
        launcher={**LAUNCHER, "trials_per_device": 2},
        overrides=["train.max_steps=4"],
        fake={"r0": {"mode": "oom_packed"}},
        max_retries=0,
    )
    done = _sweep("sweep", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = load_sweep(path)
    by = SweepStore.for_sweep(sweep).by_trial()
    r0, r1 = (by[t.trial_id] for t in sweep.trials)
    assert [(a.state, a.kind) for a in r0] == [("FAIL", "oom"), ("COMPLETE", None)]
    assert r0[0].attrs["packed"] == 2 and r0[1].attrs["alone"] is True and r1[0].attrs["packed"] == 2
    assert [c["on_device"] for c in calls(sweep.trials[0].run_dir)] == ["2", "1"]
    assert "retrying r0 seed 1 alone on a device" in done.stdout + done.stderr


def test_ctrl_c_stops_the_jobs_it_submitted_and_a_rerun_resumes(ray_cluster, write_sweep):
    # held at step 3 until the job is stopped; the rerun trains the rest at once
    path = write_sweep(rows=ROWS[:1], launcher=LAUNCHER, overrides=["train.max_steps=40"], fake={"*": {"hold_at": 3}})
    proc = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    run_dir = load_sweep(path).trials[0].run_dir
    try:
        _wait(lambda: read_progress(run_dir).get("step", 0) >= 3, what="step 3")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "interrupted" in out.decode(), out.decode()
    (attempts,) = attempt_marks(path).values()
    assert attempts == [(0, "FAIL", "interrupted")]
    from ray.job_submission import JobSubmissionClient

    assert JobSubmissionClient("auto").get_job_status(_first(path)[0].attrs["ray_job"]).value in ("STOPPED", "FAILED")
    again = _sweep("sweep", str(path))
    assert again.returncode == 0, again.stdout + again.stderr
    starts = [c["start"] for c in calls(run_dir)]
    assert len(starts) == 2 and starts[1] >= 3  # resumed from its checkpoint


def _ray(*args: str) -> None:
    import shutil
    import sys
    from pathlib import Path

    ray = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    subprocess.run([ray, *args], capture_output=True, timeout=180, check=False)


def test_a_lost_cluster_is_one_line_and_a_rerun_on_a_live_one_resumes(ray_cluster, write_sweep):
    """`ray stop --force` mid-sweep (the tier's shared cluster, started again after with the same
    settings): the controller ends in one line with the running trials marked lost, not RUNNING."""
    path = write_sweep(
        rows=ROWS[:2],
        launcher=LAUNCHER,
        overrides=["train.max_steps=6"],
        fake={"*": {"hold_at": 2}},
        heartbeat={"interval_s": 1, "grace_s": 120},  # as by default: the reaper would not see them for minutes
    )
    run_dirs = [t.run_dir for t in load_sweep(path).trials]
    ctl = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait(lambda: all(read_progress(r).get("step", 0) >= 2 for r in run_dirs), what="both trials at their hold")
        _ray("stop", "--force")
        _, err = ctl.communicate(timeout=180)
    finally:
        if ctl.poll() is None:
            ctl.kill()
        for r in run_dirs:
            release(r)  # a worker that outlived its cluster would hold no longer
        _ray("start", "--head", "--num-cpus", "4", "--num-gpus", "0", "--disable-usage-stats")
    last = err.strip().splitlines()[-1]
    assert ctl.returncode == 2 and last.startswith("error: "), err[-2000:]
    assert "has not answered for 30 s" in last and "2 running trial(s) marked lost" in last, last
    assert not [a for a in SweepStore.for_sweep(load_sweep(path)).attempts() if a.state == "RUNNING"]
    again = _sweep("sweep", str(path))
    assert again.returncode == 0, again.stdout + again.stderr
    for marks in attempt_marks(path).values():  # killed with the cluster, then resumed, no retry spent
        assert [m[1:] for m in marks] == [("FAIL", "killed"), ("COMPLETE", None)], marks
