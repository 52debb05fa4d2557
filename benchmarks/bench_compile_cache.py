"""A compiled trial's start-up with a cold and a warm torch.compile cache (what a sweep's second trial of
a shape pays): prints seconds and their ratio; asserts nothing.

    python benchmarks/bench_compile_cache.py              # the tiny model on CPU, 2 rounds

Each round makes a fresh cache folder (``TORCHINDUCTOR_CACHE_DIR``, as the sweep worker sets it beside the
run directories), then runs the same compiled training step twice, each in a fresh process: the first
fills the cache, the second reads it. Measured per process: the seconds from the first compiled call to
its end (compilation included), and the process's whole wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

STEP = """
import time, torch
from ablate.config import load_config
from ablate.train.run import system_kwargs
from ablate.train.system import TransformerSystem
cfg = load_config(overrides=["model.d_model=64", "model.n_heads=4", "model.d_ff=128", "model.n_layers=2",
                             "model.dropout=0.0", "train.compile=true"])
torch.manual_seed(0)
system = TransformerSystem(**system_kwargs(cfg, 64))
batch = {"src": torch.randint(4, 64, (8, 21)), "tgt_in": torch.randint(4, 64, (8, 20)),
         "tgt_out": torch.randint(4, 64, (8, 20))}
t0 = time.perf_counter()
hidden, target = system._real_positions(batch)
hidden.sum().backward()
print(time.perf_counter() - t0)
"""


def once(cache: str) -> tuple[float, float]:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", STEP], env=env, capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1]), time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    cold, warm = [], []
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="compile-cache-") as cache:
            cold.append(once(cache))
            warm.append(once(cache))
        print(
            f"round {r + 1}: cold {cold[-1][0]:.1f} s (process {cold[-1][1]:.1f} s), "
            f"warm {warm[-1][0]:.1f} s (process {warm[-1][1]:.1f} s)",
            flush=True,
        )
    c, w = statistics.median(x[0] for x in cold), statistics.median(x[0] for x in warm)
    cp, wp = statistics.median(x[1] for x in cold), statistics.median(x[1] for x in warm)
    print(
        f"first compiled step: cold {c:.1f} s, warm {w:.1f} s ({c / w:.1f}x); whole process {cp:.1f} s vs "
        f"{wp:.1f} s (load {os.getloadavg()[0]:.2f})"
    )


if __name__ == "__main__":
    main()
