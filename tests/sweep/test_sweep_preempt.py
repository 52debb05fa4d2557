"""SLURM preemption resumes in place, with no controller running: `scontrol requeue` mid-training, a
time limit with submitit's SIGUSR2 ahead of it and one with only SLURM's SIGTERM each end in one
completed attempt - no failure, no retry spent, the same job and W&B run id - whose result equals an
uninterrupted run's.

Against a real slurmctld (skipped when ``sbatch`` is absent or no controller answers). The sweeps are
submitted with ``--detach``: the controller exits at once and nothing but the jobs themselves runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sweep_harness import calls, fake_env
from sweep_harness import first_trial_attempts as _attempts
from sweep_harness import wait_for as _wait

from ablate.rundir import read_progress
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.store.state import Attempt

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

LAUNCHER = {"name": "slurm", "cpus_per_task": 1, "mem_gb": 1, "timeout_min": 10, "poll_s": 1}
# What the fake trainer reports for any run of the tiny experiment at seed 1 (resume bookkeeping aside).
SAME = ("val/ppl", "val/bleu", "test/bleu", "params", "step")


def _finished(path: Path) -> list[Attempt] | None:
    attempts = _attempts(path)
    return attempts if attempts and attempts[-1].state not in ("WAITING", "RUNNING") else None


def _detach(path: Path, cmd: list[str], env: dict[str, str]) -> None:
    sub = subprocess.run([*cmd, "sweep", str(path), "--detach"], env=env, capture_output=True, text=True, timeout=180)
    assert sub.returncode == 0 and "submitted 1 job(s)" in sub.stdout, sub.stdout + sub.stderr


def _assert_resumed_in_place(path: Path, attempts: list[Attempt], log: str) -> Attempt:
    """One attempt, completed, never failed or retried, requeued at least once."""
    assert [(a.attempt, a.state) for a in attempts] == [(0, "COMPLETE")], log
    (a,) = attempts
    assert "failure" not in a.attrs and a.attrs.get("requeues", 0) >= 1, a.attrs
    assert a.attrs["token"] == f"slurm:{a.attrs['slurm_job']}"
    return a


def _job_log(path: Path) -> str:
    logs = sorted((path.parent / ".ablate" / "slurm").rglob("*.out")) + sorted(
        (path.parent / ".ablate" / "slurm").rglob("*.err")
    )
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in logs)


def _uninterrupted_fake_metrics(path: Path) -> dict[str, Any]:
    """The fake trainer's result for the same trial, run straight through in a fresh directory (with no
    fake.json beside it: no sleep per step, which changes no metric)."""
    from fake_trainer import train

    from ablate.config import from_dict

    cfg = from_dict(load_sweep(path).trials[0].config)
    cfg.logging.output_dir = str(path.parent / "straight" / "runs" / "t")
    return train(cfg, str(path.parent / "straight" / "run"), resume=True)


def test_scontrol_requeue_resumes_in_place_without_a_controller(slurm_cluster, write_sweep):
    path = write_sweep(
        rows=[{"name": "a", "group": "A"}],
        launcher=LAUNCHER,
        heartbeat={"interval_s": 1, "grace_s": 8},
        overrides=["train.max_steps=80"],
        fake={"*": {"hold_at": 5}},  # held at step 5 until the requeue's SIGTERM; the rest runs at once
    )
    _detach(path, [sys.executable, str(Path(__file__).parent / "fake_controller.py")], fake_env())
    run_dir = load_sweep(path).trials[0].run_dir
    _wait(lambda: read_progress(run_dir).get("step", 0) >= 5, 180, "step 5")
    job = _attempts(path)[0].attrs["slurm_job"]
    subprocess.run(["scontrol", "requeue", job], check=True)
    attempts = _wait(lambda: _finished(path), 400, "the requeued job to finish the trial")
    a = _assert_resumed_in_place(path, attempts, _job_log(path))
    runs = calls(run_dir)
    assert len(runs) == 2 and runs[1]["start"] >= 5, runs  # resumed from last.ckpt, not from 0
    assert len({c["wandb_id"] for c in runs}) == 1 and len({c["job"] for c in runs}) == 1
    straight = _uninterrupted_fake_metrics(path)
    assert {k: a.attrs["metrics"][k] for k in SAME} == {k: straight[k] for k in SAME}
    assert a.attrs["metrics"]["resumed_from"] == runs[1]["start"]


def test_time_limit_checkpoints_and_requeues_itself(slurm_cluster, write_sweep):
    # 1 minute of wall time with SIGUSR2 asked 10 s ahead (it came up to ~15 s earlier still here) for a
    # trial held at step 4 until a signal comes: it needs at least one requeue, which no controller makes,
    # however fast the start-up; the resumed run trains the rest at once.
    path = write_sweep(
        rows=[{"name": "a", "group": "A"}],
        launcher={**LAUNCHER, "timeout_min": 1, "signal_delay_s": 10},
        overrides=["train.max_steps=240"],
        fake={"*": {"hold_at": 4}},
    )
    _detach(path, [sys.executable, str(Path(__file__).parent / "fake_controller.py")], fake_env())
    attempts = _wait(lambda: _finished(path), 560, "the trial to finish across time limits")
    log = _job_log(path)
    a = _assert_resumed_in_place(path, attempts, log)
    runs = calls(load_sweep(path).trials[0].run_dir)
    assert len(runs) >= 2 and all(r["start"] > 0 for r in runs[1:]), runs
    assert [r["start"] for r in runs] == sorted(r["start"] for r in runs)
    assert len({c["wandb_id"] for c in runs}) == 1 and len({c["job"] for c in runs}) == 1
    straight = _uninterrupted_fake_metrics(path)
    assert {k: a.attrs["metrics"][k] for k in SAME} == {k: straight[k] for k in SAME}
    sacct = subprocess.run(["sacct", "-n", "-P", "-X", "-o", "State", "-j", a.attrs["slurm_job"]], capture_output=True)
    assert b"TIMEOUT" not in sacct.stdout, sacct.stdout  # requeued before the limit, never killed by it


def test_time_limit_with_only_sigterm_requeues_itself(slurm_cluster, write_sweep):
    # signal_delay_s 0 (--signal=USR2@0): SLURM 22.05 sends no SIGUSR2 at all, only the SIGTERM of the
    # time limit, 0-30 s after the 1-minute limit (6-22 s seen), with the job already TIMEOUT in sacct
    # and SIGKILL KillWait (5 s) later. The trial is held at step 4 until that signal: it needs a
    # requeue, which only the task itself makes (SLURM never requeues a TIMEOUT job), and the resumed
    # run trains the rest at once.
    path = write_sweep(
        rows=[{"name": "a", "group": "A"}],
        launcher={**LAUNCHER, "timeout_min": 1, "signal_delay_s": 0},
        overrides=["train.max_steps=340"],
        fake={"*": {"hold_at": 4}},
    )
    _detach(path, [sys.executable, str(Path(__file__).parent / "fake_controller.py")], fake_env())
    attempts = _wait(lambda: _finished(path), 500, "the trial to finish across SIGTERM-only time limits")
    log = _job_log(path)
    a = _assert_resumed_in_place(path, attempts, log)
    assert a.attrs["preempted"].startswith("SIGTERM received"), a.attrs  # not SIGUSR2
    assert "SIGUSR2 received" not in log and "SIGTERM is the time limit" in log, log
    assert "SIGTERM at the time limit: scontrol requeue" in log and "but scontrol requeue" not in log, log
    runs = calls(load_sweep(path).trials[0].run_dir)
    assert len(runs) >= 2 and all(r["start"] > 0 for r in runs[1:]), runs
    assert len({c["wandb_id"] for c in runs}) == 1 and len({c["job"] for c in runs}) == 1
    straight = _uninterrupted_fake_metrics(path)
    assert {k: a.attrs["metrics"][k] for k in SAME} == {k: straight[k] for k in SAME}
    sacct = ["sacct", "-n", "-P", "-X", "-D", "-o", "State", "-j", a.attrs["slurm_job"]]

    def ended() -> list[str] | None:  # the store says done before the job's process has exited
        states = subprocess.run(sacct, capture_output=True, text=True).stdout.split()
        return states if states and states[-1] not in ("RUNNING", "COMPLETING", "PENDING") else None

    states = _wait(ended, 90, "the job to end in sacct")
    # Each time limit became a requeue (TIMEOUT -> REQUEUED). The last run may still read TIMEOUT: one
    # that finishes the trial within seconds of its limit is marked so while it exits.
    assert len(states) >= 2 and set(states[:-1]) == {"REQUEUED"}, states
    assert states[-1] in ("COMPLETED", "TIMEOUT"), states


def test_threads_follow_cpus_per_task(slurm_cluster, write_sweep):
    path = write_sweep(rows=[{"name": "a", "group": "A"}], launcher={**LAUNCHER, "cpus_per_task": 2})
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "fake_controller.py"), "sweep", str(path)],
        env=fake_env({"OMP_NUM_THREADS": "7"}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = calls(load_sweep(path).trials[0].run_dir)
    assert run["threads"] == {"omp": "2", "torch": 2}, run


def test_real_trainer_requeue_resumes_into_the_same_wandb_run(slurm_cluster, write_sweep, tmp_path):
    """Through Lightning: SIGTERM of `scontrol requeue` -> last.ckpt at that step -> same job resumes."""
    path = write_sweep(
        rows=[{"name": "a", "group": "A"}],
        launcher=LAUNCHER,
        # the test compares val/nll, val/ppl and step: a short final evaluation (no test split, greedy,
        # 20 sentences) in place of the default beam 4 over 1,000 + 1,000 sentences, twice
        overrides=[
            "train.max_steps=400",
            "train.val_every_steps=200",
            "train.log_every_steps=5",
            "eval.test=false",
            "eval.beam_size=1",
            "eval.bleu_max_sentences=20",
        ],
        wandb={"mode": "offline"},
    )
    env = fake_env({"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_CACHE_DIR": str(tmp_path / "c")})
    _detach(path, [sys.executable, "-m", "ablate"], env)
    run_dir = Path(load_sweep(path).trials[0].run_dir)
    _wait(lambda: read_progress(run_dir).get("step", 0) >= 20, 300, "step 20 of the real trainer")
    job = _attempts(path)[0].attrs["slurm_job"]
    subprocess.run(["scontrol", "requeue", job], check=True)
    attempts = _wait(lambda: _finished(path), 500, "the requeued job to finish the trial")
    a = _assert_resumed_in_place(path, attempts, _job_log(path))
    ids = {p.name.rsplit("-", 1)[-1] for p in (run_dir / "wandb").glob("offline-run-*")}
    assert ids == {a.attrs["wandb_id"]} and len(list((run_dir / "wandb").glob("offline-run-*"))) >= 2
    import torch

    from ablate.config import from_dict
    from ablate.train.run import train

    cfg = from_dict(load_sweep(path).trials[0].config)
    cfg.logging.wandb = "disabled"  # the numbers do not depend on it
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the job (cpus_per_task=1): another count sums in another order
    try:
        straight = train(cfg, str(tmp_path / "straight"), resume=True)
    finally:
        torch.set_num_threads(threads)
    got = a.attrs["metrics"]
    for key in ("val/nll", "val/ppl", "step"):
        assert got[key] == pytest.approx(straight[key], rel=1e-6), (key, got[key], straight[key])
    assert json.loads((run_dir / "metrics.json").read_text())["wandb_run_id"] == a.attrs["wandb_id"]
