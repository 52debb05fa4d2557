"""Token-bucketed batches: ``max_tokens`` per batch counting padding, similar lengths together.

The paper batches "sentence pairs together by approximate sequence length", ~25,000 source and
25,000 target tokens per batch (section 5.1). Here a batch of B pairs padded to S source and T target
positions (EOS and BOS included) costs ``B * max(S, T)`` and holds at most ``max_tokens``.

Training batches are sorted by ``max(S, T)`` (the cost unit) and then by ``T - S``, in alternating
direction from one ``max`` value to the next (a snake, so neighbouring groups meet at similar shapes).
Measured on Multi30k at max_tokens=4096 this pads 3.1% of positions (source 3.6%, target 2.6%),
against 6.5% for a target-then-source sort and 6.5% for source-then-target; on the builtin corpus
1.8%. A key value fixes both lengths, so batch boundaries depend only on the sorted length sequence and are
computed once; every epoch reshuffles which of the equal-length pairs share a batch and the order of
the batches, from (seed, epoch). Under DDP every rank takes every world_size-th batch of the same
shuffled list (the last ``len % world_size`` batches of an epoch are left out so counts are equal).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

from ablate.data.special import BOS_ID, EOS_ID, PAD_ID


def _boundaries(s_sorted: np.ndarray, t_sorted: np.ndarray, max_tokens: int, multiple: int = 1) -> np.ndarray:
    """Greedy cut points over sorted lengths (with specials): a batch grows while B * max(S, T) fits;
    with ``multiple`` > 1 a full batch of more than ``multiple`` pairs keeps a multiple of it (the rest
    starts the next batch)."""
    cuts = [0]
    start, s_max, t_max, k, n = 0, 0, 0, 0, len(s_sorted)
    while k < n:
        s_max2, t_max2 = max(s_max, int(s_sorted[k])), max(t_max, int(t_sorted[k]))
        if k > start and (k - start + 1) * max(s_max2, t_max2) > max_tokens:
            size = k - start
            if multiple > 1 and size > multiple:
                size -= size % multiple
            start = k = start + size
            cuts.append(start)
            s_max, t_max = 0, 0
            continue
        s_max, t_max, k = s_max2, t_max2, k + 1
    cuts.append(n)
    return np.asarray(cuts, np.int64) if n else np.zeros(1, np.int64)


def ladder(ratio: float, top: int) -> np.ndarray:
    """Bucket lengths 1, 2, ..., 8, then each about ``ratio`` times the one before, ending at ``top``."""
    rungs, b = [], 1
    while b < top:
        rungs.append(b)
        b = b + 1 if b < 8 else max(b + 1, math.ceil(b * ratio))
    return np.asarray([*rungs, top], np.int64)


def bucket(lengths: np.ndarray, ratio: float, max_len: int | None) -> np.ndarray:
    """Lengths (specials included) padded up to the next rung of :func:`ladder`, which ends at
    ``max_len`` + 1 (the longest a kept pair can be): the few lengths a bucketed batch can have.

    Why a geometric ladder, not multiples of 16: padding costs the share a rung adds, so even rungs
    must be ~10% apart. Measured (benchmarks/bench_shapes.py, 4,096 tokens): multiples of 16 took
    Multi30k's padding from 3.1% to 28.9% (its sentences average 14 subwords), multiples of 8 to
    19.5%; a ladder 10% apart to 5.1%, with 54 shapes an epoch instead of 98."""
    lengths = np.asarray(lengths, np.int64)
    if ratio <= 1 or not len(lengths):
        return lengths
    rungs = ladder(ratio, max(int(max_len or 0) + 1, int(lengths.max())))
    return rungs[np.searchsorted(rungs, lengths)]


class TokenBucketBatchSampler:
    """Yields lists of row indices of a shard. ``shuffle=False`` gives the deterministic eval order
    (sorted by source then target length, every row once, no DDP split)."""

    def __init__(
        self,
        src_lengths: Sequence[int] | np.ndarray,
        tgt_lengths: Sequence[int] | np.ndarray,
        max_tokens: int,
        seed: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
        bucket_ratio: float = 0.0,
        batch_multiple: int = 1,
        max_len: int | None = None,
        whole_batches: bool = False,
    ) -> None:
        """``whole_batches``: leave out a last batch shorter than the others (a language model's fixed-length
        blocks: every batch one static shape; a shuffled epoch leaves out other blocks each time)."""
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, world_size={world_size})")
        # +1: EOS on the source, BOS (input) / EOS (output) on the target; as long as collate pads them
        self.s = bucket(np.asarray(src_lengths, np.int64) + 1, bucket_ratio, max_len)
        self.t = bucket(np.asarray(tgt_lengths, np.int64) + 1, bucket_ratio, max_len)
        self.max_tokens, self.seed, self.shuffle, self.bucketed = int(max_tokens), int(seed), shuffle, bucket_ratio > 1
        self.rank, self.world_size = rank, world_size
        self.epoch, self.position = 0, 0
        order = np.lexsort(self._keys(np.arange(len(self.s))))
        self._cuts = _boundaries(self.s[order], self.t[order], self.max_tokens, batch_multiple)
        sizes = np.diff(self._cuts)
        if whole_batches and len(sizes) > 1 and sizes[-1] < sizes[0]:
            self._cuts = self._cuts[:-1]
        self._eval_order = order

    def _keys(self, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """np.lexsort keys (last = primary) for ``rows``."""
        s, t = self.s[rows], self.t[rows]
        if not self.shuffle:  # eval: by source length (what decoding cost depends on), then target
            return (t, s)
        m = np.maximum(s, t)
        # The snake turns at each length; bucketed lengths are rungs (not consecutive), so there it turns
        # at each rung. Unbucketed it stays m's parity: the batches every trial before bucketing trained on.
        turn = np.unique(m, return_inverse=True)[1] if self.bucketed else m
        return (np.where(turn % 2 == 0, t - s, s - t), m)

    # -- epochs ---------------------------------------------------------------------------------
    def num_batches(self) -> int:
        """Batches in one epoch over all ranks."""
        return len(self._cuts) - 1

    def __len__(self) -> int:
        if not self.shuffle:
            return self.num_batches()
        return self.num_batches() // self.world_size

    def set_epoch(self, epoch: int) -> None:
        """Called by Lightning at each epoch start; a different epoch restarts at its first batch."""
        if epoch != self.epoch:
            self.epoch, self.position = int(epoch), 0

    def epoch_batches(self, epoch: int) -> list[np.ndarray]:
        """This rank's batches of ``epoch``, in the order they are yielded."""
        if not self.shuffle:
            order = self._eval_order
            return [order[a:b] for a, b in zip(self._cuts[:-1], self._cuts[1:])]
        rng = np.random.default_rng([self.seed, epoch])
        perm = rng.permutation(len(self.s))
        order = perm[np.lexsort(self._keys(perm))]  # stable: equal lengths stay in shuffled order
        batches = [order[a:b] for a, b in zip(self._cuts[:-1], self._cuts[1:])]
        shuffled = rng.permutation(len(batches))
        usable = len(batches) - len(batches) % self.world_size
        return [batches[j] for j in shuffled[self.rank : usable : self.world_size]]

    def __iter__(self) -> Iterator[list[int]]:
        if not self.shuffle:
            # Eval order is fixed and every pass is whole: Lightning stops after len(loader) batches
            # without exhausting this generator, so a remembered position would empty the next pass.
            for batch in self.epoch_batches(0):
                yield batch.tolist()
            return
        epoch, start = self.epoch, self.position
        batches = self.epoch_batches(epoch)
        if start >= len(batches):
            # The last pass ended after its final batch without exhausting this generator (Lightning
            # stops at len(loader) batches), so the move to the next epoch below never ran: make it
            # now. Before, that pass yielded nothing and Lightning counted an empty epoch after every
            # real one (metrics said epoch 21 for 10.9 passes, and train.max_epochs gave half its passes).
            epoch, start = epoch + 1, 0
            batches = self.epoch_batches(epoch)
            self.epoch, self.position = epoch, 0
        for k in range(start, len(batches)):
            self.position = k + 1
            yield batches[k].tolist()
        self.epoch, self.position = epoch + 1, 0  # a finished epoch moves on, also without set_epoch

    # -- resuming -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """The next ``__iter__`` continues ``epoch`` after ``position`` batches (of this rank)."""
        self.epoch, self.position = int(state["epoch"]), int(state["position"])


