"""Did a row learn anything? The rule that ``ablate table`` and the adaptive-seeds controller share.

A row learned something when its mean dev perplexity is below ``LEARNED_RATIO`` x the unigram floor
(the dev perplexity of a unigram model of the training targets, :mod:`ablate.data.unigram`). The table
withholds the statistics of a row that did not, and all of them when base did not; the controller that
adds seeds to undecided rows (:mod:`ablate.sweep.plan.adaptive`) must not chase a verdict the table will
withhold, so it applies the same rule to the same numbers. Pure: the floor is measured by the caller.

The second gate both apply: base translates. Base's dev chrF (sacreBLEU's character n-gram F-score, which
still moves where BLEU is near zero) below ``MIN_BASE_CHRF`` means its outputs are not translations yet,
and the table marks no row.
"""

from __future__ import annotations

from collections.abc import Sequence

LEARNED_RATIO = 0.8  # a row learned something when its dev PPL < LEARNED_RATIO x the unigram floor
MIN_BASE_CHRF = 25.0  # below this base chrF, the dev outputs are not translations yet


def learned(ppl: float, floor: float | None) -> bool | None:
    """True / False by the rule above; None when the floor is not known (nothing is withheld then)."""
    if floor is None:
        return None
    return ppl < LEARNED_RATIO * floor


def base_chrf(hyps: Sequence[str], refs: Sequence[str]) -> float | None:
    """sacreBLEU's corpus chrF of base's dev hypotheses against their references (the first len(hyps))."""
    n = min(len(hyps), len(refs))
    if n == 0:
        return None
    from sacrebleu.metrics import CHRF

    return float(CHRF().corpus_score(list(hyps[:n]), [list(refs[:n])]).score)


def translates(chrf: float | None) -> bool | None:
    """Whether base's outputs are translations by the rule above; None when its chrF is not known."""
    return None if chrf is None else chrf >= MIN_BASE_CHRF
