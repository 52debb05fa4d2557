"""Press et al.'s figures beside a language model's position rows, and whether their directions hold here.

Press, Smith and Lewis (2022, "Train Short, Test Long: Attention with Linear Biases Enables Input Length
Extrapolation", ICLR; arXiv 2108.12409, appendix Table 3) trained WikiText-103 language models that differ
only in their position method on L = 1,024 tokens, one run each, and printed their validation perplexity
at longer inputs. Their nearest inputs to L, 2L and 4L are 1,024, 2,024 and 4,024 tokens; those three
columns are kept here, as printed (checked against the authors' PDF: all 12 cells match, in the
appendix's Tables 2, 3 and 5). They ran no learned positions and no NoPE model: those rows get none.

Their models (far larger, word-level, trained on WikiText-103's 103M tokens of long articles) and ours
share nothing but the position method, so the figures are directions to compare, never targets. Two
directions are printed:

* **against sinusoidal**, at each length: does the row's PPL change against the base row have their
  sign? Counted where their |Δ| is at least MIN_DELTA (rotary against sinusoidal at L: -0.01 is noise);
* **past L**: does the row's own PPL rise or fall from L to 4L as theirs does (ALiBi alone falls there)?

A table qualifies when it is a language model's, its base row uses sinusoidal positions (their baseline),
and it has a row at 2L or 4L of its block (``eval.lengths``); a row qualifies when the only setting it
changes against base is ``model.positional``. The column, its fields, its lines and its plot bars are one
provider (:data:`PRESS_COLUMN`, :mod:`ablate.report.provider`).
"""

from __future__ import annotations

from typing import Any

from ablate.report.lengths import extra_lengths
from ablate.report.provider import REFERENCES, ColumnProvider
from ablate.report.rows import AblationTable, ReportRow, Stat

PRESS = (
    "Press et al. 2022 (ICLR), appendix Table 3: WikiText-103 validation PPL, trained at L = 1,024, evaluated "
    "on 1,024 / 2,024 / 4,024 tokens (their nearest to L, 2L, 4L), one run each; their models and ours share "
    "only the position method: directions to compare, not targets"
)
HEADER = "Press L/2L/4L"  # their PPL at L, 2L, 4L
BASELINE = "sinusoidal"  # their baseline, and the base row it is compared through
MULTIPLES = (1, 2, 4)  # the columns kept: L, 2L, 4L
MIN_DELTA = 0.1  # their |Δ| below this (in PPL) carries no direction to match

# our positional variant -> (their method, their PPL at L, ~2L, ~4L)
_FIGURES: dict[str, tuple[str, tuple[float, float, float]]] = {
    "sinusoidal": ("Sinusoidal", (19.34, 51.09, 144.00)),
    "rope": ("Rotary", (19.33, 31.17, 44.30)),
    "t5": ("T5 bias", (18.80, 18.34, 19.44)),
    "alibi": ("ALiBi", (18.66, 18.05, 17.95)),
}


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def applies(table: AblationTable) -> bool:
    """A language model's table whose base uses sinusoidal positions and that measured 2L or 4L."""
    base = table.base
    if not table.family.per_length or base is None or base.settings.get("positional") != BASELINE:
        return False
    return any(_multiple(table, n) in (2, 4) for n in extra_lengths(table))


def figures(table: AblationTable, row: ReportRow) -> tuple[str, tuple[float, float, float]] | None:
    """Their method and PPL at L, 2L, 4L for a row whose only change against base is its positions."""
    if not applies(table) or set(row.changed) - {"positional"}:
        return None
    return _FIGURES.get(str(row.settings.get("positional")))


def cell(table: AblationTable, row: ReportRow, digits: int = 2) -> str:
    found = figures(table, row)
    return "/".join(f"{v:.{digits}f}" for v in found[1]) if found else ""


def record(table: AblationTable, row: ReportRow) -> dict[str, Any]:
    """The row's JSON / CSV fields: their method and PPL at L, 2L, 4L (None without figures)."""
    found = figures(table, row)
    out: dict[str, Any] = {"press_method": found[0] if found else None}
    for k, m in enumerate(MULTIPLES):
        out[f"press_ppl_{m}L"] = found[1][k] if found else None
    return out


def _multiple(table: AblationTable, n: int) -> int | None:
    block = table.block_size
    return n // block if block and n % block == 0 and n // block in MULTIPLES else None


def _at(table: AblationTable, m: int) -> int | None:
    """Our evaluation length that is m x L, if the table measured one."""
    return next((n for n in extra_lengths(table) if _multiple(table, n) == m), None)


def _ours(table: AblationTable, row: ReportRow, m: int) -> float | None:
    """Our mean PPL of ``row`` at m x L (the PPL column at L), None where not measured or out of reach."""
    if m == 1:
        return row.ppl.mean if row.ppl else None
    n = _at(table, m)
    stat = row.lengths.get(n) if n is not None else None
    return stat.mean if isinstance(stat, Stat) else None


