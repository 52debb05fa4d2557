"""ablate vs plain PyTorch on the same real batches: training throughput and beam-4 decoding speed.

Prints ratios measured in one run (a shared machine drifts between runs; the ratio is what counts).
Each round times every contender once, interleaved; the figure is the median over rounds of the
per-round ratio, with the lowest and highest round beside it.

1. Training, target tokens/s: ablate's TransformerSystem under a Lightning Trainer (with a trial's
   process set-up, ablate.train.host) vs the plain loop of plain_reference.py (own modules with SDPA,
   full-logits label-smoothed cross-entropy), each in its own process, same model shape, same batches
   from ablate's own TokenBucketBatchSampler. The fair peer is the plain loop **with the same host
   set-up** (glibc's allocator settings: any loop can have them), so the headline ratio is ablate /
   (plain + host set-up); the ratio against the bare plain loop is printed beside it. Also the machine's
   fp32 matmul peak and each side's model FLOP/s as a share of it. Target: ablate >= 1.15x.
2. Beam 4 (alpha 0.6, max length = source length + 50) on dev sentences, batches sorted by length as
   ablate's corpus decoding makes them: ablate's beam_search vs plain_reference.plain_beam. The fair
   peer is a cached beam that **drops finished sentences** from the batch (the headline ratio); a beam
   that keeps every sentence to the batch's end is printed beside it. Decode a model that translates:
   ``--run`` a trained run (its own config and prepared data are used, so the tokenizer matches), else a
   model trained here for --decode-steps steps. Prints whether the best hypotheses are identical.
   Target: ablate >= 1.15x.

    python benchmarks/bench_vs_plain.py                    # built-in corpus, experiments/mini.yaml shape
    python benchmarks/bench_vs_plain.py --data ../shared/data/multi30k
    python benchmarks/bench_vs_plain.py --run RUN_DIR --skip train   # decode with a trained run's model
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_reference import PAD, PlainTransformer, plain_beam, plain_train  # noqa: E402

from ablate.config import from_dict, load_config, model_section, read_yaml  # noqa: E402
from ablate.config.size import train_flops  # noqa: E402
from ablate.data.batching import TokenBucketBatchSampler, collate  # noqa: E402
from ablate.data.prepare import prepare_data  # noqa: E402
from ablate.eval.corpus import bleu_set  # noqa: E402
from ablate.eval.decode import beam_search  # noqa: E402
from ablate.eval.settings import DecodeSettings  # noqa: E402
from ablate.train.host import keep_freed_memory  # noqa: E402
from ablate.train.system import TransformerSystem, load_system  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=str(ROOT / "experiments" / "mini.yaml"), help="model shape and data")
    p.add_argument("--data", help="a Multi30k-style folder (train/valid .en/.de); default: the built-in corpus")
    p.add_argument("--run", help="a run folder: decode with its checkpoints/last.ckpt instead of training here")
    p.add_argument("--steps", type=int, default=8, help="timed training steps per contender (after --warmup)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds; the median per-round ratio counts")
    p.add_argument("--max-tokens", type=int, help="tokens per training batch (default: the config's)")
    p.add_argument("--decode-steps", type=int, default=250, help="training steps of the model that decodes")
    p.add_argument("--decode-tokens", type=int, default=1024, help="tokens per batch of that brief training")
    p.add_argument("--sentences", type=int, default=192, help="dev sentences decoded")
    p.add_argument("--skip", choices=["train", "decode"], help="skip one of the two comparisons")
    return p.parse_args()


def prepared_data(args: argparse.Namespace):
    if args.run:  # the run's own config: its tokenizer and dev set
        cfg = from_dict(read_yaml(Path(args.run) / "config.yaml"), f"{args.run}/config.yaml")
        return cfg, prepare_data(cfg.data, progress=False)
    over = ["data.corpus=multi30k", f"data.root={Path(args.data).resolve()}"] if args.data else []
    cfg = load_config(args.config, overrides=over)
    return cfg, prepare_data(cfg.data, progress=False)


def ratios(times: dict[str, list[float]], ref: str, ours: str) -> str:
    """``median x [min, max]`` of the per-round ratio ref time / our time."""
    r = sorted(a / b for a, b in zip(times[ref], times[ours]))
    return f"{statistics.median(r):.3f}x [{r[0]:.3f}, {r[-1]:.3f}] over {len(r)} rounds"


def real_batches(prepared, max_tokens: int, n: int, seed: int = 1) -> list[dict[str, torch.Tensor]]:
    """The first ``n`` training batches ablate's own sampler yields (epoch 0)."""
    shard = prepared.split("train")
    sampler = TokenBucketBatchSampler(shard.src_lengths, shard.tgt_lengths, max_tokens, seed=seed)
    return [{k: v for k, v in collate(shard, b).items() if k != "index"} for b in sampler.epoch_batches(0)[:n]]


