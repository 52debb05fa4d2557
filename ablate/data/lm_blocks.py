"""A language model's data: one split's target side as one token stream, cut into fixed-length blocks.

The prepared corpus (ablate/data/prepare.py: one SentencePiece vocabulary, tokenized once and cached)
is read on its target side: each sentence (a document: the builtin language's, a Multi30k caption, a
line of your text) is followed by EOS, the separator, and the sentences are joined in file order into
one stream. A block of length L holds L + 1 tokens (L inputs, their L next tokens); blocks start every L
tokens, so consecutive blocks share one token (the last target of one is the first input of the next)
and every token after the first is predicted exactly once; the tail shorter than a block is left out,
and counted. Training uses L = ``data.block_size``, one static shape for every batch; evaluation at a
context length l cuts the stream the same way (non-overlapping windows, as Press et al. 2022 evaluate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ablate.data.errors import DataError
from ablate.data.special import EOS_ID


def token_stream(shard: object) -> np.ndarray:
    """The target side of a prepared split as one stream: every sentence followed by EOS (int64)."""
    ids = np.asarray(shard.tgt_ids, np.int64)  # type: ignore[attr-defined]
    ends = np.asarray(shard.tgt_off[1:], np.int64)  # type: ignore[attr-defined]
    return np.insert(ids, ends, EOS_ID) if len(ends) else np.zeros(0, np.int64)


@dataclass(frozen=True)
class Blocks:
    """The blocks of one stream at one length: ``rows`` [n, length + 1] and the targets left out."""

    rows: np.ndarray
    length: int
    left_out: int  # stream tokens after the last whole block: never predicted at this length

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def targets(self) -> int:
        return len(self.rows) * self.length


def stream_tokens(tgt_lengths: object) -> int:
    """Tokens in the stream of a split whose sentences have these target lengths (each followed by EOS)."""
    return sum(int(n) for n in tgt_lengths) + len(tgt_lengths)  # type: ignore[arg-type]


def whole_blocks(n_tokens: int, length: int) -> int:
    """Blocks of ``length`` a stream of ``n_tokens`` holds (each length + 1 tokens, one shared with the next)."""
    return (n_tokens - 1) // length if n_tokens > 1 else 0


def blocks(stream: np.ndarray, length: int, where: str = "the stream") -> Blocks:
    """``stream`` cut into blocks of ``length`` (see the module doc); a DataError when not one fits."""
    n = whole_blocks(len(stream), length)
    if n < 1:
        raise DataError(
            f"{where}: {len(stream):,} tokens cannot hold one block of {length} (+1) tokens; lower data.block_size "
            "(or eval.lengths), or give it more text"
        )
    starts = np.arange(n, dtype=np.int64)[:, None] * length
    rows = stream[starts + np.arange(length + 1, dtype=np.int64)[None, :]]
    return Blocks(rows, length, len(stream) - 1 - n * length)


def split_blocks(shard: object, length: int, split: str) -> Blocks:
    """The blocks of a prepared split at ``length``."""
    return blocks(token_stream(shard), length, f"data split {split!r}")
