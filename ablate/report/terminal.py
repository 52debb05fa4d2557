"""The table for a terminal (``ablate table``'s default, and the end-of-sweep summary): at most ~110 columns.

The paper's layout (ten settings columns, absolute values beside the paper's) is ~200 characters wide;
that goes to ``--format md`` and to the files. Here each row keeps what a reader checks first: what it
changes (one compact column), our dev PPL and BLEU as mean±std with the delta vs base and its
significance mark, the paper's delta (the direction to compare with), and its runs. Base's full
settings, the unigram floor and the legend are lines above and below, wrapped to the width.
"""

from __future__ import annotations

import textwrap

from ablate.report import extras
from ablate.report.cells import (
    drop_paper_columns,
    fidelity_lines,
    fmt_setting,
    group_label,
    legend,
    result_cell,
    row_label,
    signed,
)
from ablate.report.columns import OTHER_KEY
from ablate.report.fidelity import fidelity
from ablate.report.provider import LAST
from ablate.report.rows import AblationTable, ReportRow
from ablate.report.search_view import legend_lines, spec_text, title

WIDTH = 110  # the widest line printed (long row names and changes are cut with "…" to fit)
MAX_ROW = 18  # characters of a row's label
MAX_CHANGES = 26  # characters of the "changes" column
PAPER_DELTA_WIDTH = 12  # a "paper Δ" column and its gap: room the changes get where there is no paper column
MIN_TEXT = 10  # the row and changes columns shrink to this when the table is wider than WIDTH
SHORT_STATES = {"running": "run", "waiting": "wait", "failed": "fail"}


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _changes(row: ReportRow, columns: tuple[tuple[str, str], ...]) -> str:
    if row.is_base:
        return "(see above)" if row.settings else ""
    return " ".join(
        row.changed[key] if key == OTHER_KEY else f"{header}={fmt_setting(key, row.changed[key])}"
        for key, header in columns
        if key in row.changed
    )


def _paper_delta(row: ReportRow, index: int, digits: int) -> str:
    pd = row.paper_delta
    return signed(pd[index], digits) if pd else ""


def _runs(row: ReportRow) -> str:
    if not row.n_trials:
        return "not started"
    rest = [f"{row.states[s]} {short}" for s, short in SHORT_STATES.items() if row.states.get(s)]
    return f"{row.n_done}/{row.n_trials}" + (f" ({', '.join(rest)})" if rest else "")


def _row_cells(
    table: AblationTable, row: ReportRow, group: str, columns: tuple[tuple[str, str], ...], wide: int
) -> list[str]:
    """``columns`` and the changes' width ``wide`` are the table's, found once (each scans every row)."""
    return [
        group,
        _clip(row_label(row), MAX_ROW),
        _clip(_changes(row, columns), wide),
        result_cell(table, row, "ppl", 2).replace(" ± ", "±"),
        _paper_delta(row, 0, 2),
        result_cell(table, row, "bleu", 1).replace(" ± ", "±"),
        _paper_delta(row, 1, 1),
        _runs(row),
    ]


HEADERS = ["", "row", "changes", "dev PPL (Δ)", "paper Δ", "dev BLEU (Δ)", "paper Δ", "runs"]
TEXT_BLEU = ("dev BLEU (Δ)", "paper Δ")  # a table without BLEU gives these up for the extra scores' columns
TUNED_HEADER = "tuned"  # a search table's best params, when they fit
RIGHT = {"dev PPL (Δ)", "paper Δ", "dev BLEU (Δ)"}  # numbers right-aligned (and the extra columns of numbers)


def _head(table: AblationTable) -> list[str]:
    head = title(table)
    base = table.base
    lines = [head, "=" * len(head)]
    if table.search is not None:
        lines += textwrap.wrap(f"each row at its {spec_text(table.search)}", WIDTH, subsequent_indent="  ")
    if base is not None and base.settings:
        settings = " ".join(f"{h}={fmt_setting(k, base.settings.get(k))}" for k, h in table.columns if k != OTHER_KEY)
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


def _widths(headers: list[str], body: list[list[str]]) -> list[int]:
    return [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(headers)]


