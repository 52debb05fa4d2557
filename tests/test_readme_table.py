"""The README's table block is lines of the main job's table (.ci/readme_table.py): CI's check passes on the
table the block came from and fails, naming the row, when the main job prints one of its rows otherwise."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("readme_table", ROOT / ".ci" / "readme_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def printed_table(script, block: list[str]) -> str:
    """A terminal table holding the block's lines: a title, the header, the rows, a blank line, the notes,
    and a row and a note the README leaves out."""
    notes = next(i for i, ln in enumerate(block) if ln.startswith("- "))
    span = script._row_column(block[0])
    extra = block[3][: span.start] + "h=4 [A2]".ljust(span.stop - span.start) + block[3][span.stop :]
    return "\n".join(["t", "=", "", *block[:notes], extra, "", "- a note not shown", *block[notes:], ""])


def block_lines(script, readme: str) -> list[str]:
    return script.readme_block(readme).group(1).splitlines()


def test_the_readme_block_is_what_the_script_writes_from_its_table(script) -> None:
    block = block_lines(script, README.read_text(encoding="utf-8"))
    assert script.excerpt(printed_table(script, block)) == block  # every row of ROWS, the notes, nothing else
    assert any(ln.startswith("- Spearman") for ln in block)


def test_the_check_passes_on_the_same_table_and_fails_on_a_changed_row(script, tmp_path: Path, capsys) -> None:
    readme = README.read_text(encoding="utf-8")
    block = block_lines(script, readme)
    table = tmp_path / "table.txt"
    table.write_text(printed_table(script, block), encoding="utf-8")
    assert script.main(["check", str(table), str(README)]) == 0
    row = next(i for i, ln in enumerate(block) if "h=1 [A1]" in ln)
    changed = re.sub(r"\d\.\d\d", lambda m: f"{(int(m.group(0)[0]) + 1) % 10}{m.group(0)[1:]}", block[row], count=1)
    assert changed != block[row]
    table.write_text(printed_table(script, [*block[:row], changed, *block[row + 1 :]]), encoding="utf-8")
    assert script.main(["check", str(table), str(README)]) == 1
    err = capsys.readouterr().err
    assert "row 'h=1 [A1]': README" in err and changed.strip() in err and "write TABLE.txt" in err


def test_write_rewrites_only_the_block(script, tmp_path: Path) -> None:
    readme = README.read_text(encoding="utf-8")
    block = block_lines(script, readme)
    table = tmp_path / "table.txt"
    table.write_text(printed_table(script, block), encoding="utf-8")
    copy = tmp_path / "README.md"
    found = script.readme_block(readme)
    copy.write_text(readme[: found.start(1)] + "old\n" + readme[found.end(1) :], encoding="utf-8")
    assert script.main(["write", str(table), str(copy)]) == 0
    assert copy.read_text(encoding="utf-8") == readme


def test_a_readme_without_the_block_or_a_file_without_a_table_is_one_line(script, tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("# nothing\n", encoding="utf-8")
    table = tmp_path / "table.txt"
    table.write_text("no table here\n", encoding="utf-8")
    for args in (["check", str(table), str(README)], ["write", str(table), str(empty)], ["check", "nowhere"]):
        assert script.main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error:"), args
