"""ablate.sweep.reads: finished attempts are read once, the rest every time; a controller pass reads once
until it writes; what another process writes is seen at the next read, as a full read would show it."""

from __future__ import annotations

from ablate.sweep.spec import load_sweep
from ablate.sweep.store import SweepStore

ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 + i}"]} for i in range(6)]


def _stores(write_sweep):
    sweep = load_sweep(write_sweep(rows=ROWS))
    mine, other = SweepStore.for_sweep(sweep), SweepStore.for_sweep(sweep)
    mine.sync(sweep)
    return sweep, mine, other


def _full(store: SweepStore):
    fresh = SweepStore(store.url, store.study_name)
    return [(a.storage_id, a.state, a.attrs.get("failure")) for a in fresh.attempts()]


def _seen(store: SweepStore):
    return [(a.storage_id, a.state, a.attrs.get("failure")) for a in store.attempts()]


def test_incremental_reads_match_a_full_read_as_others_write(write_sweep):
    sweep, mine, other = _stores(write_sweep)
    first = mine.attempts()
    full = mine.reader.full_reads  # sync read the empty store, then this read everything once
    assert len(first) == 6
    ids = [a.storage_id for a in first]
    assert other.claim(ids[0], "x") and other.claim(ids[1], "y")
    other.finish(ids[0], {"val/ppl": 5.0})
    other.fail(ids[1], "boom", "crashed")
    assert _seen(mine) == _full(mine)
    assert mine.reader.full_reads == full and set(mine.reader.finished) == {ids[0], ids[1]}
    assert other.retry(other.get(ids[1]))  # a new attempt appears: one more WAITING
    assert _seen(mine) == _full(mine) and len(mine.attempts()) == 7 and mine.reader.full_reads == full


def test_an_attempt_created_and_finished_between_reads_forces_a_full_read(write_sweep):
    sweep, mine, other = _stores(write_sweep)
    ids = [a.storage_id for a in mine.attempts()]
    full = mine.reader.full_reads
    assert other.claim(ids[2], "x")
    other.fail(ids[2], "boom", "crashed")
    other.retry(other.get(ids[2]))
    new = max(a.storage_id for a in other.attempts())
    assert other.claim(new, "x")
    other.finish(new, {"val/ppl": 4.0})  # created and finished while mine was not looking
    assert _seen(mine) == _full(mine) and mine.reader.full_reads == full + 1


def test_a_pass_reads_once_until_this_process_writes(write_sweep):
    sweep, mine, other = _stores(write_sweep)
    mine.attempts()
    with mine.reader.pass_snapshot():
        a = mine.attempts()
        other.fail(a[0].storage_id, "boom", "crashed")  # another process: not seen inside the pass
        assert mine.attempts()[0].state == "WAITING"
        assert mine.claim(a[1].storage_id, "me")  # this process writes: the pass reads again
        states = {x.storage_id: x.state for x in mine.attempts()}
        assert states[a[0].storage_id] == "FAIL" and states[a[1].storage_id] == "RUNNING"
    assert mine.attempts()[0].state == "FAIL"  # outside a pass: always current
