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

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ablate.data.errors import DataError
from ablate.data.special import EOS_ID


def token_stream(shard: object) -> np.ndarray:
    """The target side of a prepared split as one stream: every sentence followed by EOS (int64)."""
    ids = np.asarray(shard.tgt_ids, np.int64)  # type: ignore[attr-defined]
    ends = np.asarray(shard.tgt_off[1:], np.int64)  # type: ignore[attr-defined]
    return np.insert(ids, ends, EOS_ID) if len(ends) else np.zeros(0, np.int64)


class Blocks:
    """The blocks of one split at one length, as index arithmetic over its token parts (one 1-D array per
    token file, memory-mapped: ablate/data/token_files.py): nothing of the split is copied but the blocks a
    batch takes. Blocks never span two parts (a shard file is a stream of its own, as llm.c reads them)."""

    def __init__(self, parts: Sequence[np.ndarray], length: int) -> None:
        self.parts, self.length = list(parts), int(length)
        counts = [whole_blocks(len(p), self.length) for p in self.parts]
        self.first = np.cumsum([0, *counts], dtype=np.int64)  # each part's first block, then the total
        # tokens after the last whole block of each part: never predicted at this length
        self.left_out = sum(max(len(p) - 1, 0) - n * self.length for p, n in zip(self.parts, counts))

    def __len__(self) -> int:
        return int(self.first[-1])

    @property
    def targets(self) -> int:
        return len(self) * self.length

    def take(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """Blocks ``indices`` as rows [k, length + 1] (int64), read from their parts."""
        index = np.asarray(indices, np.int64)
        part = np.searchsorted(self.first, index, side="right") - 1
        out = np.empty((len(index), self.length + 1), np.int64)
        for row, (p, i) in enumerate(zip(part.tolist(), index.tolist())):
            start = (i - int(self.first[p])) * self.length
            out[row] = self.parts[p][start : start + self.length + 1]
        return out


def block_batch(blocks: Blocks, indices: np.ndarray | list[int]) -> dict[str, Any]:
    """The batch of blocks ``indices``: inputs ``tgt_in`` (a block's first L tokens), targets ``tgt_out``
    (its last L: the next token of each) and ``index``; the one place a block is split, for training
    (ablate/data/lm_datamodule.py) and for evaluation (ablate/eval/lm_eval.py) alike."""
    import torch  # here: the dry run counts blocks without torch

    index = np.asarray(indices, np.int64)
    block = torch.from_numpy(blocks.take(index))
    return {"tgt_in": block[:, :-1], "tgt_out": block[:, 1:], "index": torch.from_numpy(index)}


def stream_tokens(tgt_lengths: object) -> int:
    """Tokens in the stream of a split whose sentences have these target lengths (each followed by EOS)."""
    return sum(int(n) for n in tgt_lengths) + len(tgt_lengths)  # type: ignore[arg-type]


def whole_blocks(n_tokens: int, length: int) -> int:
    """Blocks of ``length`` a stream of ``n_tokens`` holds (each length + 1 tokens, one shared with the next)."""
    return (n_tokens - 1) // length if n_tokens > 1 else 0


def length_problem(data: Any, split: str, length: int) -> str | None:
    """Why a split of language-model data holds no block of ``length`` (blocks never span two parts), from its
    token counts alone (``data.part_tokens``: no token is read), or None."""
    parts = data.part_tokens(split)
    if any(whole_blocks(int(n), int(length)) for n in parts):
        return None
    most = max((int(n) for n in parts), default=0)
    where = " in its longest part" if len(parts) > 1 else ""
    return f"data split {split!r} holds {most:,} tokens{where}, not one block of {length} (+1)"


def blocks(parts: np.ndarray | Sequence[np.ndarray], length: int, where: str = "the stream") -> Blocks:
    """A stream (or its parts) cut into blocks of ``length`` (see the module doc); a DataError when not one fits."""
    parts = [parts] if isinstance(parts, np.ndarray) else list(parts)
    found = Blocks(parts, length)
    if len(found) < 1:
        n_tokens = sum(len(p) for p in parts)
        raise DataError(
            f"{where}: {n_tokens:,} tokens cannot hold one block of {length} (+1) tokens; lower data.block_size "
            "(or eval.lengths), or give it more text"
        )
    return found


def split_blocks(data: Any, length: int, split: str) -> Blocks:
    """The blocks of a split of language-model data at ``length``: ``data.token_parts(split)`` (a prepared
    corpus's target stream, or token shards read in place)."""
    return blocks(data.token_parts(split), length, f"data split {split!r}")


def text_stream(prepared: Any, split: str) -> np.ndarray:
    """The target side of a prepared split's raw text as one stream, every line encoded and followed by EOS:
    the whole text, where the split's shard left out the lines over ``data.max_len`` (int64)."""
    from ablate.data.rawtext import read_chunks

    chunks = []
    for _, _, tgt in read_chunks(Path(prepared.dir) / "raw", split):
        ids = prepared.tokenizer.encode_batch(tgt)
        lengths = np.fromiter((len(x) for x in ids), np.int64, len(ids))
        flat = np.fromiter((i for x in ids for i in x), np.int64, int(lengths.sum()))
        chunks.append(np.insert(flat, np.cumsum(lengths), EOS_ID))
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int64)


