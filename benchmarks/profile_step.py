"""Where a training step's time goes: torch.profiler over a few steps of one model, the same step as
``benchmarks/bench_gpu.py`` (bf16 autocast on CUDA, fp32 on CPU), after a warm-up.

Prints the operators that take the most device time and the most host time, and the step's wall time
against the device's busy time: a device busy for a small part of the wall time means the step is bound
by the host (Python, kernel launches, synchronisations), not by the arithmetic.

    python benchmarks/profile_step.py [--experiment base.yaml] [--steps 5] [--tokens 6250] [--trace FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--experiment", default="base.yaml")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--tokens", type=int, default=6250, help="tokens per side per step")
    p.add_argument("--vocab", type=int, default=37000)
    p.add_argument("--trace", default="", help="also write a Chrome trace here")
    args = p.parse_args()
    import bench_gpu
    import torch
    from torch.profiler import ProfilerActivity, profile

    from ablate.config import load_config
    from ablate.train.fast import enable_tf32
    from ablate.train.run import system_kwargs
    from ablate.train.system import TransformerSystem

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    bench_gpu.TOKENS_PER_SIDE = args.tokens
    enable_tf32()
    cfg = load_config(ROOT / "experiments" / args.experiment)
    system = TransformerSystem(**system_kwargs(cfg, args.vocab)).to(device)
    opt = system.configure_optimizers()["optimizer"]
    data = bench_gpu.batches(args.steps + args.warmup, args.vocab, device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    for batch in data[: args.warmup]:
        bench_gpu.train_step(system, opt, batch)
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        t0 = time.perf_counter()
        for batch in data[args.warmup :]:
            bench_gpu.train_step(system, opt, batch)
        sync()
        wall = (time.perf_counter() - t0) / args.steps
    events = prof.key_averages()
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    print(events.table(sort_by=key, row_limit=20, max_name_column_width=60))
    if cuda:
        print(events.table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=60))
        busy = sum(e.self_device_time_total for e in events) / 1e6 / args.steps
        print(f"step wall {wall * 1e3:.1f} ms, device busy {busy * 1e3:.1f} ms ({busy / wall:.0%})")
    else:
        print(f"step wall {wall * 1e3:.1f} ms (CPU: no device timeline)")
    if args.trace:
        prof.export_chrome_trace(args.trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
