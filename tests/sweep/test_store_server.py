"""A sweep's store on a real PostgreSQL server (started by the fixtures in a throwaway folder; skipped with
the reason where PostgreSQL or psycopg is missing): a fresh database works, and a server that is down or
silent is one line and exit 2 from every command, with nothing written."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter

import pg_server
import pytest
from sweep_harness import calls

from ablate.cli import main
from ablate.sweep.loader import load_results
from ablate.sweep.store import opening
from ablate.sweep.store.location import server_url, shown

ROWS = [{"name": "base", "group": "base"}, {"name": "wide", "group": "A", "overrides": ["model.d_ff=48"]}]
COMMANDS = (["sweep"], ["sweep", "--dry-run"], ["status"], ["table"])


def test_postgresql_urls_go_through_psycopg_3_and_print_no_password() -> None:
    assert server_url("postgresql://u:pw@h:5/db") == "postgresql+psycopg://u:pw@h:5/db"
    assert server_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert server_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"  # a driver named stays
    assert server_url("mysql://u@h/db") == "mysql://u@h/db"
    assert "pw" not in shown("postgresql+psycopg://u:pw@h:5/db") and "u:***@h" in shown(
        "postgresql+psycopg://u:pw@h/db"
    )


def test_a_sweep_on_a_fresh_database_finishes_once_and_a_rerun_launches_nothing(
    write_sweep, fake_trainer, postgres_db, capsys
) -> None:
    plain = postgres_db.replace("postgresql+psycopg://", "postgresql://")  # the form the README gives
    path = write_sweep(rows=ROWS, seeds=[1, 2], store=plain)
    assert main(["sweep", str(path)]) == 0
    results = load_results(path)
    assert [r.state for r in results] == ["done"] * 4
    assert Counter(len(calls(r.run_dir)) for r in results) == {1: 4}  # each trial trained once
    capsys.readouterr()
    assert main(["sweep", str(path)]) == 0
    assert "0 new trial(s)" in capsys.readouterr().out
    assert main(["status", str(path)]) == 0
    assert "4 done" in capsys.readouterr().out


def _one_line_from_every_command(path, capsys, why: str) -> None:
    for command in COMMANDS:
        started = time.monotonic()
        assert main([command[0], str(path), *command[1:]]) == 2, command
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "cannot reach the database server" in err and why in err, (command, err)
        # the requirement (an answer within a minute), not a measurement: a hang would pass otherwise
        assert time.monotonic() - started < 60, command
    assert not (path.parent / "runs").exists()  # nothing was prepared or launched


def test_a_stopped_server_is_one_line_and_exit_2_from_every_command(write_sweep, fake_trainer, capsys) -> None:
    why = pg_server.why_not()
    if why or pg_server.bindir() is None:
        pytest.skip(why or "PostgreSQL is not installed (no initdb): apt-get install postgresql")
    server = pg_server.start_server()  # its own server: this test stops it
    try:
        url = pg_server.new_database(server.url)
        server.stop()
        _one_line_from_every_command(write_sweep(rows=ROWS, store=url), capsys, "refused")
    finally:
        server.remove()


def test_a_server_that_never_answers_is_one_line_after_the_connect_timeout(write_sweep, capsys, monkeypatch) -> None:
    pytest.importorskip("psycopg", reason='psycopg is not installed: pip install -e ".[postgres]"')
    monkeypatch.setattr(opening, "CONNECT_TIMEOUT_S", 2)  # the test's patience, not the product's
    listener = socket.create_server(("127.0.0.1", 0))  # accepts connections, never says a word
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.extend(iter(lambda: listener.accept()[0], None)), daemon=True).start()
    port = listener.getsockname()[1]
    path = write_sweep(rows=ROWS, store=f"postgresql://ablate@127.0.0.1:{port}/db")
    try:
        assert main(["status", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "cannot reach the database server (connection timeout expired)" in err
    finally:
        listener.close()


@pytest.mark.integration
def test_a_database_stopped_for_30_s_mid_sweep_is_waited_for_and_nothing_is_retried(write_sweep) -> None:
    import subprocess

    from sweep_harness import ablate_cmd, attempt_marks, fake_env
    from sweep_harness import wait_for as _wait

    from ablate.rundir import read_progress
    from ablate.sweep.file.spec import load_sweep

    why = pg_server.why_not()
    if why or pg_server.bindir() is None:
        pytest.skip(why or "PostgreSQL is not installed (no initdb): apt-get install postgresql")
    server = pg_server.start_server()  # its own server: this test stops it
    try:
        path = write_sweep(
            rows=ROWS,
            store=pg_server.new_database(server.url),
            overrides=["train.max_steps=16"],
            fake={"*": {"step_s": 1.0}},
            heartbeat={"interval_s": 1, "grace_s": 120},
        )
        run_dirs = [t.run_dir for t in load_sweep(path).trials]
        ctl = subprocess.Popen(ablate_cmd("sweep", str(path)), env=fake_env(), stderr=subprocess.PIPE, text=True)
        _wait(lambda: all(read_progress(r).get("step", 0) >= 2 for r in run_dirs), what="both trials training")
        server.stop()
        time.sleep(30)  # the outage: both trials end during it, so their workers' last writes wait too
        server.start()
        _, err = ctl.communicate(timeout=300)
        assert ctl.returncode == 0, err[-2000:]
        assert "the database server is not answering" in err and "waiting up to" in err
        assert all(marks == [(0, "COMPLETE", None)] for marks in attempt_marks(path).values()), attempt_marks(path)
        assert all(len(calls(r)) == 1 for r in run_dirs)  # each trial trained once, through the outage
    finally:
        server.remove()


def test_a_server_gone_for_longer_than_the_patience_is_one_line(write_sweep, monkeypatch, capsys) -> None:
    from ablate.errors import StoreUnreachable
    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.store import patience
    from ablate.sweep.store.store import SweepStore

    why = pg_server.why_not()
    if why or pg_server.bindir() is None:
        pytest.skip(why or "PostgreSQL is not installed (no initdb): apt-get install postgresql")
    server = pg_server.start_server()
    try:
        sweep = load_sweep(write_sweep(rows=ROWS, store=pg_server.new_database(server.url)))
        store = SweepStore.for_sweep(sweep)
        store.sync(sweep)
        server.stop()
        monkeypatch.setattr(patience, "PATIENCE_S", 1.0)
        with pytest.raises(StoreUnreachable) as gone:
            store.attempts()
        assert "has not answered for 1 s (attempts)" in str(gone.value) and "\n" not in str(gone.value)
        assert "waiting up to 1 s" in capsys.readouterr().err
    finally:
        server.remove()
