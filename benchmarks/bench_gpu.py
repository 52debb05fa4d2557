"""GPU training throughput of the paper's base and big models at the paper's per-GPU batch.

On one CUDA device: ``experiments/base.yaml`` and ``experiments/big.yaml`` at ~6,250 source and 6,250
target tokens a step (the paper's 25,000 a side per step, over the 4 GPUs a trial of
``sweeps/table3.yaml`` trains on), random tokens of WMT-like lengths, bf16 autocast, TF32, fused Adam,
eager and ``torch.compile``d (``train.compile``). Prints, per model and mode: target tokens/s, step
time (median of the timed steps, with its range), MFU against the chip's dense bf16 peak (named below;
the FLOP count is the dry run's, ``ablate.config.size.train_flops``), peak memory; and the dry run's
predicted step time under its default GPU assumption against the measured one. Writes the figures as
JSON to ``--out``.

    python benchmarks/bench_gpu.py [--steps 30] [--warmup 10] [--out bench_gpu.json]

On a machine without CUDA it refuses in one line (exit 2).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Dense bf16 peaks (no sparsity), by the name torch reports; the script says which one it used.
PEAKS = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L40S": 362e12, "A10": 125e12}
TOKENS_PER_SIDE = 6250
MEAN_LEN = 27  # WMT14 en-de: ~27 subwords a sentence (BPE 37K)


def peak_of(name: str) -> tuple[str, float | None]:
    for key, value in PEAKS.items():
        if key in name:
            return key, value
    return name, None


def batches(n: int, vocab: int, device, seed: int = 0) -> list[dict]:
    import torch

    g = torch.Generator().manual_seed(seed)
    b = TOKENS_PER_SIDE // MEAN_LEN
    out = []
    for _ in range(n):
        t = int(torch.randint(MEAN_LEN - 4, MEAN_LEN + 5, (1,), generator=g))
        out.append({k: torch.randint(4, vocab, (b, t), generator=g).to(device) for k in ("src", "tgt_in", "tgt_out")})
    return out


def train_step(system, opt, batch: dict) -> None:
    """One optimizer step as a trial takes it: bf16 autocast on CUDA (fp32 elsewhere), the fused loss
    over the real target positions, label smoothing 0.1."""
    import torch

    from ablate.train.losses import linear_label_smoothed_loss

    cuda = batch["src"].is_cuda
    with torch.autocast("cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda):
        hidden, target = system._real_positions(batch)
        loss = linear_label_smoothed_loss(hidden, system.model.output_weight, target, 0.1) / target.numel()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def measure(experiment: str, compile_: bool, steps: int, warmup: int, vocab: int) -> dict:
    import torch

    from ablate.config import load_config, model_section
    from ablate.config.size import train_flops
    from ablate.train.fast import check_attention, enable_tf32
    from ablate.train.run import system_kwargs
    from ablate.train.system import TranslationSystem

    cfg = load_config(ROOT / "experiments" / experiment, overrides=[f"train.compile={str(compile_).lower()}"])
    enable_tf32()
    device = torch.device("cuda")
    kernel = check_attention(cfg.model, device, "bf16-mixed")
    system = TranslationSystem(**system_kwargs(cfg, vocab)).to(device)
    opt = system.configure_optimizers()["optimizer"]
    data = batches(steps + warmup, vocab, device)
    torch.cuda.reset_peak_memory_stats()
    times, tokens, started = [], 0, time.perf_counter()
    for i, batch in enumerate(data):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        train_step(system, opt, batch)
        torch.cuda.synchronize()
        if i == warmup - 1:
            warmup_s = time.perf_counter() - started  # with compile: tracing and code generation
        if i >= warmup:
            times.append(time.perf_counter() - t0)
            tokens += batch["tgt_out"].numel()
    step = statistics.median(times)
    src = tgt = tokens / len(times)
    flops = train_flops(model_section(cfg.model), vocab, src, tgt)
    name, peak = peak_of(torch.cuda.get_device_name())
    from ablate.sweep.plan.cost import DEFAULT_COST, step_seconds

    return {
        "model": experiment.removesuffix(".yaml"),
        "compiled": compile_,
        "chip": torch.cuda.get_device_name(),
        "peak_flops_assumed": peak,
        "peak_name": name,
        "tgt_tokens_per_s": tgt / step,
        "step_s_median": step,
        "step_s_range": [min(times), max(times)],
        "warmup_s": warmup_s,
        "train_flops_per_step": flops,
        "mfu": flops / step / peak if peak else None,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
        "attention_kernel": kernel,
        "dry_run_predicted_step_s": step_seconds(flops, DEFAULT_COST["gpu"]),
        "dry_run_flops_per_s_needed_for_measured": flops / step,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--vocab", type=int, default=37000)
    p.add_argument("--out", default="bench_gpu.json")
    args = p.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("bench_gpu: no CUDA device here; run it on a GPU machine (it measures GPU throughput)", file=sys.stderr)
        return 2
    results = []
    for experiment in ("base.yaml", "big.yaml"):
        for compile_ in (False, True):
            r = measure(experiment, compile_, args.steps, args.warmup, args.vocab)
            results.append(r)
            Path(args.out).write_text(json.dumps(results, indent=2))  # kept if a later measurement is cut off
            mfu = f"{r['mfu']:.1%}" if r["mfu"] is not None else "n/a (unknown chip peak)"
            print(
                f"{r['model']:<4} {'compiled' if compile_ else 'eager':<8} {r['tgt_tokens_per_s']:>10,.0f} tgt tok/s  "
                f"step {r['step_s_median'] * 1e3:.1f} ms  MFU {mfu} of {r['peak_name']} "
                f"({r['peak_flops_assumed'] or 0:.3g} FLOP/s)  peak mem {r['peak_memory_gib']:.1f} GiB  "
                f"dry run predicts {r['dry_run_predicted_step_s'] * 1e3:.1f} ms  warm-up {r['warmup_s']:.0f} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
