"""Degenerate output: hypotheses that collapsed into one repeated token, a short loop, or nothing.

One of the two "learned nothing" signals of the report (the other is the unigram floor,
:mod:`ablate.data.unigram`): BLEU figures are withheld when the dev output is degenerate.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

MIN_TOKENS = 4  # shorter non-empty hypotheses are too short to call degenerate ("Ja .", "Danke !")
TOP_SHARE = 0.5  # one token type making up at least this share of a hypothesis: "die die die die"
LOOP_MIN_TOKENS = 8  # from this length, few distinct types mean a loop: "ich bin ich bin ich bin ..."
LOOP_DISTINCT = 0.25  # ... at most this share of the tokens distinct
# 1-3 letters repeated 5 or more times in a row inside one word ("iiiii", "kokokokoko"): no word of a
# natural language does that; digits are left alone ("1000000").
WORD_LOOP = re.compile(r"([^\W\d_]{1,3})\1{4,}")


def degenerate(hyp: str) -> bool:
    """Whether one hypothesis is degenerate output (whitespace tokens, case-sensitive).

    Degenerate: empty (the model stops at once; counted as degenerate, since an empty output is the
    commonest collapse of a model that learned nothing), or at least MIN_TOKENS tokens of which one
    type makes up >= TOP_SHARE ("die die die die", "der , der , der"), or at least LOOP_MIN_TOKENS
    tokens of which at most LOOP_DISTINCT are distinct types (a repeated phrase, "a b c a b c a b c"), or
    any word in which 1-3 letters repeat 5 or more times in a row (a subword loop, "in der kopiiiiiiii").
    Non-empty hypotheses shorter than MIN_TOKENS are degenerate only through such a subword loop.
    """
    tokens = hyp.split()
    n = len(tokens)
    if n == 0:
        return True
    if any(WORD_LOOP.search(t) for t in tokens):  # a subword looping inside a word: "kopiiiiiiiiiii"
        return True
    if n < MIN_TOKENS:
        return False
    counts = Counter(tokens)
    if max(counts.values()) >= TOP_SHARE * n:
        return True
    return n >= LOOP_MIN_TOKENS and len(counts) <= LOOP_DISTINCT * n


def degenerate_share(hyps: Sequence[str]) -> float:
    """Share of ``hyps`` that are :func:`degenerate` (empty ones included); nan for no hypotheses."""
    hyps = list(hyps)
    if not hyps:
        return math.nan
    return sum(map(degenerate, hyps)) / len(hyps)


def is_degenerate(hyps: Sequence[str], threshold: float = 0.5) -> bool:
    """A row's output is degenerate when at least ``threshold`` of its hypotheses are (no hypotheses: True)."""
    share = degenerate_share(hyps)
    return math.isnan(share) or share >= threshold
