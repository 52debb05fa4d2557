"""The README stays a front door (one screen per purpose, every link resolving) and the docs' page on
reading the table names every mark the table prints."""

from __future__ import annotations

import re
from pathlib import Path

from ablate.report import cells

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 150


def test_every_link_of_the_readme_resolves() -> None:
    links = [t for t in re.findall(r"\]\(([^)#\s]+)", README) if "://" not in t]
    assert len(links) >= 10
    assert [t for t in links if not (ROOT / t).exists()] == []


def test_reading_the_table_names_every_mark_the_table_prints() -> None:
    page = (ROOT / "docs" / "guides" / "reading-the-table.md").read_text(encoding="utf-8")
    marks = {cells.SIGNIFICANT, cells.SENTENCES_ONLY, cells.EQUIVALENT, cells.NOT_LEARNED, cells.IMPROVING}
    marks |= set(cells.MARKERS.values())
    assert [m for m in sorted(marks) if f"`{m}`" not in page] == []
