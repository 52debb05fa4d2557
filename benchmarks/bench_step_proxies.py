"""CPU proxies of a training step's cost on a GPU: operator calls and host synchronisations per step.

On a GPU the base model's step is bound by the host (about 1,160 kernel launches a step on an H200),
so what a CPU can count is a fair proxy of what the GPU pays: the ``aten::`` operator calls a step
makes (each eager call is at least one launch; a compiled or graphed step replaces most of them by a
few generated kernels), and the calls that make the host wait for the device
(``aten::_local_scalar_dense``: ``.item()`` and Python branches on tensors; ``aten::nonzero``: boolean
indexing, whose output size the host must read back). Counted with ``torch.profiler`` over timed
steps after a warm-up, for the paper's base architecture (6 + 6 layers, 8 heads) at a small width so
that it runs in seconds on a CPU, one training step as a trial takes it (``benchmarks/bench_gpu.py``'s),
eager, compiled (``train.compile``) and graphed (``train.cuda_graphs``' compile call; on a CPU without
the graphs themselves). The optimizer step is left out of the count: torch's CPU Adam loops over the
tensors and reads its step count on the host (181 syncs a step here), where a GPU trial runs fused
Adam. Distinct batch shapes and the padding share are ``benchmarks/bench_shapes.py``'s.

    python benchmarks/bench_step_proxies.py [--steps 4] [--modes eager compiled graphs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
SMALL = ["model.d_model=64", "model.d_ff=128", "model.dropout=0.0"]  # base's depth and heads, a CPU's width
SYNCS = ("aten::_local_scalar_dense", "aten::nonzero")


def count(mode: str, steps: int, warmup: int, vocab: int, tokens: int) -> dict[str, float]:
    """Per-step counts of every ``aten::`` call and of each sync kind, over ``steps`` profiled steps."""
    import bench_gpu
    import torch
    from torch.profiler import ProfilerActivity, profile

    args = argparse.Namespace(vocab=vocab, experiment_overrides=SMALL)
    _, system, opt = bench_gpu.build("base.yaml", mode, args.vocab, torch.device("cpu"), args.experiment_overrides)
    data = bench_gpu.batches(warmup + steps, vocab, torch.device("cpu"), tokens=tokens)
    for batch in data[:warmup]:  # compilation and every bucket shape seen once
        bench_gpu.train_step(system, opt, batch)
    step = opt.step
    with profile(activities=[ProfilerActivity.CPU]) as prof:

        def unprofiled_step() -> None:  # fused Adam on a GPU: a few kernels, not torch's per-tensor CPU loop
            prof.toggle_collection_dynamic(False, [ProfilerActivity.CPU])
            step()
            prof.toggle_collection_dynamic(True, [ProfilerActivity.CPU])

        opt.step = unprofiled_step
        for batch in data[warmup:]:
            bench_gpu.train_step(system, opt, batch)
    events = prof.key_averages()
    out = {"aten ops": sum(e.count for e in events if e.key.startswith("aten::")) / steps}
    for key in SYNCS:
        out[key] = sum(e.count for e in events if e.key == key) / steps
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--warmup", type=int, default=6)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--tokens", type=int, default=1000, help="tokens a side a step")
    p.add_argument("--modes", nargs="+", default=["eager", "compiled", "graphs"])
    args = p.parse_args()
    rows = {mode: count(mode, args.steps, args.warmup, args.vocab, args.tokens) for mode in args.modes}
    reference = rows.get("eager")
    print(f"per training step, base architecture at d_model 64, {args.tokens:,} tokens a side, {args.steps} steps:")
    print(f"{'mode':<9} {'aten ops':>9} {'vs eager':>9} {'.item()-like':>13} {'nonzero':>8}")
    for mode, r in rows.items():
        ratio = f"{r['aten ops'] / reference['aten ops']:.2f}x" if reference else "-"
        print(f"{mode:<9} {r['aten ops']:>9.0f} {ratio:>9} {r[SYNCS[0]]:>13.1f} {r[SYNCS[1]]:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
