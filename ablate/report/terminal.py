"""The table for a terminal (``ablate table``'s default, and the end-of-sweep summary): at most ~110 columns.

The paper's layout (ten settings columns, absolute values beside the paper's) is ~200 characters wide;
that goes to ``--format md`` and to the files. Here each row keeps what a reader checks first: what it
changes (one compact column), our dev PPL and BLEU as mean±std with the delta vs base and its
significance mark, the paper's delta (the direction to compare with), and its runs. Base's full
settings, the unigram floor and the legend are lines above and below, wrapped to the width.
"""

from __future__ import annotations

import textwrap

from ablate.report.cells import fmt_setting, group_label, legend, result_cell, row_label, signed
from ablate.report.fidelity import fidelity
from ablate.report.paper import COLUMNS
from ablate.report.table import ReportRow, Table3

WIDTH = 110  # the widest line printed (long row names and changes are cut with "…" to fit)
MAX_ROW = 18  # characters of a row's label
MAX_CHANGES = 26  # characters of the "changes" column
MIN_TEXT = 10  # the row and changes columns shrink to this when the table is wider than WIDTH
SHORT_STATES = {"running": "run", "waiting": "wait", "failed": "fail"}


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _changes(row: ReportRow) -> str:
    if row.is_base:
        return "(see above)" if row.settings else ""
    return " ".join(f"{header}={fmt_setting(key, row.changed[key])}" for key, header in COLUMNS if key in row.changed)


def _paper_delta(row: ReportRow, index: int, digits: int) -> str:
    pd = row.paper_delta
    return signed(pd[index], digits) if pd else ""


def _runs(row: ReportRow) -> str:
    if not row.n_trials:
        return "not started"
    rest = [f"{row.states[s]} {short}" for s, short in SHORT_STATES.items() if row.states.get(s)]
    return f"{row.n_done}/{row.n_trials}" + (f" ({', '.join(rest)})" if rest else "")


def _row_cells(table: Table3, row: ReportRow, group: str) -> list[str]:
    return [
        group,
        _clip(row_label(row), MAX_ROW),
        _clip(_changes(row), MAX_CHANGES),
        result_cell(table, row, "ppl", 2).replace(" ± ", "±"),
        _paper_delta(row, 0, 2),
        result_cell(table, row, "bleu", 1).replace(" ± ", "±"),
        _paper_delta(row, 1, 1),
        _runs(row),
    ]


HEADERS = ["", "row", "changes", "dev PPL (Δ)", "paper Δ", "dev BLEU (Δ)", "paper Δ", "runs"]
RIGHT = {3, 4, 5, 6}  # numbers right-aligned


def _head(table: Table3) -> list[str]:
    title = f"Table 3 reproduction: {table.name}" if table.name else "Table 3 reproduction"
    base = table.base
    lines = [title, "=" * len(title)]
    if base is not None and base.settings:
        settings = " ".join(f"{h}={fmt_setting(k, base.settings.get(k))}" for k, h in COLUMNS)
        lines += textwrap.wrap(f"base ({base.name}): {settings}", WIDTH, subsequent_indent="  ")
    return lines + [""]


def _fit(widths: list[int]) -> list[int]:
    """Shrink the changes column, then the row column, until the table fits WIDTH (never below MIN_TEXT)."""
    widths = list(widths)
    excess = sum(widths) + 2 * (len(widths) - 1) - WIDTH
    for i in (2, 1):
        cut = max(0, min(excess, widths[i] - MIN_TEXT))
        widths[i] -= cut
        excess -= cut
    return widths


def render_text(table: Table3) -> str:
    """The table in a terminal's width; the wide paper layout is ``render(table, "md")``."""
    body = []
    previous = None
    for row in table.rows:
        body.append(_row_cells(table, row, group_label(row.group) if row.group != previous else ""))
        previous = row.group
    widths = _fit([max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(HEADERS)])
    body = [[_clip(c, widths[i]) if i in (1, 2) else c for i, c in enumerate(r)] for r in body]

    def line(cells: list[str]) -> str:
        padded = [c.rjust(w) if i in RIGHT else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(padded).rstrip()

    lines = [*_head(table), line(HEADERS), line(["-" * w for w in widths]), *(line(r) for r in body), ""]
    notes = [*legend(table, terminal=True), *fidelity(table).lines()]
    notes += [f"failed: {row.name} {failure}" for row in table.rows for failure in row.failures]
    for note in notes:
        lines += textwrap.wrap(note, WIDTH, initial_indent="- ", subsequent_indent="  ")
    return "\n".join(lines) + "\n"
