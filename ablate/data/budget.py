"""A training budget in steps, epochs or target tokens, resolved to optimizer steps from the prepared data.

A recipe tuned on one corpus says "2,000 steps"; pointed at a corpus with twice the pairs or twice the
sentence length, the same steps are half the epochs and the recipe's premise ("the corpus seen about as
often as the paper saw WMT") is gone. ``train.epochs`` (passes over the training pairs actually used)
or ``train.target_tokens`` (real target subwords, EOS included: what the loss is summed over) say the
budget in the terms that carry, and are resolved to steps here once the data is prepared (a language
model's epoch is one pass over its training blocks, its target tokens the L each block predicts):

    steps per epoch = ceil((batches of one epoch // devices) / accumulate_grad_batches)
    steps = round(epochs * steps per epoch)  or  ceil(target_tokens / target tokens per step)

torch-free (numpy only), so ``ablate sweep --dry-run`` prints every row's steps, epochs and target
tokens from a prepared folder's statistics without loading torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class EpochStats:
    """One epoch of the training split at a ``data.max_tokens``."""

    pairs: int  # training pairs (after data.max_train_pairs and the max_len filter)
    target_tokens: int  # real target tokens of the epoch, EOS included (what the loss is summed over)
    batches: int  # batches of max_tokens in one epoch, over all devices


@dataclass(frozen=True)
class Budget:
    """A trial's training length: the rule that set it and what it comes to (None: data not prepared)."""

    rule: str  # "train.max_steps" | "train.epochs" | "train.target_tokens"
    steps: int | None
    epochs: float | None
    target_tokens: float | None

    def line(self) -> str:
        """``train.epochs=12 -> 1,987 steps, 12.0 epochs, 2.01M target tokens`` (for logs)."""
        epochs = f"{self.epochs:.1f} epochs" if self.epochs is not None else "epochs unknown"
        tokens = f"{_count(self.target_tokens)} target tokens" if self.target_tokens is not None else ""
        steps = f"{self.steps:,} steps" if self.steps is not None else "steps unknown"
        return f"budget {self.rule} -> {', '.join(x for x in (steps, epochs, tokens) if x)}"


def _count(n: float) -> str:
    return f"{n / 1e6:.3g}M" if n >= 1e6 else f"{n:,.0f}"


def epoch_stats(src_lengths: np.ndarray, tgt_lengths: np.ndarray, max_tokens: int, **bucketing: Any) -> EpochStats:
    """The statistics of one training epoch, batched exactly as the training sampler batches it
    (``bucketing``: its bucket_ratio, batch_multiple and max_len)."""
    import numpy as np  # here: the dry run reads cached statistics and needs no numpy (80 ms to import)

    from ablate.data.batching import TokenBucketBatchSampler

    sampler = TokenBucketBatchSampler(src_lengths, tgt_lengths, max_tokens, seed=0, **bucketing)
    target = int(np.asarray(tgt_lengths, np.int64).sum()) + len(tgt_lengths)  # + EOS of every pair
    return EpochStats(pairs=len(tgt_lengths), target_tokens=target, batches=sampler.num_batches())


def lm_epoch_stats(part_tokens: Any, block: int, max_tokens: int) -> EpochStats:
    """One epoch of a language model's training blocks (ablate/data/lm_blocks.py, lm_datamodule.py): each
    part of the training stream (``part_tokens``: its token count; a prepared corpus has one, token shards
    one a file) cut into (tokens - 1) // L blocks of L predicted tokens, batched ``max_tokens // L`` (at
    least one) blocks a batch, a short last batch left out. ``pairs`` are blocks."""
    from ablate.data.lm_blocks import whole_blocks  # numpy: not for the dry run's import

    blocks = sum(whole_blocks(int(n), int(block)) for n in part_tokens)
    per_batch = max(1, int(max_tokens) // int(block))
    batches = blocks // per_batch if blocks >= per_batch else min(blocks, 1)  # one short batch is kept
    return EpochStats(pairs=blocks, target_tokens=min(blocks, batches * per_batch) * int(block), batches=batches)


def steps_per_epoch(stats: EpochStats, devices: int, accumulate: int) -> int:
    """Optimizer steps in one epoch: every device reads batches // devices batches of it."""
    return max(1, math.ceil((stats.batches // max(1, devices)) / max(1, accumulate)))


def resolve(train: Mapping[str, Any], stats: EpochStats | None, devices: int = 1, accumulate: int = 1) -> Budget:
    """The budget of a ``train`` section: its steps, epochs and target tokens (what ``stats`` allows)."""
    epochs, tokens = train.get("epochs"), train.get("target_tokens")
    per_epoch = steps_per_epoch(stats, devices, accumulate) if stats is not None else None
    if epochs is None and tokens is None:
        steps = int(train["max_steps"])
        rule = "train.max_steps"
    elif per_epoch is None or stats is None:
        return Budget("train.epochs" if epochs is not None else "train.target_tokens", None, epochs, tokens)
    elif epochs is not None:
        steps, rule = max(1, round(float(epochs) * per_epoch)), "train.epochs"
    else:
        per_step = stats.target_tokens / per_epoch
        steps, rule = max(1, math.ceil(float(tokens) / per_step)), "train.target_tokens"
    if per_epoch is None or stats is None:
        return Budget(rule, steps, None, None)
    return Budget(rule, steps, steps / per_epoch, steps * stats.target_tokens / per_epoch)
