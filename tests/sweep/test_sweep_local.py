"""The local launcher end to end with real subprocess workers (the fake trainer from conftest).

Reliability: kill -9 of a trial, two controllers at once, Ctrl-C and resume, NaN, re-run = no-op.
All multi-process: the integration tier (`pytest -m integration`).
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from sweep_harness import ablate_cmd, attempt_marks, calls, fake_env, two_controllers
from sweep_harness import wait_for as _wait

from ablate.cli import main
from ablate.rundir import read_progress
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.loader import load_results
from ablate.sweep.store.store import SweepStore

pytestmark = pytest.mark.integration

ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 * (i + 1)}"]} for i in range(4)]


def test_sweep_runs_every_trial_once_and_a_rerun_launches_nothing(write_sweep, fake_trainer, capsys):
    path = write_sweep(
        rows=ROWS[:2] + [{"name": "nan", "group": "X", "overrides": {"model.d_ff": 8}}],
        seeds=[1, 2],
        fake={"nan": {"mode": "nan"}},
    )
    assert main(["sweep", str(path)]) == 1  # one row diverges: reported, the others finish
    out = capsys.readouterr().out
    assert "4 done, 2 failed" in out
    results = load_results(path)
    assert [(r.row, r.seed, r.state) for r in results] == [
        ("r0", 1, "done"),
        ("r0", 2, "done"),
        ("r1", 1, "done"),
        ("r1", 2, "done"),
        ("nan", 1, "failed"),
        ("nan", 2, "failed"),
    ]
    r0 = results[0]
    assert r0.metrics["val/ppl"] == 6.0 and r0.metrics["params"] == 1234 and r0.params == 1234
    assert r0.config["model"]["d_ff"] == 16 and r0.overrides == ["model.d_ff=16"]
    assert r0.metrics["wandb_run_id"] == r0.trial_id and Path(r0.run_dir).is_dir()
    nan = results[4]
    assert "loss became NaN at step 3" in nan.failure and nan.metrics == {}
    assert attempt_marks(path)["nan"] == [(0, "FAIL", "diverged")]  # divergence is final: not retried
    before = {r.row + str(r.seed): len(calls(r.run_dir)) for r in results}
    assert set(before.values()) == {1}

    assert main(["sweep", str(path)]) == 1
    out = capsys.readouterr().out
    assert "0 new trial(s)" in out
    assert {r.row + str(r.seed): len(calls(r.run_dir)) for r in load_results(path)} == before

    assert main(["status", str(path)]) == 0
    status = capsys.readouterr().out
    assert "4 done, 0 running, 0 waiting, 2 failed" in status and "loss became NaN" in status


def test_a_crash_is_retried_and_resumes_in_the_same_run_dir(write_sweep, fake_trainer, capsys):
    path = write_sweep(rows=[{"name": "flaky", "group": "A"}], fake={"flaky": {"crash_once": True}})
    assert main(["sweep", str(path)]) == 0
    out = capsys.readouterr().out
    assert "retrying flaky seed 1 (1/2): RuntimeError: fake trainer crashed on purpose" in out  # said in the view
    (r,) = load_results(path)
    assert r.state == "done" and r.n_attempts == 2
    assert [c["start"] for c in calls(r.run_dir)] == [0, 0]
    assert attempt_marks(path)["flaky"] == [(0, "FAIL", "crashed"), (1, "COMPLETE", None)]


def test_an_error_that_would_repeat_fails_once_with_its_reason(write_sweep, fake_trainer, capsys):
    path = write_sweep(rows=[{"name": "long", "group": "A"}], fake={"long": {"mode": "error"}}, max_retries=2)
    assert main(["sweep", str(path)]) == 1
    assert attempt_marks(path)["long"] == [(0, "FAIL", "error")]  # not retried: the same config fails the same way
    (r,) = load_results(path)
    assert "ConfigError" in r.failure and "model.max_positions=135" in r.failure
    assert len(calls(r.run_dir)) == 1


def test_kill_9_of_a_trial_is_reaped_retried_and_completes_once(write_sweep):
    path = write_sweep(
        rows=ROWS[:2],
        overrides=["train.max_steps=30"],
        fake={"r0": {"hold_at": 4}},  # r0 waits at step 4 for its kill -9; the retry trains the rest at once
        launcher={"name": "local", "slots": 2, "poll_s": 0.2},
    )
    proc = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        run_dir = load_sweep(path).trials[0].run_dir
        _wait(lambda: read_progress(run_dir).get("step", 0) >= 4, what="trial r0 to reach step 4")
        victim = calls(run_dir)[0]["pid"]
        import os

        os.kill(victim, signal.SIGKILL)
        out, _ = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, out.decode()
    attempts = attempt_marks(path)
    assert attempts["r0"] == [(0, "FAIL", "killed"), (1, "COMPLETE", None)]
    assert "resuming r0 seed 1 at step" in out.decode() and "(no retry spent)" in out.decode()
    assert attempts["r1"] == [(0, "COMPLETE", None)]
    (r0, r1) = load_results(path)
    starts = [c["start"] for c in calls(r0.run_dir)]
    assert len(starts) == 2 and starts[1] >= 4  # the retry resumed from the checkpoint
    assert r0.metrics["resumed_from"] == starts[1]
    assert "killed by signal 9" in SweepStore.for_sweep(load_sweep(path)).by_trial()[r0.trial_id][0].attrs["failure"]


def test_two_controllers_at_once_run_every_trial_exactly_once(write_sweep):
    path = write_sweep(
        rows=ROWS,
        launcher={"name": "local", "slots": 1, "poll_s": 0.2},
        overrides=["train.max_steps=4"],
        fake={"*": {"step_s": 0.2}},
    )
    two_controllers(path)
    assert all(v == [(0, "COMPLETE", None)] for v in attempt_marks(path).values()), attempt_marks(path)
    results = load_results(path)
    assert all(len(calls(r.run_dir)) == 1 for r in results)
    pids = {calls(r.run_dir)[0]["pid"] for r in results}
    assert len(pids) == 4


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_cleanly_and_a_rerun_resumes(write_sweep, sig):
    """SIGTERM (a `timeout`, a logout, `docker stop`) as Ctrl-C: it killed the controller silently and its
    workers, in sessions of their own, trained on unseen."""
    # both trials wait at step 3 for the signal; the rerun trains the rest at once
    path = write_sweep(rows=ROWS[:2], overrides=["train.max_steps=40"], fake={"*": {"hold_at": 3}})
    proc = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        dirs = [t.run_dir for t in load_sweep(path).trials]
        _wait(lambda: all(read_progress(d).get("step", 0) >= 3 for d in dirs), what="both trials to reach step 3")
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in out.decode(), out.decode()
    assert all(v == [(0, "FAIL", "interrupted")] for v in attempt_marks(path).values())
    stopped_at = {d: read_progress(d)["step"] for d in dirs}
    done = subprocess.run(ablate_cmd("sweep", str(path)), env=fake_env(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    for r in load_results(path):
        assert r.state == "done"
        starts = [c["start"] for c in calls(r.run_dir)]
        assert len(starts) == 2 and 0 < starts[1] <= stopped_at[r.run_dir]
    assert all(v == [(0, "FAIL", "interrupted"), (1, "COMPLETE", None)] for v in attempt_marks(path).values())