def stream_parts(prepared: Any, split: str) -> list[np.ndarray]:
    """A prepared corpus's split as one token file ``lm/<split>.bin`` in its folder, written once (atomic: a
    killed writer leaves none) and read in place after (ablate/data/token_files.py); in memory where the
    folder cannot be written or the vocabulary does not fit uint16.

    A translator's training pairs over ``data.max_len`` are left out of the train shard when the corpus is
    prepared; a language model never drops a document (it cuts a long one across blocks), so where the
    shard left any out its stream is encoded from the whole raw text, into a file of another name
    (``lm/<split>.whole.bin``: one written from the kept sentences alone is not that stream)."""
    from ablate.data.token_files import MAX_UINT16_VOCAB, inspect_file, write_tokens

    shard = prepared.split(split)
    path = Path(prepared.dir) / "lm" / (f"{split}.whole.bin" if shard.dropped else f"{split}.bin")
    if not path.is_file():
        stream = text_stream(prepared, split) if shard.dropped else token_stream(shard)
        if prepared.vocab_size > MAX_UINT16_VOCAB:
            return [stream]
        try:
            path.parent.mkdir(exist_ok=True)
            write_tokens(path, stream)
        except OSError:  # a read-only cache: the stream stays in this process
            return [stream]
    return [inspect_file(path).reader()]


def stream_floor(data: Any, split: str, k: float = 1.0) -> float:
    """Dev PPL on ``split``'s stream of an add-``k`` unigram model of the training stream: the floor of what
    a language model trains on and is scored on (every EOS counted, as its targets hold them).

    Token shards (``data.corpus: shards``) count their files once and keep the counts; a prepared text
    corpus whose train shard kept every line has the same figure stored (ablate/data/unigram.py). One whose
    shard left long lines out (a translator's ``data.max_len``) would give the floor of the kept lines, not
    of the whole text the language model trains on, so its streams are counted here (a text corpus: a
    bincount over its tokens, milliseconds a million)."""
    from ablate.data.unigram import unigram_ppl_from_arrays

    if not getattr(data.split("train"), "dropped", 0):  # token shards' splits are lists of files
        return float(data.unigram_floor(split))

    def flat(name: str) -> np.ndarray:
        return np.concatenate([np.asarray(p[0 : len(p)], np.int64) for p in data.token_parts(name)])

    return unigram_ppl_from_arrays(flat("train"), flat(split), data.vocab_size, 0, 0, None, k)
