"""GPU training throughput of the paper's base and big models, at the paper's per-GPU batch and at its whole
batch on one GPU, eager, compiled and as CUDA graphs; and of a GPT-2-small-shaped language model
(``experiments/gpt2-small.yaml``, ``model.arch: decoder``: 124M parameters, 1,024-token blocks).

On one CUDA device: ``experiments/base.yaml`` and ``experiments/big.yaml`` at 6,250 tokens a side a step
(the paper's 25,000 over 4 GPUs) and at 25,000 (the whole batch on one GPU, as ``sweeps/table3.yaml``'s
``train.global_tokens`` split runs it on an 80 GiB device), random tokens in batches of bucketed shapes
(three lengths around WMT's mean, rows a multiple of 8: the shapes ``data.bucket_ratio`` /
``data.batch_multiple`` give), bf16 autocast, TF32, fused Adam. Modes: ``eager``; ``compiled``
(``train.compile``: dynamic shapes); ``graphs`` (``train.cuda_graphs``: one CUDA graph per shape,
through :func:`ablate.train.graphs.step_features`). Every mode steps through the same batches.

Prints, per model, batch and mode: target tokens/s, step time (median of the timed steps), MFU against
the chip's dense bf16 peak (the FLOP count is the dry run's, ``ablate.config.size.train_flops``), peak
memory against the split's memory model (``ablate.config.batch_split``), warm-up time (compilation and
captures), and the dry run's predicted step. Writes JSON to ``--out`` after each measurement, so a run
cut off by its time limit keeps what it measured. The order puts the measurements the dry run's cost
model needs first (25,000 tokens, eager, then graphs).

    python benchmarks/bench_gpu.py [--tokens 25000 6250] [--modes eager graphs compiled] [--out FILE]

Without CUDA it refuses in one line (exit 2); ``--allow-cpu`` runs the same code on the CPU in fp32 with
``--experiment-overrides`` shrinking the models, which is how the script is tried before a GPU is lent.
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
BUCKET_LENS = (24, 28, 32)  # rungs ~15% apart around the mean: the few shapes bucketed batches have
MODES = ("eager", "graphs", "compiled")


def peak_of(name: str) -> tuple[str, float | None]:
    for key, value in PEAKS.items():
        if key in name:
            return key, value
    return name, None


def batches(n: int, vocab: int, device, seed: int = 0, tokens: int | None = None, block: int = 0) -> list[dict]:
    """``n`` batches of about ``tokens`` tokens a side (default TOKENS_PER_SIDE) at BUCKET_LENS lengths,
    rows a multiple of 8: every shape recurs, as under bucketing. ``block``: a language model's, whole
    blocks of that many tokens and no source (one static shape)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    if block:
        rows = max(1, (tokens or TOKENS_PER_SIDE) // block)
        return [
            {k: torch.randint(4, vocab, (rows, block), generator=g).to(device) for k in ("tgt_in", "tgt_out")}
            for _ in range(n)
        ]
    out = []
    for _ in range(n):
        t = BUCKET_LENS[int(torch.randint(len(BUCKET_LENS), (1,), generator=g))]
        b = max(8, (tokens or TOKENS_PER_SIDE) // t // 8 * 8)
        out.append({k: torch.randint(4, vocab, (b, t), generator=g).to(device) for k in ("src", "tgt_in", "tgt_out")})
    return out


def train_step(system, opt, batch: dict) -> None:
    """One optimizer step as a trial takes it: bf16 autocast on CUDA (fp32 elsewhere), the fused loss
    over the real target positions, label smoothing 0.1."""
    import torch

    from ablate.train.losses import linear_label_smoothed_loss

    cuda = batch["tgt_out"].is_cuda
    with torch.autocast("cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda):
        hidden, target = system._real_positions(batch)
        loss = linear_label_smoothed_loss(hidden, system.model.output_weight, target, 0.1) / target.numel()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def build(experiment: str, mode: str, vocab: int, device, overrides: list[str]):
    """(config, system, optimizer) with the training forward as ``mode`` runs it."""
    from ablate.config import load_config
    from ablate.train.graphs import step_features
    from ablate.train.run import system_kwargs
    from ablate.train.system import TransformerSystem

    cfg = load_config(ROOT / "experiments" / experiment, overrides=overrides)
    system = TransformerSystem(**system_kwargs(cfg, vocab)).to(device)
    if mode != "eager":  # the trial's own choice of forward, forced on here (a CPU try runs the same calls)
        graphs = mode == "graphs"
        system._features = step_features(system.model.features, compile=not graphs, cuda_graphs=graphs, on_cuda=True)
    return cfg, system, system.configure_optimizers()["optimizer"]


def measure(experiment: str, mode: str, tokens: int, args: argparse.Namespace, device) -> dict:
    import torch

    from ablate.config import model_section
    from ablate.config.batch_split import GIB, peak_bytes
    from ablate.config.size import count_parameters, train_flops
    from ablate.sweep.plan.cost import DEFAULT_COST, step_seconds
    from ablate.train.fast import check_attention

    cuda = device.type == "cuda"
    cfg, system, opt = build(experiment, mode, args.vocab, device, args.experiment_overrides)
    block = int(cfg.data.block_size) if cfg.model.arch == "decoder" else 0
    kernel = check_attention(cfg.model, device, "bf16-mixed")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times, done, started, warmup_s = [], 0, time.perf_counter(), 0.0
    for i, batch in enumerate(batches(args.steps + args.warmup, args.vocab, device, tokens=tokens, block=block)):
        sync()
        t0 = time.perf_counter()
        train_step(system, opt, batch)
        sync()
        if i == args.warmup - 1:
            warmup_s = time.perf_counter() - started  # compilation, captures, cuDNN plans of the 3 shapes
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
            done += batch["tgt_out"].numel()
    step = statistics.median(times)
    side = done / len(times)
    model = model_section(cfg.model)
    flops = train_flops(model, args.vocab, 0 if block else side, side, tgt_len=block or None)
    name, peak = peak_of(torch.cuda.get_device_name() if cuda else "cpu")
    params = count_parameters(model, args.vocab)
    return {
        "model": experiment.removesuffix(".yaml"),
        "mode": mode,
        "tokens_per_side": tokens,
        "chip": name,
        "peak_flops_assumed": peak,
        "tgt_tokens_per_s": side / step,
        "step_s_median": step,
        "step_s_range": [min(times), max(times)],
        "warmup_s": warmup_s,
        "train_flops_per_step": flops,
        "mfu": flops / step / peak if peak else None,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / GIB if cuda else None,
        "memory_model_gib": None if block else peak_bytes(model, args.vocab, params, tokens) / GIB,  # the translator's
        "attention_kernel": kernel,
        "dry_run_predicted_step_s": step_seconds(flops, DEFAULT_COST["gpu"]),
    }


def _g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}"


def line(r: dict) -> str:
    mfu = f"{r['mfu']:.1%}" if r["mfu"] is not None else "n/a"
    memory = f"{r['peak_memory_gib']:.1f}" if r["peak_memory_gib"] is not None else "n/a"
    return (
        f"{r['model']:<10} {r['tokens_per_side']:>6,} {r['mode']:<8} {r['tgt_tokens_per_s']:>10,.0f} tgt tok/s  "
        f"step {r['step_s_median'] * 1e3:.1f} ms  MFU {mfu} of {r['chip']}  peak mem {memory} GiB "
        f"(model {_g(r['memory_model_gib'])})  dry run predicts {r['dry_run_predicted_step_s'] * 1e3:.1f} ms  "
        f"warm-up {r['warmup_s']:.0f} s"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--vocab", type=int, default=37000)
    p.add_argument("--tokens", type=int, nargs="+", default=[25000, 6250], help="tokens a side a step")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--models", nargs="+", default=["base.yaml", "big.yaml", "gpt2-small.yaml"])
    p.add_argument("--experiment-overrides", nargs="*", default=[], help="config overrides for every model")
    p.add_argument("--allow-cpu", action="store_true", help="try the code on a CPU (fp32; no GPU figures)")
    p.add_argument("--out", default="bench_gpu.json")
    args = p.parse_args()
    import torch

    from ablate.train.fast import enable_tf32

    if not torch.cuda.is_available() and not args.allow_cpu:
        print("bench_gpu: no CUDA device here; run it on a GPU machine (it measures GPU throughput)", file=sys.stderr)
        return 2
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    enable_tf32()
    results = []
    for tokens in args.tokens:
        for mode in args.modes:
            for experiment in args.models:
                results.append(measure(experiment, mode, tokens, args, device))
                Path(args.out).write_text(json.dumps(results, indent=2))  # kept if a later one is cut off
                print(line(results[-1]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
