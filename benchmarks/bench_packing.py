"""Packed trials on one device: a small sweep run with 1, 2, 4, ... trials at once per device.

    python benchmarks/bench_packing.py                          # on a GPU: 8 mini rows, k = 1 2 4 8
    python benchmarks/bench_packing.py --accelerator cpu --rows 2 --packs 1 2 --steps 20 --tiny

Each k runs the same sweep (``--rows`` rows of experiments/mini.yaml on the built-in corpus, differing
in d_ff, ``--steps`` steps each, no test split, dev BLEU on 100 sentences) in a fresh folder with
``launcher: {name: local, slots: 1, trials_per_device: k}``: every trial shares the one device with up
to k-1 others. Prints each k's sweep wall time, the aggregate target tokens/s (every trial's training
tokens over the sweep's wall time) and its ratio to k=1, with the machine's load. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TINY = ["model.n_layers=1", "model.d_model=16", "model.n_heads=2", "data.vocab_size=200", "data.args.n_train=500"]


def write(folder: Path, args: argparse.Namespace, k: int) -> Path:
    folder.mkdir(parents=True)
    overrides = [
        "data.corpus=builtin",
        f"train.max_steps={args.steps}",
        f"train.val_every_steps={args.steps}",
        f"trainer.accelerator={args.accelerator}",
        "eval.test=false",
        "eval.bleu_max_sentences=100",
        "logging.wandb=disabled",
        *(TINY if args.tiny else []),
    ]
    rows = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={64 * (i + 2)}"]} for i in range(args.rows)]
    sweep = {
        "name": f"pack{k}",
        "experiment": str(ROOT / "experiments" / "mini.yaml"),
        "overrides": overrides,
        "seeds": [1],
        "launcher": {"name": "local", "slots": 1, "trials_per_device": k, "poll_s": 0.5},
        "wandb": {"mode": "disabled"},
        "rows": rows,
    }
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def run(path: Path) -> tuple[float, float]:
    """(wall seconds, target tokens trained by all its trials)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ablate", "sweep", str(path)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{path}: exit {done.returncode}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    tokens = 0.0
    for metrics in (path.parent / "runs").glob("*/*/metrics.json"):
        m = json.loads(metrics.read_text())
        tokens += float(m.get("tokens_per_sec") or 0.0) * float(m.get("train_time_s") or 0.0)
    return wall, tokens


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--packs", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--accelerator", default="gpu")
    p.add_argument("--tiny", action="store_true", help="a 1-layer d_model 16 model (a CPU try of the script)")
    p.add_argument("--out", default=None, help="also write the figures here as JSON")
    args = p.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-packing-") as tmp:
        for k in args.packs:
            wall, tokens = run(write(Path(tmp) / f"k{k}", args, k))
            results[k] = {"wall_s": wall, "target_tokens_per_s": tokens / wall}
            ratio = results[k]["target_tokens_per_s"] / results[args.packs[0]]["target_tokens_per_s"]
            print(
                f"k={k}: {args.rows} trials in {wall:.1f} s, {tokens / wall:,.0f} target tokens/s "
                f"({ratio:.2f}x k={args.packs[0]}; load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
