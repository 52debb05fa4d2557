"""A stand-in for ``ablate.train.run.train``: every launcher's ``trial_fn`` in the sweep tests (sweep_harness.py).

It honours the same contract - resumes from ``<output_dir>/checkpoints/last.ckpt``, rewrites
``progress.json``, writes ``metrics.json`` (both through :mod:`ablate.rundir`, the format's one
owner), raises ``TrainingDiverged`` on NaN - in milliseconds. Behaviour comes from ``fake.json``
beside the sweep file (``write_sweep(fake=...)``; the config itself only takes real options):
``{"*": {...}, "<row name>": {...}}`` with ``mode`` (ok | nan | crash | error: a ConfigError | oom:
torch's OutOfMemoryError | oom_packed: the same while the trial shares its device), ``step_s`` (sleep per step),
``hold_at`` (stop at that step, checkpointed, until the file ``release`` appears in the run directory
or a stop signal arrives: an interruption then lands at a known step, with no sleeping through
``step_s`` x ``max_steps``; a run resumed past that step does not hold), ``ppl`` and ``noise`` (the
final dev PPL: ``ppl`` x (1 + ``noise`` x a fixed draw per row and seed); default 5 + seed) and
``crash_once`` (crash on the first attempt only) and ``hyps: garbage`` (dev outputs that are no translation:
the same two made-up words on each of 20 lines, chrF near 0).
Every call appends one line to ``<output_dir>/calls.log`` so tests can count executions.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from pathlib import Path
from typing import Any

from ablate.atomic import atomic_write_json
from ablate.errors import TrainingDiverged  # the real one: the worker classifies by class
from ablate.rundir import RunDir
from ablate.train import preempt


def behaviour(cfg: Any) -> dict[str, Any]:
    """This row's settings from fake.json (runs go to <sweep dir>/runs/<sweep>, the output_dir)."""
    path = Path(cfg.logging.output_dir).parent.parent / "fake.json"
    spec = json.loads(path.read_text()) if path.exists() else {}
    return {**spec.get("*", {}), **spec.get(cfg.logging.name, {})}


def _torch_threads() -> int | None:
    import sys

    return sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None


def _ppl(args: dict[str, Any], cfg: Any) -> float:
    """5 + seed, or fake.json's ``ppl`` times (1 + ``noise`` x a fixed draw in [-0.5, 0.5) per row and seed)."""
    if "ppl" not in args:
        return 5.0 + cfg.train.seed
    draw = zlib.crc32(f"{cfg.logging.name}:{cfg.train.seed}".encode()) / 2**32 - 0.5
    return float(args["ppl"]) * (1.0 + float(args.get("noise", 0.0)) * draw)


HOLD_LIMIT_S = 600.0  # a hold nobody releases or signals is a broken test: it fails instead of hanging


def _hold(run: RunDir, step: int) -> None:
    """Wait at ``step`` until ``<run dir>/release`` exists or a stop signal arrives (which raises, as
    between two steps of the real trainer)."""
    end = time.time() + HOLD_LIMIT_S
    while not (run.path / "release").exists():
        preempt.check(f"at step {step}")
        if time.time() > end:
            raise RuntimeError(f"fake trainer held at step {step} for {HOLD_LIMIT_S:.0f} s: nothing released it")
        time.sleep(0.05)


def train(cfg: Any, output_dir: str, *, resume: bool = True, trainer_kwargs: Any = None, wandb_id: Any = None) -> dict:
    run = RunDir(output_dir)
    run.checkpoints.mkdir(parents=True, exist_ok=True)
    args = behaviour(cfg)
    start = json.loads(run.last_ckpt.read_text())["step"] if resume and run.last_ckpt.exists() else 0
    plugins = [type(p).__name__ for p in (trainer_kwargs or {}).get("plugins", [])]
    calls = run.path / "calls.log"
    threads = {"omp": os.environ.get("OMP_NUM_THREADS"), "torch": _torch_threads()}
    with open(calls, "a") as f:
        f.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "start": start,
                    "wandb_id": wandb_id,
                    "plugins": plugins,
                    "threads": threads,
                    "job": os.environ.get("SLURM_JOB_ID"),
                    "on_device": os.environ.get("ABLATE_TRIALS_ON_DEVICE"),
                    "time": time.time(),
                }
            )
            + "\n"
        )
    max_steps = int(cfg.train.max_steps)
    mode = args.get("mode", "ok")
    if mode == "error":
        from ablate.errors import ConfigError

        raise ConfigError("data split 'valid': its longest sentence needs 135 positions; set model.max_positions=135")
    if mode == "oom" or (mode == "oom_packed" and os.environ.get("ABLATE_TRIALS_ON_DEVICE", "1") != "1"):
        import torch  # torch's own error, as a packed trial on a full GPU raises it

        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (fake trainer, packed)")
    if mode == "crash" or (args.get("crash_once") and len(calls.read_text().splitlines()) == 1):
        raise RuntimeError("fake trainer crashed on purpose")
    t0 = time.time()
    for step in range(start + 1, max_steps + 1):
        time.sleep(float(args.get("step_s", 0.0)))
        if mode == "nan" and step == 3:
            raise TrainingDiverged(f"loss became NaN at step {step}")
        atomic_write_json(run.last_ckpt, {"step": step})
        elapsed = time.time() - t0
        run.write_progress(
            {
                "step": step,
                "max_steps": max_steps,
                "train/loss": 1.0 / step,
                "val/ppl": 10.0 + 1.0 / step,
                "elapsed_s": elapsed,
                "eta_s": 0.0,
            }
        )
        if step == args.get("hold_at"):
            _hold(run, step)
        if step < max_steps:  # like the real trainer: a stop signal ends the step just checkpointed
            preempt.check(f"at step {step}")
    metrics = {
        "val/ppl": _ppl(args, cfg),
        "val/bleu": 20.0 + cfg.model.n_heads,
        "test/bleu": 19.0,
        "params": 1234,
        "tokens_per_sec": 100.0,
        "wall_time_s": time.time() - t0,
        "train_time_s": time.time() - t0,  # as the real trainer reports it: the efficiency line reads it
        "step": max_steps,
        "resumed_from": start,
        "wandb_run_id": wandb_id,
        "plugins": ",".join(plugins),
    }
    if args.get("hyps") == "garbage":
        run.hyp_file("valid").parent.mkdir(parents=True, exist_ok=True)
        run.hyp_file("valid").write_text("zzxq qqvz\n" * 20, encoding="utf-8")
    run.write_metrics(metrics)
    return metrics