def padding_stats(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    batches: Sequence[np.ndarray],
    bucket_ratio: float = 0.0,
    max_len: int | None = None,
) -> dict[str, float]:
    """Fraction of padded positions on each side and overall (lengths without specials), for batches
    collated with ``bucket_ratio`` / ``max_len``."""
    s = np.asarray(src_lengths, np.int64) + 1
    t = np.asarray(tgt_lengths, np.int64) + 1
    real_s = real_t = pad_s = pad_t = 0
    batches = [b for b in batches if len(b)]
    shapes = batch_shapes(src_lengths, tgt_lengths, batches, bucket_ratio, max_len)
    for b, (n, width_s, width_t) in zip(batches, shapes):
        real_s, real_t = real_s + int(s[b].sum()), real_t + int(t[b].sum())
        pad_s, pad_t = pad_s + n * width_s, pad_t + n * width_t
    frac = lambda real, padded: 1.0 - real / padded if padded else 0.0  # noqa: E731
    return {"src": frac(real_s, pad_s), "tgt": frac(real_t, pad_t), "total": frac(real_s + real_t, pad_s + pad_t)}


def batch_shapes(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    batches: Sequence[np.ndarray],
    bucket_ratio: float = 0.0,
    max_len: int | None = None,
) -> list[tuple[int, int, int]]:
    """(pairs, source positions, target positions) of each batch as :func:`collate` pads it."""
    s = np.asarray(src_lengths, np.int64) + 1
    t = np.asarray(tgt_lengths, np.int64) + 1
    out = []
    for b in batches:
        if len(b):
            width = bucket(np.array([s[b].max(), t[b].max()]), bucket_ratio, max_len)
            out.append((len(b), int(width[0]), int(width[1])))
    return out


