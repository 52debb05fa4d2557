"""The README's table excerpt is lines of the main job's table, and CI checks that it still is.

    ablate table sweeps/table3-mini.yaml > table.txt
    python .ci/readme_table.py write table.txt README.md    # rewrite the README's block from that table
    python .ci/readme_table.py check table.txt README.md    # exit 1, naming each row that differs

``table.txt`` is the terminal layout the main job (``ablate sweep sweeps/table3-mini.yaml``) prints at
its end and ``ablate table`` prints again from the store. The block is the ```` ```text ```` fence after
the marker ``<!-- table:main -->``: the column header and its rule, the rows of :data:`ROWS` and the notes
that start with :data:`NOTES`, each copied verbatim. Verbatim lines, not a layout rebuilt from the JSON,
so the README shows exactly what a reader's terminal shows (the same marks, the same column widths) and
the check compares text, not a second copy of the table's formatting. The numbers are deterministic (the
builtin corpus and every seed are fixed): a rerun on the same machine prints the same digits, so a
difference means the README shows another run than today's code makes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

MARKER = "<!-- table:main -->"
FENCE = re.compile(re.escape(MARKER) + r"\s*```text\n(.*?)```", re.S)
# The rows shown: base, the first row of each group A to E, and big (the labels the terminal prints).
ROWS = ("base", "h=1 [A1]", "d_k=2 [B1]", "N=1 [C1]", "P_drop=0.0 [D1]", "learned pos [E]", "big")
# The notes under the table that are shown, by their first word: the warning that training stopped early
# (printed when base was still improving), the rank correlation and the sign agreement with the paper.
NOTES = ("UNDERTRAINED", "Spearman", "Delta")


class BadInput(Exception):
    """A file that is missing or has no table (exit 2, one line)."""


def table_parts(text: str) -> tuple[list[str], dict[str, str], dict[str, list[str]]]:
    """(header and rule, {row label: its line}, {note's first word: its lines}) of a terminal table."""
    lines = text.splitlines()
    try:
        at = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["row", "changes"])
    except StopIteration:
        raise BadInput("no table in it (no line with the columns `row changes ...`)") from None
    header = lines[at : at + 2]
    span = _row_column(header[0])
    rows, i = {}, at + 2
    while i < len(lines) and lines[i].strip():
        rows[lines[i][span].strip()] = lines[i]
        i += 1
    notes: dict[str, list[str]] = {}
    for ln in lines[i:]:
        if ln.startswith("- "):
            current = notes.setdefault(ln[2:].split(" ")[0].rstrip(":"), [])
            current.append(ln)
        elif ln.startswith("  ") and notes:
            current.append(ln)  # a note wrapped to the terminal's width
    return header, rows, notes


def _row_column(header: str) -> slice:
    """Where a row's label is in a line: from the `row` column to the `changes` column."""
    return slice(header.index("row"), header.index("changes"))


def excerpt(text: str) -> list[str]:
    """The block's lines, taken from the terminal table ``text``."""
    header, rows, notes = table_parts(text)
    missing = [r for r in ROWS if r not in rows]
    if missing:
        raise BadInput(f"the table has no row {', '.join(missing)} (rows: {', '.join(rows)})")
    shown = [ln for key, lines in notes.items() if key in NOTES for ln in lines]  # in the table's order
    return [*header, *(rows[r] for r in ROWS), *shown]


def readme_block(readme: str) -> re.Match[str]:
    found = FENCE.search(readme)
    if found is None:
        raise BadInput(f"README.md has no ```text block after {MARKER}")
    return found


def differences(text: str, readme: str) -> list[str]:
    """One line for each line of the README's block that the table ``text`` does not print as it is."""
    header, rows, notes = table_parts(text)
    block = readme_block(readme).group(1).splitlines()
    span = _row_column(block[0]) if block and "changes" in block[0] else _row_column(header[0])
    printed = {*header, *rows.values(), *(ln for note in notes.values() for ln in note)}
    out = []
    for ln in block:
        if ln in printed:
            continue
        label = ln[span].strip()
        if ln.startswith(("- ", "  ")) or label not in rows:
            out.append(f"README: {ln.strip()!r} is not in the main job's table")
        else:
            out.append(f"row {label!r}: README {ln.strip()!r}, the main job printed {rows[label].strip()!r}")
    return out


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in ("write", "check"):
        print("usage: readme_table.py write|check TABLE.txt [README.md]", file=sys.stderr)
        return 2
    table_path, readme_path = Path(argv[1]), Path(argv[2] if len(argv) == 3 else "README.md")
    try:
        text, readme = table_path.read_text(encoding="utf-8"), readme_path.read_text(encoding="utf-8")
        if argv[0] == "write":
            found = readme_block(readme)
            new = "\n".join(excerpt(text)) + "\n"
            readme_path.write_text(readme[: found.start(1)] + new + readme[found.end(1) :], encoding="utf-8")
            return 0
        problems = differences(text, readme)
    except (OSError, BadInput) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"README table: {problem}", file=sys.stderr)
    if problems:
        print("README table: regenerate it: python .ci/readme_table.py write TABLE.txt README.md", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
