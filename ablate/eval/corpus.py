"""Decode a corpus and score it: a split's sources and references (:class:`BleuSet`), translation in
length-sorted batches, BLEU of the detokenized output. Nothing here depends on Lightning."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ablate.eval.bleu import corpus_bleu, tokenized_bleu
from ablate.eval.decode import translate
from ablate.eval.settings import EOS_ID, DecodeSettings


@dataclass
class BleuSet:
    """What BLEU needs: source token ids (EOS included, no padding), raw references, a detokenizer.

    The rows are the first ``len(sources)`` sentences of a split, in the split's order."""

    sources: Sequence[Sequence[int]]
    references: Sequence[str]
    detokenize: Callable[[list[int]], str]


def bleu_set(prepared: Any, split: str, limit: int | None = None) -> BleuSet:
    """Source ids (+EOS), raw references and the detokenizer of the first ``limit`` sentences of ``split``
    (all of them for None)."""
    shard = prepared.split(split)
    n = len(shard) if limit is None else min(int(limit), len(shard))
    sources = [[*shard.src(i).tolist(), EOS_ID] for i in range(n)]
    refs = prepared.raw(split, "tgt")[:n]
    return BleuSet(sources=sources, references=refs, detokenize=prepared.tokenizer.decode)


def translate_corpus(
    model: Any, sources: Sequence[Sequence[int]], settings: DecodeSettings, *, device: torch.device | str | None = None
) -> list[list[int]]:
    """Decode every source; batches sorted by length (little padding), output in input order."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    out: list[list[int]] = [[] for _ in sources]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), settings.batch_size):
            idx = order[start : start + settings.batch_size]
            width = max(len(sources[i]) for i in idx)
            src = torch.full((len(idx), width), model.pad_id, dtype=torch.long)
            for row, i in enumerate(idx):
                src[row, : len(sources[i])] = torch.as_tensor(list(sources[i]), dtype=torch.long)
            for i, hyp in zip(idx, translate(model, src.to(device), settings)):
                out[i] = hyp
    finally:
        model.train(was_training)
    return out


def score_bleu(
    model: Any,
    data: BleuSet,
    settings: DecodeSettings,
    *,
    tokenized: bool = False,
    device: torch.device | str | None = None,
) -> dict[str, Any]:
    """Translate ``data.sources`` and score them:
    ``{"bleu", "bleu_signature", "bleu_sentences", "hypotheses"[, "bleu_tok"]}``."""
    ids = translate_corpus(model, data.sources, settings, device=device)
    hyps = [data.detokenize(h) for h in ids]
    bleu = corpus_bleu(hyps, data.references)
    result: dict[str, Any] = {
        "bleu": bleu.score,
        "bleu_signature": bleu.signature,
        "bleu_sentences": len(hyps),
        "hypotheses": hyps,
    }
    if tokenized:
        result["bleu_tok"] = tokenized_bleu(hyps, data.references)
    return result