def collate(
    shard: Any, indices: Sequence[int], bucket_ratio: float = 0.0, max_len: int | None = None
) -> dict[str, torch.Tensor]:
    """Pad rows of ``shard``: src = ids + EOS, tgt_in = BOS + ids, tgt_out = ids + EOS (pad = 0); with
    ``bucket_ratio`` > 1 each side up to a rung of :func:`bucket`'s ladder, so batches take few shapes."""
    import torch  # here only: the batch count of an epoch (ablate.data.budget) is read without torch

    idx = np.asarray(indices, np.int64)
    s_len, t_len = shard.src_lengths[idx], shard.tgt_lengths[idx]
    B = len(idx)
    width_s, width_t = bucket(np.array([int(s_len.max()) + 1, int(t_len.max()) + 1]), bucket_ratio, max_len)
    src = np.full((B, int(width_s)), PAD_ID, np.int64)
    tgt_in = np.full((B, int(width_t)), PAD_ID, np.int64)
    tgt_out = np.full_like(tgt_in, PAD_ID)
    for r, i in enumerate(idx):
        a, b = int(s_len[r]), int(t_len[r])
        src[r, :a] = shard.src(i)
        src[r, a] = EOS_ID
        ids = shard.tgt(i)
        tgt_in[r, 0] = BOS_ID
        tgt_in[r, 1 : b + 1] = ids
        tgt_out[r, :b] = ids
        tgt_out[r, b] = EOS_ID
    return {
        "src": torch.from_numpy(src),
        "tgt_in": torch.from_numpy(tgt_in),
        "tgt_out": torch.from_numpy(tgt_out),
        "index": torch.from_numpy(idx),
    }
