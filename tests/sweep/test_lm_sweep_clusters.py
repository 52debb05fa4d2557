"""A language model sweep (model.arch: decoder, the real trainer, tiny) on a real SLURM cluster and on a
real Ray cluster: every trial trains once, and the table has its perplexity at the longer length."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sweep_harness import LM_TINY, fake_env

from ablate.sweep.loader import load_results

LM = [*LM_TINY, "train.max_steps=10", "train.val_every_steps=10"]
ROWS = [
    {"name": "sinusoidal", "group": "base"},
    {"name": "alibi", "group": "positions", "overrides": ["model.positional=alibi"]},
]


def _run(write_sweep, launcher: dict, extra_env: dict[str, str] | None = None) -> str:
    path = write_sweep(rows=ROWS, launcher=launcher, overrides=LM)
    env = fake_env(extra_env)
    done = subprocess.run(
        [sys.executable, "-m", "ablate", "sweep", str(path)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    views = load_results(path)
    assert [v.state for v in views] == ["done", "done"] and all(len(v.attempts) == 1 for v in views)
    assert all(v.metrics["val/ppl@32"] > 1 for v in views)
    return done.stdout


@pytest.mark.slurm
@pytest.mark.integration
def test_a_language_model_sweep_runs_on_slurm(slurm_cluster, write_sweep) -> None:
    out = _run(write_sweep, {"name": "slurm", "cpus_per_task": 1, "mem_gb": 1, "timeout_min": 10, "poll_s": 1})
    assert "PPL@32 (Δ)" in out


@pytest.mark.ray
@pytest.mark.integration
def test_a_language_model_sweep_runs_on_ray(ray_cluster, write_sweep) -> None:
    out = _run(write_sweep, {"name": "ray", "address": ray_cluster, "poll_s": 1})
    assert "PPL@32 (Δ)" in out
