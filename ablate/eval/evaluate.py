"""One split end to end (:func:`evaluate_split`: PPL over every sentence, BLEU of beam search).
``ablate eval`` (a run directory's checkpoint, re-scored) is :mod:`ablate.train.rerun`.

Metrics of a split, under a prefix (``val`` for the dev split, ``test`` for the test split):
``<prefix>/nll``, ``/ppl``, ``/tokens`` (the whole split), ``/bleu``, ``/bleu_signature``,
``/bleu_sentences`` (BLEU covers the first that many sentences of the split's order), ``/bleu_tok``
when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ablate.eval.corpus import bleu_set, score_bleu
from ablate.eval.nll import SplitNLL, corpus_nll, split_batches
from ablate.eval.settings import DecodeSettings
from ablate.rundir import RunDir


@dataclass
class SplitEvaluation:
    """The metrics of one split, its hypotheses and its per-sentence NLL."""

    metrics: dict[str, Any]
    hypotheses: list[str]  # the first metrics[<prefix>/bleu_sentences] sentences of the split, in its order
    sentence_nll: list[float]  # every sentence of the split, in its order


def split_nll(model: Any, shard: Any, max_tokens: int, device: torch.device | str | None = None) -> SplitNLL:
    """Corpus and per-sentence NLL of every sentence of ``shard`` (teacher forcing)."""
    return corpus_nll(model, split_batches(shard, max_tokens), n_sentences=len(shard), device=device)


def evaluate_split(
    model: Any,
    prepared: Any,
    split: str,
    settings: DecodeSettings,
    *,
    prefix: str,
    max_tokens: int,
    bleu_limit: int | None = None,
    tokenized: bool = False,
    device: torch.device | str | None = None,
    nll: SplitNLL | None = None,
) -> SplitEvaluation:
    """PPL over the whole ``split`` (``nll`` when already computed) and BLEU of its first ``bleu_limit``
    sentences (all for None), decoded with ``settings``."""
    if nll is None:
        nll = split_nll(model, prepared.split(split), max_tokens, device)
    bleu = score_bleu(model, bleu_set(prepared, split, bleu_limit), settings, tokenized=tokenized, device=device)
    metrics: dict[str, Any] = {f"{prefix}/nll": nll.nll, f"{prefix}/ppl": nll.ppl, f"{prefix}/tokens": nll.meter.tokens}
    for key in ("bleu", "bleu_signature", "bleu_sentences", "bleu_tok"):
        if key in bleu:
            metrics[f"{prefix}/{key}"] = bleu[key]
    return SplitEvaluation(metrics, bleu["hypotheses"], nll.sentences)


def write_outputs(run_dir: RunDir, split: str, result: SplitEvaluation) -> None:
    """``outputs/<split>.hyp`` and ``outputs/<split>.nll`` of a run directory."""
    run_dir.write_hypotheses(split, result.hypotheses)
    run_dir.write_sentence_nll(split, result.sentence_nll)