def _last_columns(headers: list[str], body: list[list[str]], table: AblationTable) -> list[str]:
    """Add each provider's columns that go last (another study's figures) while the table still fits WIDTH
    unshrunk; the lines under the table that carry the figures of those that did not fit."""
    lines = []
    for found in extras.columns(table, "text", (LAST,)):
        _, heads, cells = found
        widths = _widths([*headers, *heads], [[*r, *c] for r, c in zip(body, cells)])
        if sum(widths) + 2 * (len(widths) - 1) <= WIDTH:
            extras.append(headers, body, found)
            continue
        figures = ", ".join(f"{r.name} {' '.join(c)}" for r, c in zip(table.rows, cells) if any(c))
        lines += textwrap.wrap(f"{' '.join(heads)}: {figures}", WIDTH, subsequent_indent="  ") + [""]
    return lines


def _tuned_column(headers: list[str], body: list[list[str]], table: AblationTable) -> bool:
    """Add a search table's "tuned" column (each row's best params) when the table still fits WIDTH
    unshrunk; otherwise the params go to the list under the table (:func:`_tuned_list`)."""
    if table.search is None:
        return False
    cells = [row.search.params_text if row.search is not None else "" for row in table.rows]
    widths = _widths([*headers, TUNED_HEADER], [[*r, c] for r, c in zip(body, cells)])
    if sum(widths) + 2 * (len(widths) - 1) > WIDTH:
        return False
    headers.append(TUNED_HEADER)
    for r, c in zip(body, cells):
        r.append(c)
    return True


def _tuned_list(table: AblationTable, params: bool) -> list[str]:
    """A search table's rows again, each with its best trial (its number in the row's study and value),
    its search's counts and, when the table had no room for a "tuned" column, the best params."""
    rows = [r for r in table.rows if r.search is not None] if table.search is not None else []
    if not rows:  # not a search, or none of its rows has a trial yet
        return []
    heads = ["tuned", "best", table.search.metric, "search"] + (["params"] if params else [])
    cells = [
        [
            _clip(row_label(r), MAX_ROW),
            f"#{r.search.best_number}" if r.search.best_number is not None else "-",
            f"{r.search.best.best_value:.2f}" if r.search.best.best_value is not None else "n/a",
            r.search.counts,
        ]
        + ([r.search.params_text] if params else [])
        for r in rows
    ]
    widths = _widths(heads, cells)
    indent = sum(widths[:-1]) + 2 * (len(widths) - 1)
    out = []
    for r in [heads, *cells]:
        text = "  ".join(c.rjust(w) if i in (1, 2) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        out += textwrap.wrap(text.rstrip(), WIDTH, subsequent_indent=" " * min(indent, WIDTH // 2))
    return out + [""]


def render_text(table: AblationTable) -> str:
    """The table in a terminal's width; the wide paper layout is ``render(table, "md")``."""
    body = []
    previous = None
    columns = table.columns
    wide = MAX_CHANGES if table.has_paper else MAX_CHANGES + 2 * PAPER_DELTA_WIDTH
    for row in table.rows:
        body.append(_row_cells(table, row, group_label(row.group) if row.group != previous else "", columns, wide))
        previous = row.group
    headers, body = drop_paper_columns(table, list(HEADERS), body)
    headers, body = extras.score_columns(table, headers, body, "text", TEXT_BLEU)
    left_out = _last_columns(headers, body, table)
    column = _tuned_column(headers, body, table)
    numbers = RIGHT | extras.right_aligned(table, "text")
    right = {i for i, h in enumerate(headers) if h in numbers}
    widths = _fit(_widths(headers, body))
    body = [[_clip(c, widths[i]) if i in (1, 2) else c for i, c in enumerate(r)] for r in body]

    def line(cells: list[str]) -> str:
        padded = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(padded).rstrip()

    lines = [*_head(table), line(headers), line(["-" * w for w in widths]), *(line(r) for r in body), ""]
    lines += _tuned_list(table, params=not column) + left_out  # the figures with no room for their column
    notes = [*legend(table, terminal=True), *legend_lines(table), *fidelity_lines(table, fidelity(table))]
    notes += [f"failed: {row.name} {failure}" for row in table.rows for failure in row.failures]
    notes += extras.notes(table) + table.plan_notes
    for note in notes:
        lines += textwrap.wrap(note, WIDTH, initial_indent="- ", subsequent_indent="  ")
    return "\n".join(lines) + "\n"
