"""A 2-task SLURM job trains one trial with the real trainer on 2 DDP ranks (gloo on CPU; one rank per
task, Lightning's SLURM environment), is requeued mid-training, and resumes both ranks from the same
checkpoint: one attempt, completed once, one W&B run, and only rank 0 writes checkpoints and metrics.

Against a real slurmctld (skipped when ``sbatch`` is absent or no controller answers). Submitted with
``--detach``: nothing but the jobs runs. Both ranks must resume from the same step, or their collectives
would not pair up and the job would hang instead of finishing.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sweep_harness import first_trial_attempts as _attempts
from sweep_harness import wait_for as _wait

from ablate.rundir import read_progress
from ablate.sweep.file.spec import load_sweep

pytestmark = [pytest.mark.slurm, pytest.mark.integration, pytest.mark.slow]

# The requeue is sent at step 30; the two ranks then train ~100 steps/s on 2 cores, so the 970 steps left
# give it ~10 s to land where it takes under 1 s (the job's start-up is waited out: the wait is on step 30).
STEPS = 1000
EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 120, "max_len": 64, "max_tokens": 256, "tokenizer_sample": 1000},
    "train": {
        "max_steps": STEPS,
        "warmup_steps": 20,
        "val_every_steps": 500,
        "log_every_steps": 5,
        "checkpoint_every_steps": 10,
    },
    "trainer": {"accelerator": "cpu", "devices": 2, "strategy": "ddp"},
    "eval": {"beam_size": 1, "bleu_max_sentences": 10, "test": False},
    "logging": {"wandb": "offline", "progress_bar": False},
}


def _job_log(path: Path) -> str:
    logs = sorted((path.parent / ".ablate" / "slurm").rglob("*.out")) + sorted(
        (path.parent / ".ablate" / "slurm").rglob("*.err")
    )
    return "\n".join(f"== {p.name}\n" + p.read_text(errors="replace")[-2000:] for p in logs)


def test_two_task_job_requeued_resumes_both_ranks_and_finishes_once(slurm_cluster, tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    path = tmp_path / "ddp.yaml"
    launcher = {"name": "slurm", "tasks_per_node": 2, "cpus_per_task": 1, "mem_gb": 1, "timeout_min": 15}
    spec = {"name": "ddp", "experiment": "exp.yaml", "seeds": [1], "launcher": launcher, "wandb": {"mode": "offline"}}
    spec["heartbeat"] = {"interval_s": 2, "grace_s": 60}
    path.write_text(yaml.safe_dump({**spec, "rows": [{"name": "base", "group": "base", "paper": "base"}]}))
    env = dict(os.environ, ABLATE_CACHE=str(tmp_path / "cache"), WANDB_MODE="offline", WANDB_SILENT="true")
    sub = subprocess.run(
        [sys.executable, "-m", "ablate", "sweep", str(path), "--detach"], env=env, capture_output=True, text=True
    )
    assert sub.returncode == 0, sub.stdout + sub.stderr
    run_dir = Path(load_sweep(path).trials[0].run_dir)
    _wait(lambda: read_progress(run_dir).get("step", 0) >= 30, 300, "step 30\n" + _job_log(path))
    job = _attempts(path)[0].attrs["slurm_job"]
    subprocess.run(["scontrol", "requeue", job], check=True)
    done = lambda: (a := _attempts(path)) and a[-1].state not in ("WAITING", "RUNNING") and a  # noqa: E731
    attempts = _wait(done, 500, "the requeued 2-task job to finish the trial\n" + _job_log(path))
    log = _job_log(path)
    assert [(a.attempt, a.state) for a in attempts] == [(0, "COMPLETE")], log
    metrics = attempts[0].attrs["metrics"]
    assert metrics["step"] == STEPS and metrics["val/ppl"] > 1 and attempts[0].attrs.get("requeues", 0) >= 1
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["resumed"] is True and provenance["devices"]["world_size"] == 2
    folder = path.parent / ".ablate" / "slurm" / "ddp"
    for task in (0, 1):  # each rank ran twice: before the requeue and after it
        assert (folder / f"{job}_{task}_log.out").read_text().count("Starting with JobEnvironment") == 2, log
    assert (folder / f"{job}_0_log.err").read_text().count("Restoring states from the checkpoint path at") == 1
    with open(run_dir / "metrics.csv", newline="") as f:
        steps = [r["step"] for r in csv.DictReader(f) if r.get("train/loss")]
    assert len(steps) == len(set(steps)), "a step logged twice: a second rank wrote metrics"
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir() if p.suffix == ".ckpt") == [
        "best.ckpt",
        "last.ckpt",
    ]
    runs = {p.name.rsplit("-", 1)[-1] for p in (run_dir / "wandb").glob("offline-run-*")}
    assert len(runs) == 1, runs  # one W&B run, resumed under the same id


def test_a_two_task_job_with_the_full_evaluation_completes_once(slurm_cluster, tmp_path: Path) -> None:
    """Rank 1 ends while rank 0 still runs the default final evaluation (test split on, beam 4, 1,000 +
    1,000 sentences): it must exit 0, so the job ends well and the trial is COMPLETE at its first attempt."""
    short = {**EXPERIMENT, "train": {"max_steps": 12, "warmup_steps": 4, "val_every_steps": 6, "log_every_steps": 3}}
    short["data"] = {**EXPERIMENT["data"], "args": {"n_train": 2000, "n_valid": 1000, "n_test": 1000}}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump({**short, "eval": {}}))
    path = tmp_path / "ddp.yaml"
    launcher = {"name": "slurm", "tasks_per_node": 2, "cpus_per_task": 1, "mem_gb": 1, "timeout_min": 15}
    spec = {"name": "ddp", "experiment": "exp.yaml", "seeds": [1], "launcher": launcher, "wandb": {"mode": "disabled"}}
    path.write_text(yaml.safe_dump({**spec, "rows": [{"name": "base", "group": "base", "paper": "base"}]}))
    env = dict(os.environ, ABLATE_CACHE=str(tmp_path / "cache"), WANDB_MODE="disabled", WANDB_SILENT="true")
    out = subprocess.run(
        [sys.executable, "-m", "ablate", "sweep", str(path)], env=env, capture_output=True, text=True, timeout=900
    )
    log = _job_log(path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:] + log
    attempts = _attempts(path)
    assert [(a.attempt, a.state) for a in attempts] == [(0, "COMPLETE")], log
    metrics = attempts[0].attrs["metrics"]
    assert metrics["step"] == 12 and "test/bleu" in metrics and metrics["val/bleu_sentences"] == 1000
    assert "Traceback" not in log