def agreement(table: AblationTable) -> dict[str, Any]:
    """Per multiple of L: rows whose Δ against base has their sign (agree, counted, of those significant);
    past L: rows whose PPL moves from L to the longest multiple measured as theirs does."""
    base = table.base
    out: dict[str, Any] = {"against_base": {}, "past_L": None}
    theirs_of = {r.name: found[1] for r in table.rows if r.learned is not False and (found := figures(table, r))}
    rows = [r for r in table.rows if r.name in theirs_of]
    if base is None or base.learned is False or not rows:  # base learned nothing: no direction to compare
        return out
    for k, m in enumerate(MULTIPLES):
        tally = [0, 0, 0]
        for row in rows:
            ours, mine = _ours(table, row, m), _ours(table, base, m)
            theirs = theirs_of[row.name][k] - _FIGURES[BASELINE][1][k]
            if row.is_base or ours is None or mine is None or abs(theirs) < MIN_DELTA:
                continue
            tally[0] += _sign(ours - mine) == _sign(theirs)
            tally[1] += 1
            tally[2] += (
                bool(row.ppl_ev.significant(table.alpha)) if m == 1 else row.length_marks.get(_at(table, m)) == "*"
            )
        out["against_base"][f"{m}L"] = tally
    far = max((m for m in MULTIPLES if any(_ours(table, r, m) is not None for r in rows)), default=1)
    if far > 1:
        tally = [0, 0]
        for row in rows:
            start, end = _ours(table, row, 1), _ours(table, row, far)
            theirs = theirs_of[row.name][MULTIPLES.index(far)] - theirs_of[row.name][0]
            if start is None or end is None or abs(theirs) < MIN_DELTA:
                continue
            tally[0] += _sign(end - start) == _sign(theirs)
            tally[1] += 1
        out["past_L"] = {"to": f"{far}L", "agree": tally[0], "counted": tally[1]}
    return out


def _compared(table: AblationTable) -> bool:
    """Some row besides base changes only its positions to one of theirs: a table of other changes on a
    sinusoidal base (an optimizer's, a schedule's) gets no column and no lines."""
    return any(figures(table, r) for r in table.rows if not r.is_base)


def lines(table: AblationTable) -> list[str]:
    """The legend of the column and the two direction summaries, under the table (every format)."""
    if not _compared(table):
        return []
    found = agreement(table)
    parts = [
        f"at {m.replace('1L', 'L')}: {a}/{n}" + (f" ({s} decided)" if n else "")
        for m, (a, n, s) in found["against_base"].items()
    ]
    out = [
        f"{HEADER}: {PRESS}.",
        f"Δ vs sinusoidal has Press et al.'s sign (their |Δ| ≥ {MIN_DELTA:g}): "
        + (", ".join(parts) or "no row to count (none learned, or none measured)"),
    ]
    past = found["past_L"]
    if past:
        out.append(
            f"PPL from L to {past['to']} moves Press et al.'s way (rises, or falls as ALiBi's): "
            f"{past['agree']}/{past['counted']} rows"
        )
    return out


def relative(table: AblationTable, row: ReportRow, n: int) -> float | None:
    """Their change against sinusoidal in % at the multiple of L that our length ``n`` is (the plot's
    hatched bar), None where they have no figure there."""
    found, m = figures(table, row), _multiple(table, n)
    if found is None or m is None:
        return None
    k = MULTIPLES.index(m)
    theirs, base = found[1][k], _FIGURES[BASELINE][1][k]
    return 100.0 * (theirs - base) / base


class PressColumn(ColumnProvider):
    """Their PPL at L, 2L and 4L beside our lengths, the direction summaries under the table, and their
    change against sinusoidal as the plot's hatched bars."""

    place = REFERENCES
    numbers = False  # three figures a cell, read across: left-aligned in the terminal
    hatched = "Press et al."

    def headers(self, table: AblationTable, layout: str) -> list[str]:
        return [HEADER] if _compared(table) else []

    def cells(self, table: AblationTable, row: ReportRow, layout: str) -> list[str]:
        return [cell(table, row, 1 if layout == "text" else 2)]  # the terminal's one decimal fits its width

    def record(self, table: AblationTable | None, row: ReportRow) -> dict[str, Any]:
        return record(table, row) if table is not None and applies(table) else {}

    def table_record(self, table: AblationTable) -> dict[str, Any]:
        return {"press_agreement": agreement(table)} if applies(table) else {}

    def notes(self, table: AblationTable) -> list[str]:
        return lines(table)

    def change(self, table: AblationTable, row: ReportRow, length: int) -> float | None:
        return relative(table, row, length)


PRESS_COLUMN = PressColumn()
