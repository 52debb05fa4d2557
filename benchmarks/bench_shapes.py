"""Batch shapes per epoch on real text, and the padding they cost: a CPU proxy of what a GPU sees.

    python benchmarks/bench_shapes.py                     # newstest2013+2014 en-de, several batches
    python benchmarks/bench_shapes.py --max-tokens 6250 25000

cuDNN's attention plans, the compiler and CUDA graphs each pay once per new batch shape (B, S, T).
For newstest2013+2014 and the Multi30k training set from ``../shared/data`` (each skipped with a
message where absent) it trains a SentencePiece BPE model (8,000, shared), tokenizes both sides, and
for each ``--max-tokens`` counts the
distinct training batch shapes of one epoch and the padding share, first as batches are cut today
(``data.bucket_ratio=0``, ``data.batch_multiple=1``), then bucketed (lengths padded up a ladder of
rungs ``--bucket-ratio`` apart, pairs per full batch a multiple of ``--batch-multiple``). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

from ablate.data.batching import TokenBucketBatchSampler, batch_shapes, padding_stats

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CORPORA = {  # name -> the files of each side (without .en / .de)
    "newstest2013+2014": [DATA / "newstest" / "newstest2013", DATA / "newstest" / "newstest2014"],
    "multi30k train": [DATA / "multi30k" / "train"],
}


def lengths(stems: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    import sentencepiece as spm

    src = [line.strip() for stem in stems for line in stem.with_suffix(".en").read_text().splitlines()]
    tgt = [line.strip() for stem in stems for line in stem.with_suffix(".de").read_text().splitlines()]
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "all.txt"
        text.write_text("\n".join(src + tgt) + "\n")
        spm.SentencePieceTrainer.train(
            input=str(text), model_prefix=f"{tmp}/bpe", vocab_size=8000, model_type="bpe", minloglevel=2
        )
        sp = spm.SentencePieceProcessor(model_file=f"{tmp}/bpe.model")
        s = np.array([len(x) for x in sp.encode(src)])
        t = np.array([len(x) for x in sp.encode(tgt)])
    keep = (s > 0) & (t > 0) & (s <= 256) & (t <= 256)  # data.max_len's default
    return s[keep], t[keep]


def measure(s: np.ndarray, t: np.ndarray, max_tokens: int, ratio: float, multiple: int) -> tuple[int, float, int]:
    bucketing = {"bucket_ratio": ratio, "max_len": 256}
    sampler = TokenBucketBatchSampler(s, t, max_tokens, seed=1, batch_multiple=multiple, **bucketing)
    batches = sampler.epoch_batches(0)
    shapes = batch_shapes(s, t, batches, **bucketing)
    return len(set(shapes)), padding_stats(s, t, batches, **bucketing)["total"], len(batches)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-tokens", type=int, nargs="+", default=[4096, 6250, 25000])
    p.add_argument("--bucket-ratio", type=float, default=1.1)
    p.add_argument("--batch-multiple", type=int, default=8)
    args = p.parse_args()
    for name, stems in CORPORA.items():
        if not all(stem.with_suffix(".en").is_file() for stem in stems):
            print(f"{name}: skipped, its files are not in {DATA}")
            continue
        s, t = lengths(stems)
        if name.startswith("newstest"):  # also at WMT's scale: 600k pairs drawn from these length pairs
            _report("newstest lengths x100", *_resample(s, t, 600_000), args)
        _report(name, s, t, args)
    print(f"bucketed: lengths up a ladder {args.bucket_ratio:g}x apart, batches of k x {args.batch_multiple} pairs")


def _resample(s: np.ndarray, t: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    pick = np.random.default_rng(0).integers(0, len(s), n)
    return s[pick], t[pick]


def _report(name: str, s: np.ndarray, t: np.ndarray, args: argparse.Namespace) -> None:
    print(f"{name}: {len(s)} pairs, mean {s.mean():.1f} / {t.mean():.1f} subwords (load {os.getloadavg()[0]:.2f})")
    print(f"{'max_tokens':>10}  {'shapes now':>10}  {'bucketed':>8}  {'padding now':>11}  {'bucketed':>8}  batches")
    for mt in args.max_tokens:
        n0, pad0, b0 = measure(s, t, mt, 0.0, 1)
        n1, pad1, b1 = measure(s, t, mt, args.bucket_ratio, args.batch_multiple)
        print(f"{mt:>10}  {n0:>10}  {n1:>8}  {pad0:>11.1%}  {pad1:>8.1%}  {b0} -> {b1}")


if __name__ == "__main__":
    main()
