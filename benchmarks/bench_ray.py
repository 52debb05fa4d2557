"""What Ray costs per trial: the same small sweep on the local launcher and on a local Ray cluster.

    python benchmarks/bench_ray.py                      # 8 tiny real trials, 2 slots, 2 rounds
    python benchmarks/bench_ray.py --trials 12 --rounds 3

Each round runs one sweep of ``--trials`` tiny real trials (the real trainer: 1 layer, d_model 16, 20
steps, the built-in corpus; seconds each, most of it the trainer's start-up) twice, in fresh folders:
``launcher: {name: local, slots: S}`` and ``--launcher '{name: ray, max_running: S}'`` (S trials at once
on both), alternating which goes first. It prints each launcher's median sweep time, their ratio, and
Ray's overhead per trial in slot-seconds: (ray - local) x S / trials. Uses the Ray cluster this machine
belongs to, or starts one (``ray start --head --num-cpus S``) and stops it at the end. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

EXPERIMENT = {
    "model": {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 128},
    "data": {"corpus": "builtin", "vocab_size": 64, "max_len": 32, "max_tokens": 256},
    "train": {"max_steps": 20, "warmup_steps": 2, "val_every_steps": 20, "log_every_steps": 10},
    "eval": {"bleu_max_sentences": 50, "beam_size": 1, "test": False},
    "trainer": {"accelerator": "cpu"},
    "logging": {"wandb": "disabled", "progress_bar": False},
}


def write_sweep(folder: Path, trials: int, slots: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "exp.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    rows = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 * (i + 2)}"]} for i in range(trials)]
    sweep = {
        "name": "bench-ray",
        "experiment": "exp.yaml",
        "seeds": [1],
        "launcher": {"name": "local", "slots": slots, "poll_s": 0.5},
        "wandb": {"mode": "disabled"},
        "rows": rows,
    }
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def run(path: Path, launcher: str | None) -> float:
    cmd = [sys.executable, "-m", "ablate", "sweep", str(path), *(["--launcher", launcher] if launcher else [])]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "WANDB_MODE": "disabled"})
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return took


def ray_cluster(slots: int) -> bool:
    """True when this started a cluster (to stop at the end)."""
    from ablate.errors import SweepError
    from ablate.sweep.launch.ray_jobs import job_client

    try:
        job_client("auto", "bench")
        return False
    except SweepError:
        ray = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
        subprocess.run([ray, "start", "--head", "--num-cpus", str(slots), "--disable-usage-stats"], check=True)
        return True


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--slots", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    started = ray_cluster(args.slots)
    times: dict[str, list[float]] = {"local": [], "ray": []}
    ray = f"{{name: ray, max_running: {args.slots}, poll_s: 0.5}}"
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
            for r in range(args.rounds):
                order = [("local", None), ("ray", ray)] if r % 2 == 0 else [("ray", ray), ("local", None)]
                for name, launcher in order:
                    path = write_sweep(Path(tmp) / f"{name}-{r}", args.trials, args.slots)
                    times[name].append(run(path, launcher))
                    print(f"round {r + 1}: {name:<5} {times[name][-1]:6.1f} s", flush=True)
    finally:
        if started:
            subprocess.run([shutil.which("ray") or "ray", "stop", "--force"], capture_output=True)
    local, on_ray = statistics.median(times["local"]), statistics.median(times["ray"])
    load = os.getloadavg()[0]
    print(f"{args.trials} trials, {args.slots} at once, median of {args.rounds} rounds (load {load:.2f}):")
    print(f"  local {local:.1f} s   ray {on_ray:.1f} s   ray/local {on_ray / local:.2f}x")
    print(f"  Ray's overhead per trial: {(on_ray - local) * args.slots / args.trials:+.1f} slot-seconds")


if __name__ == "__main__":
    main()
