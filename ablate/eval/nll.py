"""Perplexity and per-sentence NLL under teacher forcing, over a whole split.

- ``nll``: mean unsmoothed negative log-likelihood per target subword (natural log, EOS counted,
  padding not), i.e. the NLL summed over the whole set divided by its token count.
- ``ppl``: ``exp(nll)``; never the smoothed training loss, never base 2.
- per sentence: the summed NLL of each sentence's target (EOS included), in the split's order: what a
  paired bootstrap over sentences resamples (its token count is the target length + 1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F


@dataclass
class NLLMeter:
    """Accumulates summed NLL and token counts over batches (and ranks) for an exact corpus mean."""

    total: float = 0.0
    tokens: int = 0

    def update(self, nll_sum: float, n_tokens: int) -> None:
        self.total += float(nll_sum)
        self.tokens += int(n_tokens)

    @property
    def nll(self) -> float:
        return self.total / self.tokens if self.tokens else math.nan

    @property
    def ppl(self) -> float:
        return perplexity(self.nll)


def perplexity(nll: float) -> float:
    """exp(nll), saturating to inf instead of raising on overflow (an untrained model)."""
    try:
        return math.exp(nll)
    except OverflowError:
        return math.inf


@dataclass
class SplitNLL:
    """Corpus NLL of a split and the summed NLL of each of its sentences (split order)."""

    meter: NLLMeter
    sentences: list[float] = field(default_factory=list)

    @property
    def nll(self) -> float:
        return self.meter.nll

    @property
    def ppl(self) -> float:
        return self.meter.ppl


def split_batches(shard: Any, max_tokens: int) -> Iterator[dict[str, torch.Tensor]]:
    """Every sentence of ``shard`` once, in length-sorted batches of at most ``max_tokens`` (padding
    included): ``{"src", "tgt_in", "tgt_out", "index"}`` as the data module's eval loaders give them."""
    from ablate.data.batching import TokenBucketBatchSampler, collate

    sampler = TokenBucketBatchSampler(shard.src_lengths, shard.tgt_lengths, max_tokens, shuffle=False)
    for indices in sampler:
        yield collate(shard, indices)


# Rows of the decoder's output projected at a time where a caller asks for chunks (a language model's
# evaluation): as many as training projects at a time (ablate/train/losses.py), one bound on memory.
CHUNK_ROWS = 8192


def _token_nll(model: Any, batch: dict[str, torch.Tensor], device: torch.device, chunk: int | None) -> torch.Tensor:
    """Unsmoothed NLL [B, T] of every target position (0 at padding). ``chunk``: project ``chunk`` rows of
    the decoder's output at a time (``model.features`` / ``output_weight``), so no [B, T, V] logits exist:
    at GPT-2's 50,304 pieces a 64K-token batch's logits are 6.6 GB in bf16 and twice that as floats."""
    target = batch["tgt_out"].to(device)
    inputs = [x.to(device) for x in model.batch_inputs(batch)]
    if chunk is None:
        logits = model(*inputs).float()
        return F.cross_entropy(
            logits.flatten(0, 1), target.flatten(), ignore_index=model.pad_id, reduction="none"
        ).view_as(target)
    hidden, flat = model.features(*inputs).flatten(0, 1), target.flatten()
    out = torch.empty(flat.shape, dtype=torch.float32, device=device)
    for a in range(0, flat.numel(), chunk):
        z = F.linear(hidden[a : a + chunk], model.output_weight).float()
        out[a : a + chunk] = F.cross_entropy(z, flat[a : a + chunk], ignore_index=model.pad_id, reduction="none")
    return out.view_as(target)


@torch.no_grad()
def corpus_nll(
    model: Any,
    batches: Iterable[dict[str, torch.Tensor]],
    n_sentences: int | None = None,
    device: torch.device | str | None = None,
    chunk: int | None = None,
) -> SplitNLL:
    """Summed unsmoothed NLL, token count and per-sentence NLL over ``batches`` (eval mode).

    ``n_sentences``: size of the split; per-sentence values are placed by ``batch["index"]`` (left empty
    when it is None). ``chunk``: rows projected at a time (see :func:`_token_nll`; None: the whole batch
    through ``model``'s forward)."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    meter = NLLMeter()
    per_sentence = [math.nan] * n_sentences if n_sentences is not None else None
    was_training = model.training
    model.eval()
    try:
        for batch in batches:
            token_nll = _token_nll(model, batch, device, chunk)
            sentence_nll = token_nll.double().sum(1)
            meter.update(sentence_nll.sum().item(), int((batch["tgt_out"] != model.pad_id).sum()))
            if per_sentence is not None:
                for i, value in zip(batch["index"].tolist(), sentence_nll.tolist()):
                    per_sentence[i] = value
    finally:
        model.train(was_training)
    return SplitNLL(meter, per_sentence or [])
