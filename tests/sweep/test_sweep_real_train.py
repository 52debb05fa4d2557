"""A sweep through the real trainer (tiny model, builtin corpus): killed with -9 mid-training, the
retry resumes from the checkpoint, and every trial's metrics land in the store exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ablate.sweep.file.spec import load_sweep
from ablate.sweep.loader import load_results
from ablate.sweep.store.store import SweepStore

pytestmark = [pytest.mark.slow, pytest.mark.integration]

EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 32, "d_ff": 64, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 200, "max_len": 64, "max_tokens": 512, "tokenizer_sample": 2000},
    "train": {
        "max_steps": 300,
        "warmup_steps": 10,
        "val_every_steps": 100,
        "log_every_steps": 5,
        "checkpoint_every_steps": 10,
    },
    "trainer": {"accelerator": "cpu"},
    "eval": {"beam_size": 1, "bleu_max_sentences": 20, "test": False},
    "logging": {"wandb": "disabled", "progress_bar": False},
}


def test_real_sweep_survives_kill_9_and_resumes(tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    sweep_file = tmp_path / "real.yaml"
    sweep_file.write_text(
        yaml.safe_dump(
            {
                "name": "real",
                "experiment": "exp.yaml",
                "seeds": [1],
                "launcher": {"name": "local", "slots": 2, "poll_s": 0.5},
                "wandb": {"mode": "disabled"},
                "rows": [
                    {"name": "base", "group": "base", "paper": "base"},
                    {
                        "name": "h=1",
                        "group": "A",
                        "paper": "A1",
                        "overrides": ["model.n_heads=1", "model.d_k=32", "model.d_v=32"],
                    },
                ],
            }
        )
    )
    env = dict(os.environ)
    env.update(ABLATE_CACHE=str(tmp_path / "cache"), WANDB_MODE="disabled", WANDB_SILENT="true")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ablate", "sweep", str(sweep_file)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    sweep = load_sweep(sweep_file)
    run_dir = Path(sweep.trials[0].run_dir)
    try:
        end = time.time() + 300
        while time.time() < end:
            progress = (
                json.loads((run_dir / "progress.json").read_text()) if (run_dir / "progress.json").exists() else {}
            )
            if (run_dir / "checkpoints" / "last.ckpt").exists() and progress.get("step", 0) >= 20:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the first trial never reached a checkpoint")
        pid = SweepStore.for_sweep(sweep).by_trial()[sweep.trials[0].trial_id][0].attrs["worker_pid"]
        os.kill(pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, out.decode()[-3000:]
    by = SweepStore.for_sweep(sweep).by_trial()
    assert [(a.attempt, a.state) for a in by[sweep.trials[0].trial_id]] == [(0, "FAIL"), (1, "COMPLETE")]
    assert [(a.attempt, a.state) for a in by[sweep.trials[1].trial_id]] == [(0, "COMPLETE")]
    assert json.loads((run_dir / "provenance.json").read_text())["resumed"] is True
    results = load_results(sweep_file)
    assert [r.state for r in results] == ["done", "done"]
    for r in results:
        assert r.metrics["step"] == 300 and r.metrics["val/ppl"] > 1 and r.params == r.metrics["params"] > 0
        # where the trial's time went (ablate.sweep.efficiency): spawn-to-start, data, validation, final eval
        assert r.metrics["startup_s"] > 0 and r.metrics["data_s"] >= 0 and r.metrics["eval_time_s"] > 0
        assert r.metrics["val_time_s"] >= 0 and r.metrics["train_time_s"] > 0
    text = out.decode()
    # the controller prepared the corpus once before any trial started, and ends with the efficiency line
    assert text.index("prepared corpus(es) ready") < text.index("running"), text[:2000]
    assert "efficiency: " in text and "of slot time in training and evaluation steps" in text, text[-2000:]
