"""A language model's table: its dev perplexity at each evaluation length beyond the training block.

A language model trial (``model.arch: decoder``) records ``val/ppl@N`` for every length N of
``eval.lengths`` (ablate/eval/lm_eval.py), ``val/ppl`` being the one at the training block L. The table
shows L in its usual PPL column and adds a column per longer length: mean ± std over seeds, the change
against base and its mark, decided as the PPL column's are (paired over seeds on the log scale, Holm or BH
over the table's rows at that length, the same equivalence margin). A row whose positions cannot reach a
length (learned positions past ``model.max_positions``) shows ``—`` there, and the legend says why. The
columns, their fields, their lines and the plot's panel are one provider (:data:`LENGTH_COLUMNS`,
:mod:`ablate.report.provider`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ablate.report.numbers import MARKERS, fmt_stat, signed
from ablate.report.provider import SCORES, ColumnProvider
from ablate.report.rows import AblationTable, ReportRow, Stat

UNREACHED = "—"  # the row's positions cannot reach this length
_AT = re.compile(r"^val/ppl@(\d+)$")
_REACH = re.compile(r"^cannot reach \d+ positions: ")  # eval/lm_eval.py's reason names its length


def row_lengths(done: Sequence[Any]) -> dict[int, Stat | str]:
    """Length -> the row's Stat over its finished seeds, or why it cannot reach the length; the lengths
    beyond the training block (``data.block_size``: the PPL column's)."""
    blocks = {int(((t.config or {}).get("data") or {}).get("block_size") or 0) for t in done}
    found = sorted({int(m.group(1)) for t in done for key in t.metrics if (m := _AT.match(key))} - blocks)
    out: dict[int, Stat | str] = {}
    for n in found:
        pairs = [(t.seed, float(v)) for t in done if isinstance(v := t.metrics.get(f"val/ppl@{n}"), (int, float))]
        stat = Stat.of([v for _, v in pairs], [s for s, _ in pairs])
        why = next((str(t.metrics[f"val/reach@{n}"]) for t in done if t.metrics.get(f"val/reach@{n}")), None)
        out[n] = stat if stat is not None else (why or "not measured")
    return out


def extra_lengths(table: AblationTable) -> list[int]:
    """The lengths beyond the training block that some row measured (the PPL column is the block's)."""
    return sorted({n for r in table.rows for n in r.lengths})


def decide_lengths(table: AblationTable, correction: str, margin: float) -> None:
    """Each row's mark at each extra length, over seeds against base, corrected over the rows (as PPL's)."""
    from ablate.stats.correction import adjust
    from ablate.stats.seeds import compare_seeds

    base = table.base
    if base is None:
        return
    for n in extra_lengths(table):
        b = base.lengths.get(n)
        tests = {}
        for row in table.rows:
            s = row.lengths.get(n)
            if row.is_base or not isinstance(s, Stat) or not isinstance(b, Stat):
                continue
            test = compare_seeds(dict(zip(b.seeds, b.values)), dict(zip(s.seeds, s.values)), log=True, margin=margin)
            if test is not None:
                tests[row.name] = test
        names = list(tests)
        p = adjust([tests[r].p_value for r in names], correction)
        p_eq = adjust([t.p_equiv if (t := tests[r]).p_equiv is not None else 1.0 for r in names], correction)
        for row in table.rows:
            if row.name in tests:
                i = names.index(row.name)
                row.length_marks[n] = "≈" if p_eq[i] < table.alpha else "*" if p[i] < table.alpha else ""


def length_cell(table: AblationTable, row: ReportRow, n: int) -> str:
    """``8.20±0.28 (+0.80)*`` at length n, ``—`` out of reach, the row's state when nothing finished."""
    if row.pending:
        return MARKERS[row.pending]
    stat, base = row.lengths.get(n), table.base.lengths.get(n) if table.base else None
    if not isinstance(stat, Stat):
        return UNREACHED if isinstance(stat, str) else "n/a"
    text = fmt_stat(stat, 2).replace(" ± ", "±")
    if not row.is_base and isinstance(base, Stat):
        text += f" ({signed(stat.mean - base.mean, 2)}){row.length_marks.get(n, '')}"
    return text


def length_notes(table: AblationTable) -> list[str]:
    """What the length columns are, and why a row has none at some length."""
    lengths = extra_lengths(table)
    if not lengths:
        return []
    lines = [
        "PPL@N: dev perplexity per token on non-overlapping windows of N tokens (the PPL column: the training "
        "block); marks as the PPL column's, at each length over the table's rows"
    ]
    for row in table.rows:
        why: dict[str, list[int]] = {}  # the reason, without the length it names -> the lengths it covers
        for n in lengths:
            if isinstance(s := row.lengths.get(n), str):
                why.setdefault(_REACH.sub("", s), []).append(n)
        lines += [f"{UNREACHED} {row.name} at {', '.join(map(str, ns))}: {text}" for text, ns in why.items()]
    single = [r.name for r in table.rows if any(isinstance(s, Stat) and s.n < 2 for s in r.lengths.values())]
    if single:  # no seed-level test, and the bootstrap over blocks runs at L only: no mark means untested
        lines.append(f"one seed, so no mark at the longer lengths (untested, not undecided): {', '.join(single)}")
    return lines


def length_record(row: ReportRow) -> dict[str, Any]:
    """The JSON (and CSV) of a row's longer lengths: ``ppl@N`` mean, std, mark, or why it is missing."""
    out: dict[str, Any] = {}
    for n, stat in sorted(row.lengths.items()):
        ok = isinstance(stat, Stat)
        out[f"ppl@{n}"] = round(stat.mean, 4) if ok else None
        out[f"ppl@{n}_std"] = round(stat.std, 4) if ok and stat.std is not None else None
        out[f"ppl@{n}_mark"] = row.length_marks.get(n) if ok else None
        out[f"ppl@{n}_reach"] = None if ok else stat
    return out


class LengthColumns(ColumnProvider):
    """A ``PPL@N (Δ)`` column per longer length where the BLEU columns start, and the plot's second panel at
    the longest one."""

    place = SCORES

    def headers(self, table: AblationTable, layout: str) -> list[str]:
        label = "PPL@{n}" if layout == "latex" else "PPL@{n} (Δ)"  # LaTeX's narrower header
        return [label.format(n=n) for n in extra_lengths(table)]

    def cells(self, table: AblationTable, row: ReportRow, layout: str) -> list[str]:
        return [length_cell(table, row, n) for n in extra_lengths(table)]

    def record(self, table: AblationTable | None, row: ReportRow) -> dict[str, Any]:
        return length_record(row)

    def notes(self, table: AblationTable) -> list[str]:
        return length_notes(table)

    def panel(self, table: AblationTable) -> str | None:
        lengths = extra_lengths(table)
        return f"ppl@{lengths[-1]}" if lengths else None  # its longest beside L, in BLEU's place


LENGTH_COLUMNS = LengthColumns()
