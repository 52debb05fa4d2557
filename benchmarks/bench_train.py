"""Training throughput: ablate's Lightning system vs a minimal hand-written PyTorch loop.

Same model (same initial weights), same batches, same recipe (label-smoothed CE, Adam, Noam schedule),
fp32 on CPU. Prints target tokens/s of both and their ratio (target >= 1.0x), and model FLOP/s as a
fraction of this machine's fp32 matmul peak measured in the same run (target >= 50%).

    python benchmarks/bench_train.py [--steps 8] [--d-model 256] [--layers 3] [--vocab 8000] [--tokens 4000]
"""

from __future__ import annotations

import argparse
import time

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from ablate.config import model_section
from ablate.config.size import train_flops
from ablate.train.schedule import noam_scheduler
from ablate.train.system import TransformerSystem

PAD, BOS, EOS = 0, 2, 3


def make_batches(n: int, tokens: int, vocab: int, mean_len: int, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    """Batches of ~``tokens`` target tokens, lengths close together (as a length-bucketing sampler gives)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        width = int(torch.randint(mean_len // 2, mean_len * 3 // 2, (1,), generator=g))
        b = max(1, tokens // (width + 1))
        s_len = torch.randint(max(1, width - 3), width + 1, (b,), generator=g)
        t_len = torch.randint(max(1, width - 3), width + 1, (b,), generator=g)
        src = torch.zeros(b, width + 1, dtype=torch.long)
        tin, tout = torch.zeros(b, width + 1, dtype=torch.long), torch.zeros(b, width + 1, dtype=torch.long)
        for i in range(b):
            s, t = int(s_len[i]), int(t_len[i])
            src[i, :s], src[i, s] = torch.randint(4, vocab, (s,), generator=g), EOS
            w = torch.randint(4, vocab, (t,), generator=g)
            tin[i, 0], tin[i, 1 : t + 1] = BOS, w
            tout[i, :t], tout[i, t] = w, EOS
        out.append({"src": src, "tgt_in": tin, "tgt_out": tout})
    return out


def matmul_peak(n: int = 2048, reps: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t)


class Timer(pl.Callback):
    def __init__(self, skip: int) -> None:
        self.skip, self.times = skip, []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.t = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx >= self.skip:
            self.times.append(time.perf_counter() - self.t)


def run_lightning(cfg: dict, vocab: int, batches: list, warmup: int, init: dict) -> float:
    system = TransformerSystem(model=cfg, vocab_size=vocab, warmup_steps=4000)
    system.model.load_state_dict(init)
    timer = Timer(warmup)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        precision="32-true",
        max_steps=len(batches),
        logger=False,
        callbacks=[timer],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(system, train_dataloaders=DataLoader(batches, batch_size=None))
    return sum(timer.times)


def run_plain(cfg: dict, vocab: int, batches: list, warmup: int, init: dict) -> float:
    from ablate.model.build import build_model

    model = build_model(model_section(cfg), vocab)
    model.load_state_dict(init)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = noam_scheduler(opt, cfg["d_model"], 4000)
    total = 0.0
    for i, b in enumerate(batches):
        t = time.perf_counter()
        logits = model(b["src"], b["tgt_in"])
        loss = (
            F.cross_entropy(
                logits.flatten(0, 1), b["tgt_out"].flatten(), ignore_index=PAD, label_smoothing=0.1, reduction="sum"
            )
            / (b["tgt_out"] != PAD).sum()
        )
        del logits
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if i >= warmup:
            total += time.perf_counter() - t
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=8, help="timed steps per contender (after --warmup)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--tokens", type=int, default=4000, help="target tokens per batch")
    p.add_argument("--mean-len", type=int, default=28)
    p.add_argument("--repeats", type=int, default=2, help="interleaved repetitions; the best time of each counts")
    args = p.parse_args()

    torch.manual_seed(0)
    cfg = {"n_layers": args.layers, "d_model": args.d_model, "d_ff": 4 * args.d_model, "n_heads": 4, "dropout": 0.1}
    from ablate.model.build import build_model

    init = build_model(model_section(cfg), args.vocab).state_dict()
    batches = make_batches(args.warmup + args.steps, args.tokens, args.vocab, args.mean_len)
    timed = batches[args.warmup :]
    tgt_tokens = sum(int((b["tgt_out"] != PAD).sum()) for b in timed)
    flops = sum(
        train_flops(
            model_section(cfg),
            args.vocab,
            int((b["src"] != PAD).sum()),
            int((b["tgt_out"] != PAD).sum()),
            src_len=float((b["src"] != PAD).sum(1).float().mean()),
            tgt_len=float((b["tgt_out"] != PAD).sum(1).float().mean()),
        )
        for b in timed
    )
    print(
        f"model d_model={args.d_model} layers={args.layers}+{args.layers} vocab={args.vocab}; "
        f"{args.steps} timed steps of ~{args.tokens} target tokens; torch threads {torch.get_num_threads()}"
    )
    peak_before = matmul_peak()
    # Interleaved, best of --repeats each: on a shared machine the load drifts between contenders.
    t_plain = t_light = float("inf")
    for _ in range(args.repeats):
        t_plain = min(t_plain, run_plain(cfg, args.vocab, batches, args.warmup, init))
        t_light = min(t_light, run_lightning(cfg, args.vocab, batches, args.warmup, init))
    peak = max(peak_before, matmul_peak())
    print(f"fp32 matmul peak (2048^2)  {peak / 1e9:8.1f} GFLOP/s")
    print(f"plain PyTorch loop         {tgt_tokens / t_plain:8.1f} tgt tokens/s  {flops / t_plain / 1e9:6.1f} GFLOP/s")
    print(f"ablate Lightning system    {tgt_tokens / t_light:8.1f} tgt tokens/s  {flops / t_light / 1e9:6.1f} GFLOP/s")
    print(f"ratio system / plain       {t_plain / t_light:8.3f} x  (target >= 1.0x)")
    print(f"system FLOP/s vs peak      {flops / t_light / peak:8.1%}  (target >= 50%)")


if __name__ == "__main__":
    main()
