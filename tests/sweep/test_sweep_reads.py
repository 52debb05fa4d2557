"""ablate.sweep.store.reads: finished attempts are read once, the rest every time; a controller pass reads once
until it writes; what another process writes is seen at the next read, as a full read through Optuna's
API shows it. Both ways of reading are checked: SQL on Optuna's tables (SQL stores) and Optuna's API
(journal stores, or tables not as expected)."""

from __future__ import annotations

import time

import pytest

from ablate.sweep.file.spec import load_sweep
from ablate.sweep.plan import trial_states
from ablate.sweep.store.location import StoreLocation
from ablate.sweep.store.store import SweepStore

ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 + i}"]} for i in range(6)]


@pytest.fixture(params=["sql", "api"])
def mode(request) -> str:
    return request.param


def _stores(write_sweep, mode: str):
    sweep = load_sweep(write_sweep(rows=ROWS))
    mine, other = SweepStore.for_sweep(sweep), SweepStore.for_sweep(sweep)
    mine.reader._sql = mode == "sql"
    mine.sync(sweep)
    return sweep, mine, other


def _full(store: SweepStore):
    fresh = SweepStore(store.url, store.study_name)
    fresh.reader._sql = False  # Optuna's own reading: the reference
    return [(a.storage_id, a.number, a.state, a.attrs) for a in fresh.attempts()]


def _seen(store: SweepStore):
    return [(a.storage_id, a.number, a.state, a.attrs) for a in store.attempts()]


def test_incremental_reads_match_a_full_read_as_others_write(write_sweep, mode):
    sweep, mine, other = _stores(write_sweep, mode)
    first = mine.attempts()
    full = mine.reader.full_reads  # sync read the empty store, then this read everything once
    assert len(first) == 6 and (mine.reader._table is not None) == (mode == "sql")
    ids = [a.storage_id for a in first]
    assert other.claim(ids[0], "x") and other.claim(ids[1], "y")
    assert _seen(mine) == _full(mine)
    other.finish(ids[0], {"val/ppl": 5.0})
    other.fail(ids[1], "boom", "crashed")
    assert _seen(mine) == _full(mine)
    assert mine.reader.full_reads == full
    if mode == "api":
        assert set(mine.reader.finished) == {ids[0], ids[1]}
    assert other.retry(other.get(ids[1]))  # a new attempt appears: one more WAITING
    assert _seen(mine) == _full(mine) and len(mine.attempts()) == 7 and mine.reader.full_reads == full


def test_an_attempt_created_and_finished_between_reads_is_seen(write_sweep, mode):
    sweep, mine, other = _stores(write_sweep, mode)
    ids = [a.storage_id for a in mine.attempts()]
    full = mine.reader.full_reads
    assert other.claim(ids[2], "x")
    other.fail(ids[2], "boom", "crashed")
    other.retry(other.get(ids[2]))
    new = max(a.storage_id for a in other.attempts())
    assert other.claim(new, "x")
    other.finish(new, {"val/ppl": 4.0})  # created and finished while mine was not looking
    assert _seen(mine) == _full(mine)
    if mode == "api":  # the API reader asks only for live trials: a count mismatch makes it read all
        assert mine.reader.full_reads == full + 1


def test_sql_reads_recover_a_trial_they_missed(write_sweep):
    """A trial committed late under a lower id (server databases) is not newer than any seen: the count
    of the study's trials differs from the known ones, and every trial is read again."""
    sweep, mine, other = _stores(write_sweep, "sql")
    ids = [a.storage_id for a in mine.attempts()]
    assert other.claim(ids[3], "x")
    other.finish(ids[3], {"val/ppl": 3.0})
    mine.attempts()
    del mine.reader._table.known[ids[3]]  # as if it had never been seen
    assert _seen(mine) == _full(mine)


def test_a_heartbeat_updates_the_attempt_in_place_and_keeps_the_views(write_sweep):
    sweep, mine, other = _stores(write_sweep, "sql")
    sid = mine.attempts()[0].storage_id
    assert other.claim(sid, "x")
    views = trial_states(mine, sweep)
    running = views[0].latest
    assert running.state == "RUNNING" and mine.reader.memo("views", sweep, lambda: None) is views
    generation = mine.reader.generation
    time.sleep(0.01)
    other.beat(sid)
    beat = next(a for a in mine.attempts() if a.storage_id == sid)
    assert beat is running and beat.attrs["heartbeat"] == other.get(sid).attrs["heartbeat"]
    assert mine.reader.generation == generation and trial_states(mine, sweep) is views  # nothing rebuilt
    other.finish(sid, {"val/ppl": 2.0})
    assert trial_states(mine, sweep)[0].state == "done" and mine.reader.generation > generation


