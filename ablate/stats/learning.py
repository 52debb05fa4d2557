"""Did a row learn anything? The rule that ``ablate table`` and the adaptive-seeds controller share.

A row learned something when its mean dev perplexity is below ``LEARNED_RATIO`` x the unigram floor
(the dev perplexity of a unigram model of the training targets, :mod:`ablate.data.unigram`). The table
withholds the statistics of a row that did not, and all of them when base did not; the controller that
adds seeds to undecided rows (:mod:`ablate.sweep.plan.adaptive`) must not chase a verdict the table will
withhold, so it applies the same rule to the same numbers. Pure: the floor is measured by the caller.
"""

from __future__ import annotations

LEARNED_RATIO = 0.8  # a row learned something when its dev PPL < LEARNED_RATIO x the unigram floor


def learned(ppl: float, floor: float | None) -> bool | None:
    """True / False by the rule above; None when the floor is not known (nothing is withheld then)."""
    if floor is None:
        return None
    return ppl < LEARNED_RATIO * floor
