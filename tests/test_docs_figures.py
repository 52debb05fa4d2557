"""A figure the docs attribute to a results page is on that page.

Every paragraph of the README and of a docs page outside docs/results/ that links a results page
(``results/NAME.md``) attributes its measured figures (numbers with a decimal point: 11.48, -15.9%,
0.061, +0.63) to the pages it links; each must appear on one of them. A guide that quotes a run the
results page does not hold, or keeps a figure the page has since re-measured, fails here.
Code spans and fenced blocks are left out (commands and settings, not measurements)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(((?:\.\./|docs/)?results/[\w.-]+\.md)(?:#[\w-]+)?\)")
# a decimal figure, not part of a longer number, a version (2.13.0) or an exponent (2.2e-3)
FIGURE = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\d.]*\d)(?!e-?\d)")
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "results" not in p.parts)]


def attributed(page: Path) -> list[tuple[str, list[Path]]]:
    """(figure, the results pages its paragraph links) for every figure of a paragraph that links one."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        links = LINK.findall(paragraph)
        targets = [(ROOT / link if link.startswith("docs/") else page.parent / link).resolve() for link in links]
        plain = re.sub(r"`[^`]*`", "", paragraph)
        out += [(figure, targets) for figure in FIGURE.findall(plain) if targets]
    return out


def on_page(figure: str, targets: list[Path]) -> bool:
    pattern = re.compile(rf"(?<![\d.]){re.escape(figure)}(?!\d)")
    return any(t.is_file() and pattern.search(t.read_text(encoding="utf-8")) for t in targets)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_a_page_attributes_to_a_results_page_is_there(page: Path) -> None:
    missing = [
        f"{figure} (not on {', '.join(t.name for t in targets)})"
        for figure, targets in attributed(page)
        if not on_page(figure, targets)
    ]
    assert missing == []


def test_the_check_reads_a_paragraph_as_a_reader_does(tmp_path: Path) -> None:
    """A figure in a paragraph that links a results page counts; one in code, or in a paragraph with no
    such link, does not."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.md").write_text("base 11.48, Spearman +0.63\n", encoding="utf-8")
    page = tmp_path / "guide.md"
    page.write_text(
        "Base reached 11.48 and +0.64 ([run](results/r.md)); `torch==2.13.0`, lr 2.2e-3.\n\n"
        "Elsewhere 9.99 with no link.\n",
        encoding="utf-8",
    )
    found = attributed(page)
    assert [f for f, _ in found] == ["11.48", "0.64"]
    assert [f for f, targets in found if not on_page(f, targets)] == ["0.64"]
