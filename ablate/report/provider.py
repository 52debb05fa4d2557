"""The shape of a source of extra columns beside ours: a language model's PPL at longer lengths, Press et
al.'s reference figures, another study's figure for a row's change.

A provider declares its columns once: which tables show them (a provider with no header for a table adds
nothing to it), their headers and cells in each layout, the fields of a row's JSON / CSV / W&B record, the
table's own JSON entries, the lines it adds under the table, and its share of the plot. The renderers (the
terminal, md, LaTeX, CSV, JSON, the W&B summary and the plot) iterate the list in
:mod:`ablate.report.extras` and never call a provider by name.

Where its columns go (``place``):

* :data:`SCORES`: ours at settings beyond the PPL column's (a language model's longer lengths), where the
  BLEU columns start; a table without BLEU, or with such columns and no row that has BLEU, gives up the
  BLEU columns for them;
* :data:`REFERENCES`: another's figures for those scores, right after them;
* :data:`LAST`: after the table's own columns, and in a row's JSON after its parameter counts.

This module imports nothing of the report: the providers' modules subclass :class:`ColumnProvider`.
"""

from __future__ import annotations

from typing import Any

SCORES = "scores"
REFERENCES = "references"
LAST = "last"
PLACES = (SCORES, REFERENCES, LAST)  # the order the tables and notes show them in
LAYOUTS = ("text", "md", "latex")  # the layouts that draw columns (CSV, JSON and W&B take records)


class ColumnProvider:
    """One source of extra columns; each method's default adds nothing, so a provider overrides what it has.

    ``table`` is an :class:`ablate.report.rows.AblationTable`, ``row`` one of its ``ReportRow``s, ``layout``
    one of :data:`LAYOUTS` (LaTeX escapes the headers and cells itself).
    """

    place: str = LAST
    numbers: bool = True  # each cell one number, right-aligned in the terminal (md and LaTeX align all right)
    summary: bool = True  # its record's fields are columns of the W&B summary table
    hatched: str | None = None  # whose changes the plot's hatched bars show, where ``change`` gives one

    def headers(self, table: Any, layout: str) -> list[str]:
        """Its column headers in ``layout``; none where the table does not show its columns."""
        return []

    def cells(self, table: Any, row: Any, layout: str) -> list[str]:
        """The row's cells under :meth:`headers` (called only where there are headers)."""
        return []

    def record(self, table: Any | None, row: Any) -> dict[str, Any]:
        """The row's fields in JSON (``table`` None: a row read without its table)."""
        return {}

    def fields(self, table: Any) -> list[str]:
        """The CSV columns (and, with ``summary``, the W&B ones) it adds: its records' keys over the rows."""
        return list(dict.fromkeys(key for row in table.rows for key in self.record(table, row)))

    def table_record(self, table: Any) -> dict[str, Any]:
        """Entries of the table's JSON beside its rows (a summary over them)."""
        return {}

    def legend(self, table: Any) -> list[str]:
        """Lines of the legend, after what the table's marks and learning checks say."""
        return []

    def notes(self, table: Any) -> list[str]:
        """Lines after every other note under the table."""
        return []

    def panel(self, table: Any) -> str | None:
        """The metric the plot draws in BLEU's panel instead (``ppl@N``), None: BLEU's stays."""
        return None

    def change(self, table: Any, row: Any, length: int) -> float | None:
        """The plot's hatched bar of the row at PPL length ``length``: the change in % that :attr:`hatched`
        measured, None where there is none."""
        return None
