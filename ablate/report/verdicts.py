"""One verdict per row and metric, with the error controlled over the whole table.

A table of 20 rows against base is 20 tests: at alpha = 0.05 each, about one row in twenty is marked
when no row differs. The marks therefore rest on p-values adjusted over the table's rows, per metric:

- ``holm`` (default): Holm's step-down, the family-wise error rate (the chance of marking any row that
  does not differ) <= alpha. scipy has no Holm, so it is written in :mod:`ablate.stats.correction` (a
  dozen lines), and tested against the worked example of Holm's procedure and by simulation;
- ``bh``: Benjamini-Hochberg (``scipy.stats.false_discovery_control``), the expected share of marked
  rows that do not differ <= alpha;
- ``none``: each row at alpha on its own.

Each row's test is over **seeds** where the row and base have 2 or more each
(:mod:`ablate.stats.seeds`: paired by seed where they share seeds) and otherwise over **dev sentences**
(the paired bootstrap of :mod:`ablate.stats.significance`), which compares two trained models on one dev
set and says nothing about the architecture: those marks are shown apart.

Verdicts: ``equivalent`` (over seeds only: the two one-sided tests against the margin reject after the
same correction), else ``better`` / ``worse`` (the difference is significant after correction; lower PPL
and higher BLEU are better), else ``undecided``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ablate.report.lengths import decide_lengths
from ablate.report.rows import AblationTable, Evidence
from ablate.stats.correction import DEFAULT_CORRECTION, adjust
from ablate.sweep.file.spec import Sweep

DEFAULT_MARGINS = {"ppl": 0.02, "bleu": 0.3}  # equivalence: PPL within 2% of base, BLEU within 0.3 points
VERDICTS = ("better", "worse", "equivalent", "undecided")


def report_margins(sweep: Sweep) -> dict[str, float]:
    """The sweep file's ``report: {equivalence: {ppl: 0.02, bleu: 0.3}}``, over the defaults."""
    report = sweep.report or {}
    return {**DEFAULT_MARGINS, **dict(report.get("equivalence") or {})}


def _test_of(ev: Evidence) -> tuple[str, Any] | None:
    """(unit, test) a row's mark rests on: the seed-level test if there is one, else the bootstrap."""
    if ev.withheld:
        return None
    if ev.seeds is not None:
        return "seeds", ev.seeds
    if ev.boot is not None:
        return "sentences", ev.boot
    return None


def decide(
    table: AblationTable, correction: str = DEFAULT_CORRECTION, margins: Mapping[str, float] | None = None
) -> None:
    """Set ``unit``, ``p_adjusted``, ``p_equiv_adjusted`` and ``verdict`` on every row's PPL and BLEU
    evidence (rows without a test get none), and record the correction on the table."""
    table.correction = correction
    table.margins = dict(DEFAULT_MARGINS if margins is None else margins)
    _seed_tests(table)
    for row in table.rows:  # a table decided again (other alpha, correction, evidence) starts clean
        for metric in ("ppl", "bleu"):
            ev = getattr(row, f"{metric}_ev")
            ev.unit = ev.p_adjusted = ev.p_equiv_adjusted = ev.verdict = None
    silent = bool(table.not_translating)  # outputs are not translations yet: no verdicts
    for metric in ("ppl", "bleu"):
        ok = [r for r in table.rows if not r.is_base and _test_of(getattr(r, f"{metric}_ev")) is not None]
        rows = [] if silent else ok
        tests = [_test_of(getattr(r, f"{metric}_ev")) for r in rows]
        adjusted = adjust([t.p_value for _, t in tests], correction)
        eq_rows = [i for i, (_, t) in enumerate(tests) if getattr(t, "p_equiv", None) is not None]
        eq_adjusted = dict(zip(eq_rows, adjust([tests[i][1].p_equiv for i in eq_rows], correction)))
        for i, row in enumerate(rows):
            ev = getattr(row, f"{metric}_ev")
            ev.unit, test = tests[i]
            ev.p_adjusted, ev.p_equiv_adjusted = adjusted[i], eq_adjusted.get(i)
            ev.verdict = _verdict(metric, test.delta, ev.p_adjusted, ev.p_equiv_adjusted, table.alpha)
    decide_lengths(table, correction, table.margins.get("ppl", DEFAULT_MARGINS["ppl"]))  # a language model's


def _seed_tests(table: AblationTable) -> None:
    """Each row's seed-level test against base (PPL on the log scale), with the table's margins."""
    from ablate.stats.seeds import compare_seeds

    base = next((r for r in table.rows if r.is_base), None)
    for row in table.rows:
        for metric in ("ppl", "bleu"):
            mine, theirs = getattr(row, metric), getattr(base, metric) if base is not None else None
            ev, test = getattr(row, f"{metric}_ev"), None
            if not row.is_base and not ev.withheld and mine is not None and theirs is not None:
                margin = table.margins.get(metric)
                test = compare_seeds(theirs.by_seed(), mine.by_seed(), log=metric == "ppl", margin=margin)
            ev.seeds = test


def _verdict(metric: str, delta: float, p: float, p_equiv: float | None, alpha: float) -> str:
    if p_equiv is not None and p_equiv < alpha:
        return "equivalent"
    if p < alpha:
        lower_is_better = metric == "ppl"
        return "better" if (delta < 0) == lower_is_better else "worse"
    return "undecided"
