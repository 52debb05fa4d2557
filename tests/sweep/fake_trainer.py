"""A stand-in for ``ablate.train.run.train`` used by the sweep tests (via ``ABLATE_TRIAL_FN``).

It honours the same contract - resumes from ``<output_dir>/checkpoints/last.ckpt``, rewrites
``progress.json``, writes ``metrics.json``, raises ``TrainingDiverged`` on NaN - in milliseconds.
Behaviour comes from the open ``data.args`` mapping of the config: ``fake_mode`` (ok | nan | crash),
``fake_step_s`` (sleep per step), ``fake_crash_once`` (crash on the first attempt only).
Every call appends one line to ``<output_dir>/calls.log`` so tests can count executions.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


class TrainingDiverged(RuntimeError):
    """Same name as the real one: the worker classifies it by name."""


def train(cfg: Any, output_dir: str, *, resume: bool = True, trainer_kwargs: Any = None, wandb_id: Any = None) -> dict:
    out = Path(output_dir)
    ckpt = out / "checkpoints" / "last.ckpt"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    args = dict(cfg.data.args)
    start = json.loads(ckpt.read_text())["step"] if resume and ckpt.exists() else 0
    plugins = [type(p).__name__ for p in (trainer_kwargs or {}).get("plugins", [])]
    with open(out / "calls.log", "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "start": start, "wandb_id": wandb_id, "plugins": plugins}) + "\n")
    max_steps = int(cfg.train.max_steps)
    mode = args.get("fake_mode", "ok")
    if mode == "crash" or (args.get("fake_crash_once") and len((out / "calls.log").read_text().splitlines()) == 1):
        raise RuntimeError("fake trainer crashed on purpose")
    t0 = time.time()
    for step in range(start + 1, max_steps + 1):
        time.sleep(float(args.get("fake_step_s", 0.0)))
        if mode == "nan" and step == 3:
            raise TrainingDiverged(f"loss became NaN at step {step}")
        ckpt.write_text(json.dumps({"step": step}))
        progress = {
            "step": step,
            "max_steps": max_steps,
            "train/loss": 1.0 / step,
            "val/ppl": 10.0 + 1.0 / step,
            "elapsed_s": time.time() - t0,
            "eta_s": 0.0,
        }
        tmp = out / "progress.json.tmp"
        tmp.write_text(json.dumps(progress))
        tmp.replace(out / "progress.json")
    metrics = {
        "val/ppl": 5.0 + cfg.train.seed,
        "val/bleu": 20.0 + cfg.model.n_heads,
        "test/bleu": 19.0,
        "params": 1234,
        "tokens_per_sec": 100.0,
        "wall_time_s": time.time() - t0,
        "step": max_steps,
        "resumed_from": start,
        "wandb_run_id": wandb_id,
        "plugins": ",".join(plugins),
    }
    (out / "metrics.json").write_text(json.dumps(metrics))
    return metrics