def test_a_pass_reads_once_until_this_process_writes(write_sweep, mode):
    sweep, mine, other = _stores(write_sweep, mode)
    mine.attempts()
    with mine.reader.pass_snapshot():
        a = mine.attempts()
        other.fail(a[0].storage_id, "boom", "crashed")  # another process: not seen inside the pass
        assert mine.attempts()[0].state == "WAITING"
        assert mine.claim(a[1].storage_id, "me")  # this process writes: the pass reads again
        states = {x.storage_id: x.state for x in mine.attempts()}
        assert states[a[0].storage_id] == "FAIL" and states[a[1].storage_id] == "RUNNING"
    assert mine.attempts()[0].state == "FAIL"  # outside a pass: always current


def test_opening_to_read_fails_in_one_line(tmp_path):
    """Opened to read, a store is a SQL engine: a file without Optuna's tables is 'no study yet' (a sweep
    not started), an unknown driver 'cannot open', as when Optuna's storage opened it."""
    from ablate.errors import SweepError
    from ablate.sweep.store.opening import open_store

    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(SweepError, match="no study 's' yet"):
        open_store(StoreLocation.parse(f"sqlite:///{empty}"), "s", create=False)
    assert not SweepStore(f"sqlite:///{empty}", "s").exists()
    for create in (False, True):
        with pytest.raises(SweepError, match="cannot open"):
            open_store(StoreLocation.parse("nosuchdb+driver://u@h/x"), "s", create=create)


def test_a_shared_store_without_this_sweeps_study_reads_as_not_started(write_sweep, tmp_path, capsys):
    """A SQLite store that holds another sweep's study only: read with sqlite3, 'no study yet' is one
    line (a KeyError traceback once), and `ablate status` says the sweep has not started."""
    from ablate.cli import main
    from ablate.errors import SweepError
    from ablate.sweep.store.opening import open_store

    shared = f"sqlite:///{tmp_path / 'shared.db'}"
    first = load_sweep(write_sweep(store=shared))
    SweepStore.for_sweep(first).sync(first)
    with pytest.raises(SweepError, match="no study 'other' yet"):
        open_store(StoreLocation.parse(shared), "other", create=False)
    second = write_sweep(filename="other.yaml", name="other", store=shared)
    assert main(["status", str(second)]) == 0
    assert "not started" in capsys.readouterr().out


def test_a_store_opened_to_read_is_opened_again_to_write(write_sweep):
    sweep, mine, other = _stores(write_sweep, "sql")
    reader = SweepStore.for_sweep(sweep)
    assert reader.exists() and reader._storage is None and not reader._checked  # a SQL engine alone
    assert len(reader.attempts()) == 6 and reader._storage is None
    assert reader.sync(sweep) == [] and reader._checked  # a write: Optuna's storage, with its checks


def test_an_untested_optuna_schema_is_read_through_optunas_api(write_sweep, capsys) -> None:
    """The SQL reads depend on Optuna's tables: on a schema revision they were not tested on, the store
    says so in one line and reads through Optuna's API, with the same attempts."""
    import sqlite3

    path = write_sweep(rows=[{"name": "a"}, {"name": "b", "overrides": ["model.n_heads=4"]}])
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    expected = [(a.ablate_id, a.state) for a in SweepStore.for_sweep(sweep).attempts()]
    assert store.reader._sql  # the tested revision: SQL
    db = sqlite3.connect(str(store.location.file))
    db.execute("UPDATE alembic_version SET version_num = 'v99.0.0.a'")
    db.commit()
    db.close()
    capsys.readouterr()
    later = SweepStore.for_sweep(sweep)
    assert [(a.ablate_id, a.state) for a in later.attempts()] == expected
    assert not later.reader._sql
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "v99.0.0.a" in err and "Optuna's API" in err
    later.attempts()
    assert capsys.readouterr().err == ""  # said once
