"""Whether a text is tokenized already, by sacreBLEU's own test, without importing sacreBLEU: the table's
notes ask it of the dev references (``ablate table`` stays light), BLEU's computation of its hypotheses
(ablate/eval/bleu.py)."""

from __future__ import annotations

from collections.abc import Sequence

# sacreBLEU warns (three lines, every call) once this many hypotheses end in a tokenized period (" .")
TOKENIZED_LINES = 100


def looks_tokenized(texts: Sequence[str]) -> bool:
    """Whether ``texts`` look already tokenized, by sacreBLEU's own test (TOKENIZED_LINES end in " .")."""
    return sum(1 for text in texts if text.endswith(" .")) >= TOKENIZED_LINES
