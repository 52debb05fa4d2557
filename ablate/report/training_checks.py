"""Has the table's model learned the task? Two checks beside the unigram floor and the degeneracy guard.

- **Still improving when training stopped.** From the validations a trial logged (``metrics.csv``): the
  share by which dev PPL fell over the last quarter of training (from the last validation at or before
  3/4 of the final step to the final one), averaged over the row's seeds. Above
  :data:`STILL_IMPROVING` the row is marked; when base is one, the whole table says "undertrained":
  its differences measure how fast each architecture learns, not what it can learn.
- **Not translating yet.** Base's dev chrF (sacreBLEU's character n-gram F-score, which still moves
  where BLEU is near zero) below :data:`MIN_BASE_CHRF`: the outputs are not yet translations of their
  sources, so no row gets a verdict (PPL figures stay, unmarked); BLEU is withheld as before.

Both are stated with their figures in every format (ablate.report.cells, render, plot).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ablate.report.rows import AblationTable, TrialLike
from ablate.rundir import RunDir
from ablate.stats.learning import MIN_BASE_CHRF, base_chrf, translates

__all__ = [
    "MIN_BASE_CHRF",
    "STILL_IMPROVING",
    "attach_learning",
    "base_chrf",
    "curve",
    "last_quarter",
    "translation_note",
]

STILL_IMPROVING = 0.05  # dev PPL still falling by more than 5% over the last quarter of training


def curve(run_dir: str) -> list[tuple[int, float]]:
    """(step, dev PPL) of every validation a run logged, in step order (empty when none)."""
    return RunDir(run_dir).read_curve("val/ppl")


def last_quarter(points: Sequence[tuple[int, float]]) -> tuple[float, int, int] | None:
    """(share dev PPL fell, from step, to step): from the last validation at or before 3/4 of the final
    step to the final validation (negative: it rose); None without a validation in the first three
    quarters (coarse validations make the span longer than a quarter: the steps say how long)."""
    if len(points) < 2:
        return None
    final_step, final = points[-1]
    earlier = [(s, p) for s, p in points if 0 < s <= 0.75 * final_step]
    if not earlier or not math.isfinite(earlier[-1][1]) or earlier[-1][1] <= 0:
        return None
    step, ppl = earlier[-1]
    return (ppl - final) / ppl, step, final_step


def attach_learning(table: AblationTable, trials: Sequence[TrialLike]) -> None:
    """Set each row's ``still_improving`` (the mean last-quarter drop over its finished seeds, or None) and
    the table's ``undertrained`` note when base's drop is above :data:`STILL_IMPROVING`."""
    by_row: dict[str, list[tuple[float, int, int]]] = {}
    curves: dict[str, list[list[tuple[int, float]]]] = {}
    for t in trials:
        if t.state == "done" and t.run_dir:
            points = curve(t.run_dir)
            curves.setdefault(t.row, []).append(points)
            found = last_quarter(points)
            if found is not None:
                by_row.setdefault(t.row, []).append(found)
    for row in table.rows:
        row.curves = curves.get(row.name, [])
        drops = by_row.get(row.name)
        row.still_improving = sum(d for d, _, _ in drops) / len(drops) if drops else None
    base = table.base
    if base is not None and base.still_improving is not None and base.still_improving > STILL_IMPROVING:
        _, start, end = by_row[base.name][0]
        table.undertrained = (
            f"base's dev PPL still fell {base.still_improving:.1%} from step {start} to {end} (the last validations; "
            f"> {STILL_IMPROVING:.0%} over the last quarter of training): differences measure learning speed, "
            "not capacity"
        )


def translation_note(chrf: float | None) -> str | None:
    """The table's "does not translate yet" note for base's chrF, or None."""
    if translates(chrf) is not False:
        return None
    return (
        f"base's dev chrF is {chrf:.1f} (< {MIN_BASE_CHRF:g}): its outputs are not translations yet, so no row "
        "is marked; the PPL figures show how far each got"
    )
