"""A search through the SLURM launcher against a real slurmctld, with the real trainer in the jobs:
the controller samples into free array slots, the jobs report to the row's study and prune, and a
rerun launches nothing.

Skipped unless ``sinfo`` answers (start the throw-away cluster of the shared tools, export SLURM_CONF).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml

from ablate.sweep.loader import load_results, open_sweep
from ablate.sweep.store.store import SweepStore

pytestmark = [pytest.mark.slurm, pytest.mark.integration, pytest.mark.slow]

EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 64, "max_len": 32, "max_tokens": 256},
    "train": {"max_steps": 12, "warmup_steps": 2, "val_every_steps": 3, "log_every_steps": 1},
    "trainer": {"accelerator": "cpu"},
    "eval": {"beam_size": 1, "bleu_max_sentences": 10, "test": False},
    "logging": {"wandb": "disabled", "progress_bar": False},
}


def test_search_on_slurm_samples_prunes_and_finishes_once(slurm_cluster, tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    sweep = {
        "name": "slurm-search",
        "experiment": "exp.yaml",
        "seeds": [1],
        "launcher": {
            "name": "slurm",
            "cpus_per_task": 1,
            "mem_gb": 1,
            "timeout_min": 10,
            "poll_s": 1,
            "array_parallelism": 2,
        },
        "wandb": {"mode": "disabled"},
        "search": {
            "metric": "val/ppl",
            "n_trials": 4,
            "sampler": "random",
            "pruner": {"name": "median", "n_startup_trials": 1, "n_warmup_steps": 2},
            "params": {"train.lr_factor": {"low": 0.05, "high": 8.0, "log": True}},
        },
    }
    path = tmp_path / "search.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    env = dict(os.environ, ABLATE_CACHE=str(tmp_path / "cache"), WANDB_MODE="disabled", WANDB_SILENT="true")
    cmd = [sys.executable, "-m", "ablate", "sweep", str(path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    results = load_results(path)
    assert len(results) == 4 and {r.state for r in results} <= {"done", "pruned"}, [r.state for r in results]
    store = SweepStore.for_sweep(open_sweep(path).sweep)
    # every attempt ran once, in a SLURM job: "123_0" for an array task, "123" when the controller
    # asked one trial at a time (submitit submits a batch of one as a plain job)
    for attempts in store.by_trial().values():
        assert len(attempts) == 1 and re.fullmatch(r"\d+(_\d+)?", str(attempts[0].attrs.get("slurm_job")))
    study = optuna.load_study(study_name="slurm-search:search", storage=store.url)
    assert len(study.trials) == 4
    assert {t.state.name for t in study.trials} <= {"COMPLETE", "PRUNED"}
    assert study.best_trial.value == min(r.metrics["val/ppl"] for r in results if r.state == "done")

    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "running" not in again.stdout.split("sweep slurm-search:")[0]  # nothing started again
    assert len(optuna.load_study(study_name="slurm-search:search", storage=store.url).trials) == 4