def matmul_peak(n: int = 2048, reps: int = 8) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t)


def run_ablate(cfg, vocab: int, batches: list, warmup: int) -> float:
    """Seconds of ablate's Lightning training steps after ``warmup`` (timed by a callback)."""
    import lightning.pytorch as pl

    times: list[float] = []

    class Timer(pl.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            self.t = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if batch_idx >= warmup:
                times.append(time.perf_counter() - self.t)

    torch.manual_seed(0)
    system = TransformerSystem(
        model=dict(cfg.model), vocab_size=vocab, label_smoothing=float(cfg.train.label_smoothing)
    )
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        precision="32-true",
        max_steps=len(batches),
        logger=False,
        callbacks=[Timer()],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(system, train_dataloaders=torch.utils.data.DataLoader(batches, batch_size=None))
    return sum(times)


def contender(name: str, conn, cfg_dict: dict, vocab: int, batches: list, warmup: int, threads: int) -> None:
    """One contender in its own process (so one's process-wide set-up cannot help the other): answers
    each round request with the seconds of its timed steps."""
    import warnings

    from omegaconf import OmegaConf

    warnings.filterwarnings("ignore")
    torch.set_num_threads(threads)
    cfg = OmegaConf.create(cfg_dict)
    m = cfg.model
    if name != "plain":
        keep_freed_memory()  # what ablate.train.run.train does at the start of every trial
    if name == "ablate":
        from ablate.train.run import quiet_lightning

        quiet_lightning()
    while conn.recv() == "round":
        if name == "ablate":
            conn.send(run_ablate(cfg, vocab, batches, warmup))
        else:
            torch.manual_seed(0)
            plain = PlainTransformer(vocab, m.d_model, m.n_heads, m.d_ff, m.n_layers, float(m.dropout))
            conn.send(plain_train(plain, batches, warmup, float(cfg.train.label_smoothing), m.d_model))


def bench_train(cfg, vocab: int, args: argparse.Namespace, prepared) -> None:
    import multiprocessing as mp

    from omegaconf import OmegaConf

    max_tokens = args.max_tokens or int(cfg.data.max_tokens)
    batches = real_batches(prepared, max_tokens, args.warmup + args.steps)
    timed = batches[args.warmup :]
    tokens = sum(int((b["tgt_out"] != PAD).sum()) for b in timed)
    padded = sum(b["tgt_out"].numel() for b in timed)
    m = cfg.model
    flops = sum(
        train_flops(
            model_section(dict(m)),
            vocab,
            int((b["src"] != PAD).sum()),
            int((b["tgt_out"] != PAD).sum()),
            src_len=float((b["src"] != PAD).sum(1).float().mean()),
            tgt_len=float((b["tgt_out"] != PAD).sum(1).float().mean()),
        )
        for b in timed
    )
    print(
        f"training: d_model={m.d_model} layers={m.n_layers}+{m.n_layers} vocab={vocab}; {args.steps} timed steps of "
        f"max_tokens={max_tokens} ({tokens} real target tokens, {1 - tokens / padded:.1%} target padding); "
        f"each contender in its own process, {args.repeats} interleaved rounds"
    )
    ctx = mp.get_context("spawn")
    cfg_dict = OmegaConf.to_container(cfg, resolve=True)
    workers = {}
    for name in ("plain", "plain+host", "ablate"):
        here, there = ctx.Pipe()
        proc = ctx.Process(
            target=contender, args=(name, there, cfg_dict, vocab, batches, args.warmup, torch.get_num_threads())
        )
        proc.start()
        workers[name] = (proc, here)
    times: dict[str, list[float]] = {name: [] for name in workers}
    peak = 0.0
    for _ in range(args.repeats):  # interleaved, one contender at a time: the load drifts between rounds
        peak = max(peak, matmul_peak())
        for name, (_, conn) in workers.items():
            conn.send("round")
            times[name].append(conn.recv())
    for proc, conn in workers.values():
        conn.send("stop")
        proc.join()
    print(f"  fp32 matmul peak (2048^2)  {peak / 1e9:8.1f} GFLOP/s")
    labels = {
        "plain": "plain PyTorch loop",
        "plain+host": "plain + the same host set-up",
        "ablate": "ablate (Lightning)",
    }
    for name, label in labels.items():
        t = statistics.median(times[name])
        rate = flops / t
        print(f"  {label:<29}  {tokens / t:8.1f} tgt tokens/s  {rate / 1e9:6.1f} GFLOP/s ({rate / peak:.0%} of peak)")
    print(f"  RATIO train ablate / (plain + host set-up) {ratios(times, 'plain+host', 'ablate')}  (target >= 1.15x)")
    print(f"  ablate / bare plain loop {ratios(times, 'plain', 'ablate')}")
    print(f"  host set-up alone, (plain + host) / plain {ratios(times, 'plain', 'plain+host')}")


def decoding_model(cfg, vocab: int, args: argparse.Namespace, prepared) -> torch.nn.Module:
    """A briefly trained model (ablate's training path), or the last checkpoint of ``--run``."""
    if args.run:
        metrics = json.loads((Path(args.run) / "metrics.json").read_text())
        ppl, bleu = metrics.get("val/ppl", float("nan")), metrics.get("val/bleu", float("nan"))
        print(f"decoding model: {args.run}, dev PPL {ppl:.2f}, BLEU {bleu:.1f}")
        return load_system(Path(args.run) / "checkpoints" / "last.ckpt").model.eval()
    torch.manual_seed(0)
    t = cfg.train
    system = TransformerSystem(
        model=dict(cfg.model),
        vocab_size=vocab,
        label_smoothing=float(t.label_smoothing),
        lr_factor=float(t.lr_factor),
        warmup_steps=min(int(t.warmup_steps), args.decode_steps // 2),
    )
    opt = system.configure_optimizers()
    optimizer, sched = opt["optimizer"], opt["lr_scheduler"]["scheduler"]
    system.log = lambda *a, **k: None  # no Trainer here: training_step's metric logging is a no-op
    batches = real_batches(prepared, args.decode_tokens, args.decode_steps, seed=2)
    start = time.perf_counter()
    for i, batch in enumerate(batches):
        loss = system.training_step(batch, i)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        sched.step()
    print(
        f"decoding model: trained {len(batches)} steps here in {time.perf_counter() - start:.0f} s, "
        f"last loss {float(loss):.2f}"
    )
    return system.model.eval()


def bench_decode(cfg, vocab: int, args: argparse.Namespace, prepared) -> None:
    model = decoding_model(cfg, vocab, args, prepared)
    s = DecodeSettings.from_config(cfg.eval)
    sources = bleu_set(prepared, "valid", args.sentences).sources
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))  # as ablate.eval.corpus batches them
    batches = []
    for a in range(0, len(order), s.batch_size):
        idx = order[a : a + s.batch_size]
        src = torch.full((len(idx), max(len(sources[i]) for i in idx)), PAD, dtype=torch.long)
        for r, i in enumerate(idx):
            src[r, : len(sources[i])] = torch.tensor(sources[i])
        batches.append(src)
    print(f"decoding: {len(sources)} dev sentences in {len(batches)} batches, beam {s.beam_size}, alpha {s.alpha}")
    beam = (s.beam_size, s.alpha, s.max_len_a, s.max_len_b)
    contenders = {
        "plain, drops finished": lambda: [
            h for src in batches for h in plain_beam(model, src, *beam, drop_finished=True)
        ],
        "plain, keeps finished": lambda: [h for src in batches for h in plain_beam(model, src, *beam)],
        "ablate": lambda: [hyps[0] for src in batches for hyps in beam_search(model, src, s)],
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    outputs: dict[str, list] = {}
    for _ in range(args.repeats):
        for name, run in contenders.items():
            t = time.perf_counter()
            outputs[name] = run()
            times[name].append(time.perf_counter() - t)
    ours = outputs["ablate"]
    out_tokens = sum(len(h.tokens) + 1 for h in ours)
    mean_src = sum(len(x) for x in sources) / len(sources)
    print(f"  mean source length {mean_src:.1f}, mean output length {out_tokens / len(ours):.1f} (EOS included)")
    for name in contenders:
        t = statistics.median(times[name])
        print(f"  {name:<24} {t:8.2f} s  ({out_tokens / t:7.1f} output tokens/s)")
    for name in ("plain, drops finished", "plain, keeps finished"):
        same = sum(p[0] == h.tokens for p, h in zip(outputs[name], ours))
        diff = max(abs(p[1] - h.score) for p, h in zip(outputs[name], ours))
        print(f"  identical best hypotheses vs {name}: {same}/{len(ours)}; max |score difference| {diff:.1e}")
    headline = ratios(times, "plain, drops finished", "ablate")
    print(f"  RATIO beam ablate / plain that drops finished {headline}  (target >= 1.15x)")
    print(f"  ablate / plain that keeps finished {ratios(times, 'plain, keeps finished', 'ablate')}")


def main() -> None:
    args = parse()
    torch.set_num_threads(torch.get_num_threads())
    cfg, prepared = prepared_data(args)
    vocab = prepared.tokenizer.vocab_size
    print(f"bench_vs_plain: corpus {cfg.data.corpus}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    if args.skip != "train":
        bench_train(cfg, vocab, args, prepared)
    if args.skip != "decode":
        bench_decode(cfg, vocab, args, prepared)


if __name__ == "__main__":
    main()
