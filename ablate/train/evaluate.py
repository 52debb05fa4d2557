"""Evaluation outside the training loop: corpus NLL/PPL over a split and BLEU of beam-search output.

Used by the LightningModule (dev BLEU during training), by ``train()`` for the final dev and test
numbers, and by ``ablate eval``. Nothing here depends on Lightning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ablate.train.decode import BOS_ID, EOS_ID, translate
from ablate.train.losses import nll_loss
from ablate.train.metrics import NLLMeter, corpus_bleu, tokenized_bleu


@dataclass
class BleuSet:
    """What BLEU needs: source token ids (EOS included, no padding), raw references, a detokenizer."""

    sources: Sequence[Sequence[int]]
    references: Sequence[str]
    detokenize: Callable[[list[int]], str]


def translate_corpus(
    model: Any,
    sources: Sequence[Sequence[int]],
    *,
    batch_size: int = 64,
    device: torch.device | str | None = None,
    **search: Any,
) -> list[list[int]]:
    """Decode every source (beam or greedy per ``search``); batches sorted by length, output in input order."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))  # similar lengths: little padding
    out: list[list[int]] = [[] for _ in sources]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            width = max(len(sources[i]) for i in idx)
            src = torch.full((len(idx), width), model.pad_id, dtype=torch.long)
            for row, i in enumerate(idx):
                src[row, : len(sources[i])] = torch.as_tensor(list(sources[i]), dtype=torch.long)
            for i, hyp in zip(idx, translate(model, src.to(device), **search)):
                out[i] = hyp
    finally:
        model.train(was_training)
    return out


def score_bleu(
    model: Any,
    data: BleuSet,
    *,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    batch_size: int = 64,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    tokenized: bool = False,
    device: torch.device | str | None = None,
) -> dict[str, Any]:
    """Translate ``data.sources`` and score them: {"bleu", "bleu_signature", "hypotheses"[, "bleu_tok"]}."""
    ids = translate_corpus(
        model,
        data.sources,
        batch_size=batch_size,
        device=device,
        beam_size=beam_size,
        alpha=alpha,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        bos_id=bos_id,
        eos_id=eos_id,
    )
    hyps = [data.detokenize(h) for h in ids]
    bleu = corpus_bleu(hyps, data.references)
    result: dict[str, Any] = {"bleu": bleu.score, "bleu_signature": bleu.signature, "hypotheses": hyps}
    if tokenized:
        result["bleu_tok"] = tokenized_bleu(hyps, data.references)
    return result


@torch.no_grad()
def corpus_nll(
    model: Any, batches: Iterable[dict[str, torch.Tensor]], device: torch.device | str | None = None
) -> NLLMeter:
    """Summed unsmoothed NLL and token count over ``batches`` (teacher forcing, eval mode)."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    meter = NLLMeter()
    was_training = model.training
    model.eval()
    try:
        for batch in batches:
            logits = model(batch["src"].to(device), batch["tgt_in"].to(device))
            nll, n = nll_loss(logits, batch["tgt_out"].to(device), model.pad_id)
            meter.update(nll.item(), n.item())
    finally:
        model.train(was_training)
    return meter
