"""Which file owns a sweep's name in a store shared by machines (PostgreSQL): a file on another machine,
which this one cannot see, keeps the name, so a second machine's file cannot take it and lock the first
out of its own sweep; a file removed on this machine frees it. Machines are told apart by their host
name (monkeypatched); "another machine's file" is one this machine cannot see (moved away here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_harness import one_line_error

from ablate.cli import main
from ablate.sweep.store import owner
from ablate.sweep.store.owner import Owner, clash_line, file_records, recorded_owner

ROWS = [{"name": "base", "group": "base"}, {"name": "wide", "group": "A", "overrides": ["model.d_ff=48"]}]


def _on(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setattr(owner, "this_host", lambda: host)


def test_a_file_not_seen_here_holds_the_name_only_on_another_machine_of_a_server_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on(monkeypatch, "node-a")
    gone = tmp_path / "a" / "t.yaml"  # recorded, not on this machine
    mine = tmp_path / "t.yaml"
    mine.write_text("name: t\n")
    attrs = file_records(gone, None)
    assert attrs == {"file": str(gone.resolve()), "file_host": "node-a"}
    recorded = recorded_owner(attrs, None)
    assert recorded == Owner(gone.resolve(), "node-a")
    assert clash_line(mine, "t", "db", recorded, lambda p: True) is None  # removed on this machine: free
    _on(monkeypatch, "node-b")
    line = clash_line(mine, "t", "db", recorded, lambda p: True)
    assert line is not None and f"is taken in store db by {gone.resolve()} on machine node-a" in line
    assert "--reuse t" in line
    # a file store: what this machine sees decides (its copy goes with its folder), as in an old store
    assert recorded_owner(file_records(gone, tmp_path / "t.db"), tmp_path / "t.db").host is None
    assert recorded_owner({"file": str(gone)}, None) == Owner(gone, None)


def test_another_machines_file_cannot_take_the_name_and_lock_the_first_out(
    write_sweep, fake_trainer, postgres_db, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write_sweep(rows=ROWS, name="shared", store=postgres_db)
    _on(monkeypatch, "node-a")
    assert main(["sweep", str(first)]) == 0  # node-a runs the original
    capsys.readouterr()
    hidden = first.with_name("elsewhere.yaml")
    first.rename(hidden)  # node-b cannot see node-a's file
    second = write_sweep(rows=ROWS, name="shared", store=postgres_db, filename="second.yaml", seeds=[1, 2])
    _on(monkeypatch, "node-b")
    for extra in (["--dry-run"], []):
        assert main(["sweep", str(second), *extra]) == 2
        err = one_line_error(capsys)
        assert "name 'shared' is taken in store" in err and f"{first} on machine node-a" in err
    hidden.rename(first)
    _on(monkeypatch, "node-a")
    assert main(["sweep", str(first)]) == 0  # the original runs on: nothing took its name
    assert "0 new trial(s)" in capsys.readouterr().out
    first.unlink()  # removed on the machine it ran on: the name is free
    assert main(["sweep", str(second), "--dry-run"]) == 0
