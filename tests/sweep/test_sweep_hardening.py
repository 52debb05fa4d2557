"""Mistakes and faults a new user meets, each answered in one line with exit 2 and nothing written:
a store that is not a database, read commands that must write nothing, and the like."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_harness import one_line_error

from ablate.cli import main
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.store.store import SweepStore


@pytest.mark.parametrize("verb", [["sweep", "--dry-run"], ["status"], ["table"], ["sweep"]])
def test_a_store_that_is_not_a_database_is_one_line(write_sweep, tmp_path: Path, capsys, verb: list[str]) -> None:
    path = write_sweep()
    path = write_sweep(store=f"sqlite:///{path}")  # the sweep file itself: YAML, not SQLite
    before = path.read_bytes()
    assert main([verb[0], str(path), *verb[1:]]) == 2
    err = one_line_error(capsys)
    assert "is not a SQLite database" in err and "store:" in err
    assert path.read_bytes() == before and not Path(f"{path}.ablate-lock").exists()
    assert not (tmp_path / "runs").exists()


def test_read_commands_write_nothing_beside_the_store(write_sweep, capsys) -> None:
    path = write_sweep()
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    folder = path.parent / ".ablate"
    for lock in folder.glob("*.ablate-lock"):
        lock.unlink()
    before = sorted(p.name for p in folder.iterdir())
    for verb in (["sweep", str(path), "--dry-run"], ["status", str(path)], ["table", str(path)]):
        assert main(verb) == 0
    assert sorted(p.name for p in folder.iterdir()) == before
