"""Pass 1 of preparing a corpus: its raw pairs copied into the prepared folder, and read back in chunks.

The copy is what BLEU scores against (one sentence per line) and what pass 2 encodes; while train is
copied, a reservoir sample of its sentences is kept for the tokenizer.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from ablate.data.errors import DataError
from ablate.data.registry import Corpus

CHUNK = 20_000  # pairs encoded at a time
SAMPLE_SEED = 0x5EED  # the tokenizer sample is a function of the corpus alone


def write_raw(
    corpus: Corpus, split: str, folder: Path, sample: list[str] | None, sample_size: int, limit: int | None = None
) -> int:
    """Pass 1: copy a split's raw pairs (the first ``limit``); reservoir-sample train sentences for the tokenizer."""
    rng = random.Random(SAMPLE_SEED)
    seen = 0
    n = 0
    with (
        open(folder / f"{split}.src", "w", encoding="utf-8") as fs,
        open(folder / f"{split}.tgt", "w", encoding="utf-8") as ft,
    ):
        for s, t in corpus.pairs(split):
            if limit is not None and n >= limit:
                break
            if "\n" in s or "\n" in t:  # a generator must not break the one-line-per-sentence layout
                raise DataError(f"corpus {corpus.name}: split {split} pair {n + 1} contains a line break")
            fs.write(s + "\n")
            ft.write(t + "\n")
            n += 1
            if sample is not None:
                for sent in (s, t):
                    seen += 1
                    if len(sample) < sample_size:
                        sample.append(sent)
                    else:
                        j = rng.randrange(seen)
                        if j < sample_size:
                            sample[j] = sent
    return n


def read_chunks(folder: Path, split: str) -> Iterator[tuple[int, list[str], list[str]]]:
    with open(folder / f"{split}.src", encoding="utf-8") as fs, open(folder / f"{split}.tgt", encoding="utf-8") as ft:
        start = 0
        while True:
            src = [line.rstrip("\n") for _, line in zip(range(CHUNK), fs)]
            tgt = [line.rstrip("\n") for _, line in zip(range(len(src)), ft)]
            if not src:
                return
            yield start, src, tgt
            start += len(src)
