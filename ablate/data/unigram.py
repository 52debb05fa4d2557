"""The unigram floor: the dev perplexity of a unigram model of the training targets.

A Table 3 row whose dev perplexity is not clearly below this floor has learned no more than subword
frequencies (docs/trust.md: such a row is marked and its statistics withheld).

The floor is measured on the same tokens as ``val/ppl`` (ablate/eval/nll.py): target outputs are the
sentence's subwords followed by EOS (ablate/data/special.py; ``collate`` in ablate/data/batching.py),
padding not counted, natural log. The prepared shards store ids *without* EOS (ablate/data/shards.py),
so every sentence adds one EOS here, in training counts and in dev tokens alike.

Smoothing: add-k (Laplace for k = 1) over the whole vocabulary,
``p(w) = (count(w) + k) / (N + k * V)`` with N the training target tokens (EOS included) and V the
vocabulary size, so a dev subword unseen in training has a finite cost, as it has under the model's
softmax over the same V ids. Pure numpy (``bincount``); about a million tokens take milliseconds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ablate.data.shards import Shard
from ablate.data.special import EOS_ID


def _flatten(targets: Iterable[Sequence[int]]) -> tuple[np.ndarray, int]:
    """All ids of ``targets`` in one int64 array, and the number of sentences."""
    seqs = list(targets)
    if seqs and all(isinstance(s, np.ndarray) for s in seqs):
        flat = np.concatenate(seqs).astype(np.int64, copy=False)
    else:
        flat = np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int64)
    return flat, len(seqs)


def _check_ids(ids: np.ndarray, vocab_size: int, what: str) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError(f"{what}: expected a flat array of token ids, got shape {ids.shape}")
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{what}: token ids must be integers, got {ids.dtype}")
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"{what}: token ids must lie in [0, {vocab_size}), got [{int(ids.min())}, {int(ids.max())}]")
    return ids


def unigram_ppl_from_arrays(
    train_ids: np.ndarray,
    dev_ids: np.ndarray,
    vocab_size: int,
    n_train_sentences: int,
    n_dev_sentences: int,
    eos_id: int | None,
    k: float = 1.0,
) -> float:
    """Dev perplexity of an add-``k`` unigram model of the training targets, from flat id arrays.

    ``train_ids`` / ``dev_ids``: every target id of the split, concatenated, without EOS (as a
    prepared shard's ``tgt_ids`` holds them); ``n_*_sentences``: how many sentences they hold. With
    ``eos_id`` set, each sentence contributes one EOS token (training count and dev cost), as the
    model's target outputs do; with None, no EOS is added.
    """
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
    if not k > 0:
        raise ValueError(f"the smoothing constant k must be > 0, got {k}")
    if n_train_sentences < 0 or n_dev_sentences < 0:
        raise ValueError("sentence counts must be >= 0")
    if eos_id is not None and not 0 <= eos_id < vocab_size:
        raise ValueError(f"eos_id {eos_id} is outside the vocabulary [0, {vocab_size})")
    train_ids = _check_ids(train_ids, vocab_size, "train_ids")
    dev_ids = _check_ids(dev_ids, vocab_size, "dev_ids")
    n_eos_train = n_train_sentences if eos_id is not None else 0
    n_eos_dev = n_dev_sentences if eos_id is not None else 0
    n_dev = dev_ids.size + n_eos_dev
    if n_dev == 0:
        raise ValueError("no dev tokens to score")

    counts = np.bincount(train_ids, minlength=vocab_size).astype(np.float64)
    if eos_id is not None:
        counts[eos_id] += n_eos_train
    logp = np.log(counts + k) - math.log(float(counts.sum()) + k * vocab_size)  # V
    # Cost of the dev tokens = sum over ids of (occurrences in dev) * -log p(id).
    dev_counts = np.bincount(dev_ids, minlength=vocab_size).astype(np.float64)
    if eos_id is not None:
        dev_counts[eos_id] += n_eos_dev
    nll = -float(dev_counts @ logp) / n_dev
    return math.exp(nll)


def unigram_ppl(
    train_targets: Iterable[Sequence[int]],
    dev_targets: Iterable[Sequence[int]],
    vocab_size: int,
    eos_id: int | None,
    k: float = 1.0,
) -> float:
    """Dev perplexity of an add-``k`` unigram model of the training targets, from id sequences.

    Each target is one sentence's subword ids without EOS; with ``eos_id`` set, one EOS is counted
    per sentence (see the module docstring). Equal to :func:`unigram_ppl_from_arrays` on the
    concatenated ids.
    """
    train, n_train = _flatten(train_targets)
    dev, n_dev = _flatten(dev_targets)
    return unigram_ppl_from_arrays(train, dev, vocab_size, n_train, n_dev, eos_id, k)


def unigram_floor(train: Any, dev: Any, vocab_size: int, eos_id: int = EOS_ID, k: float = 1.0) -> float:
    """The floor of a prepared dataset, from its train and dev :class:`~ablate.data.shards.Shard`.

    Reads each shard's flat ``tgt_ids`` and its sentence count ``n`` (the shards store ids without
    EOS; one is counted per sentence).
    """
    return unigram_ppl_from_arrays(
        np.asarray(train.tgt_ids), np.asarray(dev.tgt_ids), vocab_size, int(train.n), int(dev.n), eos_id, k
    )


def learned(ppl: float, floor: float, ratio: float = 0.8) -> bool:
    """Whether a row learned more than subword frequencies: its dev PPL is below ``ratio`` x the floor.

    A nan or infinite PPL (a diverged run) has not learned.
    """
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    if not (floor > 0 and math.isfinite(floor)):
        raise ValueError(f"the unigram floor must be a positive finite perplexity, got {floor}")
    return ppl < ratio * floor  # False for nan and inf


def split_floors(folder: Path, names: list[str], vocab_size: int) -> dict[str, float]:
    """The unigram floor of every split but train of a prepared folder being built, for the report."""
    train = Shard(folder / "shards" / "train")
    return {n: unigram_floor(train, Shard(folder / "shards" / n), vocab_size) for n in names if n != "train"}
