"""Batch shapes per epoch on real text, and the padding they cost: a CPU proxy of what a GPU sees.

    python benchmarks/bench_shapes.py                     # newstest2013+2014 en-de, several batches
    python benchmarks/bench_shapes.py --max-tokens 6250 25000

cuDNN's attention plans, the compiler and CUDA graphs each pay once per new batch shape (B, S, T).
This trains a SentencePiece BPE model (8,000, shared) on newstest2013+2014 from ``../shared/data``
(skipped with a message where absent), tokenizes both, and for each ``--max-tokens`` counts the
distinct training batch shapes of one epoch and the padding share, first as batches are cut today
(``data.pad_to=1``, ``data.batch_multiple=1``), then bucketed (lengths padded to multiples of
``--pad-to``, sentences per batch a multiple of ``--batch-multiple``). Prints ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from ablate.data.batching import TokenBucketBatchSampler, batch_shapes, padding_stats

NEWSTEST = Path(__file__).resolve().parents[2] / "shared" / "data" / "newstest"


def lengths(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    import sentencepiece as spm

    src = [line.strip() for y in (2013, 2014) for line in (folder / f"newstest{y}.en").read_text().splitlines()]
    tgt = [line.strip() for y in (2013, 2014) for line in (folder / f"newstest{y}.de").read_text().splitlines()]
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


def measure(s: np.ndarray, t: np.ndarray, max_tokens: int, pad_to: int, multiple: int) -> tuple[int, float, int]:
    sampler = TokenBucketBatchSampler(s, t, max_tokens, seed=1, pad_to=pad_to, batch_multiple=multiple, max_len=256)
    batches = sampler.epoch_batches(0)
    shapes = batch_shapes(s, t, batches, pad_to=pad_to, max_len=256)
    return len(set(shapes)), padding_stats(s, t, batches, pad_to=pad_to, max_len=256)["total"], len(batches)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-tokens", type=int, nargs="+", default=[4096, 6250, 25000])
    p.add_argument("--pad-to", type=int, default=16)
    p.add_argument("--batch-multiple", type=int, default=8)
    args = p.parse_args()
    if not NEWSTEST.is_dir():
        sys.exit(f"skipped: {NEWSTEST} is not here (the shared newstest files)")
    s, t = lengths(NEWSTEST)
    print(f"newstest2013+2014: {len(s)} pairs, mean {s.mean():.1f} / {t.mean():.1f} subwords (load {os.getloadavg()[0]:.2f})")
    print(f"{'max_tokens':>10}  {'shapes today':>12}  {'bucketed':>8}  {'padding today':>13}  {'bucketed':>8}  batches")
    for mt in args.max_tokens:
        n0, pad0, b0 = measure(s, t, mt, 1, 1)
        n1, pad1, b1 = measure(s, t, mt, args.pad_to, args.batch_multiple)
        print(f"{mt:>10}  {n0:>12}  {n1:>8}  {pad0:>13.1%}  {pad1:>8.1%}  {b0} -> {b1}")
    print(f"bucketed: lengths to multiples of {args.pad_to}, sentences per batch a multiple of {args.batch_multiple}")


if __name__ == "__main__":
    main()
