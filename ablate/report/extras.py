"""The table's extra columns: the providers that ship (:class:`ablate.report.provider.ColumnProvider`), and
how every layout lays them out.

The renderers ask here, never a provider by name: the text, md and LaTeX tables place the columns
(:func:`with_columns`, or :func:`score_columns` and :func:`columns` where the terminal checks its width),
CSV, JSON and the W&B summary take their fields (:func:`record`, :func:`fields`, :func:`table_record`), the
notes under every table take their lines (:func:`legend`, :func:`notes`), and the plot its panel and
hatched bars (:func:`panel`, :func:`change`, :func:`hatched`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ablate.report.lengths import LENGTH_COLUMNS
from ablate.report.llmc import LLMC_COLUMN
from ablate.report.press import PRESS_COLUMN
from ablate.report.provider import LAST, PLACES, REFERENCES, SCORES, ColumnProvider
from ablate.report.published import PUBLISHED_COLUMN
from ablate.report.rows import AblationTable, ReportRow
from ablate.report.wen import WEN_COLUMN

# In the order of the records' fields (CSV, JSON, W&B); the tables and notes show them by place (_shown).
PROVIDERS: tuple[ColumnProvider, ...] = (PUBLISHED_COLUMN, PRESS_COLUMN, LENGTH_COLUMNS, LLMC_COLUMN, WEN_COLUMN)

Found = tuple[ColumnProvider, list[str], list[list[str]]]  # a provider, its headers, its cells per row


def _shown() -> list[ColumnProvider]:
    """The providers in the order the tables and notes show them: ours, then the references, then the rest."""
    return sorted(PROVIDERS, key=lambda p: PLACES.index(p.place))


def columns(table: AblationTable, layout: str, places: Sequence[str]) -> list[Found]:
    """The columns the table shows of the providers at ``places``: (provider, headers, cells per row)."""
    out = []
    for p in _shown():
        heads = p.headers(table, layout) if p.place in places else []
        if heads:
            out.append((p, heads, [p.cells(table, row, layout) for row in table.rows]))
    return out


def append(headers: list[str], body: list[list[str]], found: Found, escape: Callable[[str], str] = str) -> None:
    """Add one provider's columns at the end (in place)."""
    headers += [escape(h) for h in found[1]]
    for cells, more in zip(body, found[2]):
        cells += more


def score_columns(
    table: AblationTable,
    headers: list[str],
    body: list[list[str]],
    layout: str,
    bleu: Sequence[str],
    escape: Callable[[str], str] = str,
) -> tuple[list[str], list[list[str]]]:
    """The SCORES and REFERENCES columns where the BLEU columns start (``bleu``: the layout's BLEU headers,
    first one first); a table whose family has no BLEU, or that has such columns and no row with BLEU, loses
    the BLEU columns that follow."""
    found = columns(table, layout, (SCORES, REFERENCES))
    if not found and table.family.has_bleu:
        return headers, body
    at = headers.index(bleu[0])
    drop = 0
    if not table.family.has_bleu or not any(r.bleu for r in table.rows):
        while at + drop < len(headers) and headers[at + drop] in bleu:
            drop += 1
    heads = [escape(h) for _, hs, _ in found for h in hs]
    cells = [[c for _, _, rows in found for c in rows[i]] for i in range(len(body))]
    headers = headers[:at] + heads + headers[at + drop :]
    body = [row[:at] + more + row[at + drop :] for row, more in zip(body, cells)]
    return headers, body


def with_columns(
    table: AblationTable,
    headers: list[str],
    body: list[list[str]],
    layout: str,
    bleu: Sequence[str],
    escape: Callable[[str], str] = str,
) -> tuple[list[str], list[list[str]]]:
    """Every provider's columns: the scores and references in BLEU's place, then the LAST ones at the end."""
    headers, body = score_columns(table, headers, body, layout, bleu, escape)
    for found in columns(table, layout, (LAST,)):
        append(headers, body, found, escape)
    return headers, body


def right_aligned(table: AblationTable, layout: str) -> set[str]:
    """The headers of the columns whose cells are single numbers (the terminal right-aligns them)."""
    return {h for p, heads, _ in columns(table, layout, PLACES) if p.numbers for h in heads}


def record(table: AblationTable | None, row: ReportRow, places: Sequence[str]) -> dict[str, Any]:
    """A row's JSON fields from the providers at ``places``."""
    return {k: v for p in PROVIDERS if p.place in places for k, v in p.record(table, row).items()}


def fields(table: AblationTable, summary: bool = False) -> list[str]:
    """The CSV columns the providers add (``summary``: the W&B table's, from the providers that have some)."""
    return [key for p in PROVIDERS if p.summary or not summary for key in p.fields(table)]


def table_record(table: AblationTable) -> dict[str, Any]:
    """The providers' entries of the table's JSON."""
    return {k: v for p in PROVIDERS for k, v in p.table_record(table).items()}


def legend(table: AblationTable) -> list[str]:
    return [line for p in _shown() for line in p.legend(table)]


def notes(table: AblationTable) -> list[str]:
    return [line for p in _shown() for line in p.notes(table)]


def panel(table: AblationTable) -> str | None:
    """The metric a provider draws in the plot's BLEU panel, if any."""
    return next((m for p in _shown() if (m := p.panel(table)) is not None), None)


def change(table: AblationTable, row: ReportRow, length: int) -> float | None:
    """The hatched bar of ``row`` at PPL length ``length`` (in %), where a provider has one."""
    return next((c for p in _shown() if (c := p.change(table, row, length)) is not None), None)


def hatched() -> str:
    """Whose changes the hatched bars of a length panel show."""
    return " / ".join(p.hatched for p in _shown() if p.hatched)
