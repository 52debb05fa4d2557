"""The extra columns are providers of one shape (ablate/report/provider.py): one added to the list reaches
every layout, its fields every record and its lines the notes, with no renderer naming it; where it goes
follows its place."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from ablate.report import extras
from ablate.report.provider import LAST, SCORES, ColumnProvider
from ablate.report.render import render
from ablate.report.table import build_table
from ablate.report.wandb_summary import table_columns


class Wall(ColumnProvider):
    """A toy provider: each row's wall-clock hours."""

    def __init__(self, place: str) -> None:
        self.place = place

    def headers(self, table: Any, layout: str) -> list[str]:
        return ["wall h"]

    def cells(self, table: Any, row: Any, layout: str) -> list[str]:
        return [f"{len(row.name):.1f}"]

    def record(self, table: Any, row: Any) -> dict[str, Any]:
        return {"wall_hours": float(len(row.name))}

    def table_record(self, table: Any) -> dict[str, Any]:
        return {"wall_total": sum(float(len(r.name)) for r in table.rows)}

    def notes(self, table: Any) -> list[str]:
        return ["wall h: hours of one device per seed"]


@pytest.fixture
def table(snapshot_results):
    return build_table(snapshot_results, name="snap")


def test_a_provider_in_the_list_reaches_every_layout_and_record(monkeypatch, table) -> None:
    monkeypatch.setattr(extras, "PROVIDERS", (*extras.PROVIDERS, Wall(LAST)))
    for fmt in ("text", "md", "latex"):
        out = render(table, fmt)
        assert "wall h" in out and "hours of one device per seed" in out, fmt
    md_head = next(line for line in render(table, "md").splitlines() if line.startswith("| ") and "row" in line)
    assert md_head.rstrip(" |").endswith("wall h")  # LAST: after the table's own columns
    data = json.loads(render(table, "json"))
    assert data["rows"][0]["wall_hours"] == 4.0 and data["wall_total"] > 0
    rows = list(csv.DictReader(io.StringIO(render(table, "csv"))))
    assert rows[0]["wall_hours"] == "4.0"
    assert table_columns(table)[-1] == "wall_hours"  # summary defaults to True: a W&B column too


def test_a_scores_provider_takes_the_place_of_bleu_only_where_no_row_has_bleu(monkeypatch, table) -> None:
    monkeypatch.setattr(extras, "PROVIDERS", (*extras.PROVIDERS, Wall(SCORES)))
    md_head = next(line for line in render(table, "md").splitlines() if line.startswith("| ") and "row" in line)
    cells = [c.strip() for c in md_head.split("|")]
    assert cells.index("wall h") == cells.index("BLEU (Δ)") - 1  # where BLEU starts; the table has BLEU: kept
    for row in table.rows:
        row.bleu = None
    md_head = next(line for line in render(table, "md").splitlines() if line.startswith("| ") and "row" in line)
    assert "wall h" in md_head and "BLEU" not in md_head
