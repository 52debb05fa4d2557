"""The trial store: enqueue once, atomic claims, retries as new attempts, reaping; on a SQLite file, a journal
file and a PostgreSQL server (a real one, started by the fixture; skipped where PostgreSQL is absent)."""

from __future__ import annotations

import multiprocessing as mp
import time

import pytest

from ablate.sweep.file.spec import load_sweep
from ablate.sweep.plan import trial_states
from ablate.sweep.store.location import locate
from ablate.sweep.store.state import TrialView, decide
from ablate.sweep.store.store import SweepStore

STORES = ["sqlite", "journal:t.journal", "postgres"]
ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 * (i + 1)}"]} for i in range(6)]


def _sync(path: str, barrier) -> int:
    sweep = load_sweep(path)
    barrier.wait()
    return len(SweepStore.for_sweep(sweep).sync(sweep))


@pytest.mark.integration
@pytest.mark.parametrize("store", STORES)
def test_two_controllers_enqueue_each_trial_once(write_sweep, store_for, store):
    path = write_sweep(rows=ROWS, seeds=[1, 2], store=store_for(store))
    ctx = mp.get_context("spawn")
    barrier = ctx.Manager().Barrier(2)
    with ctx.Pool(2) as pool:
        created = pool.starmap(_sync, [(str(path), barrier)] * 2)
    sweep = load_sweep(path)
    store_ = SweepStore.for_sweep(sweep)
    attempts = store_.attempts()
    assert sorted(created) == [0, 12] and len(attempts) == 12
    assert {a.ablate_id for a in attempts} == {t.trial_id for t in sweep.trials}
    assert store_.sync(sweep) == []  # a third sync adds nothing


@pytest.mark.parametrize("store", STORES)
def test_claim_is_atomic_and_only_the_holder_reenters(write_sweep, store_for, store):
    sweep = load_sweep(write_sweep(store=store_for(store)))
    st = SweepStore.for_sweep(sweep)
    st.sync(sweep)
    (a,) = st.attempts()
    assert st.claim(a.storage_id, "tok-1")
    assert not st.claim(a.storage_id, "tok-2")
    assert st.claim(a.storage_id, "tok-1")  # a requeued SLURM task keeps its token
    st.finish(a.storage_id, {"val/ppl": 3.5, "val/bleu": 20.0, "nested": {"x": 1}})
    done = st.get(a.storage_id)
    assert done.state == "COMPLETE" and done.attrs["metrics"] == {"val/ppl": 3.5, "val/bleu": 20.0}
    assert not st.claim(a.storage_id, "tok-1")
    assert decide(st.by_trial()[a.ablate_id])[0] == "done"
    (view,) = trial_states(st, sweep)
    assert view.state == "done" and view.metrics["val/ppl"] == 3.5 and view.n_attempts == 1


def test_retry_is_a_new_attempt_created_once(write_sweep):
    sweep = load_sweep(write_sweep())
    st = SweepStore.for_sweep(sweep)
    st.sync(sweep)
    (a,) = st.attempts()
    assert st.claim(a.storage_id, "t")
    st.fail(a.storage_id, "boom\nsecond line", "crashed")
    failed = st.get(a.storage_id)
    assert failed.attrs["failure"] == "boom" and decide([failed])[0] == "failed"
    assert st.retry(failed) and not st.retry(failed)
    attempts = st.by_trial()[a.ablate_id]
    assert [(x.attempt, x.state) for x in attempts] == [(0, "FAIL"), (1, "WAITING")]
    assert attempts[1].attrs["run_dir"] == a.attrs["run_dir"] and "token" not in attempts[1].attrs
    view = TrialView.of(sweep.trials[0], attempts)
    assert view.state == "waiting" and view.failure is None and view.deciding is attempts[1]


def test_stale_running_trials_are_reaped_unless_known_alive(write_sweep):
    sweep = load_sweep(write_sweep(rows=ROWS[:2]))
    st = SweepStore.for_sweep(sweep)
    st.sync(sweep)
    a, b = st.attempts()
    for x in (a, b):
        assert st.claim(x.storage_id, "t")
        st.set_attr(x.storage_id, "heartbeat", time.time() - 100)
    assert st.reap(200.0) == []  # within grace
    reaped = st.reap(50.0, alive=lambda x: True if x.storage_id == b.storage_id else None)
    assert [r.storage_id for r in reaped] == [a.storage_id]
    assert reaped[0].state == "FAIL" and reaped[0].kind == "stale" and "no heartbeat" in reaped[0].attrs["failure"]
    assert st.get(b.storage_id).state == "RUNNING"


def test_status_of_a_missing_store_creates_nothing(write_sweep):
    sweep = load_sweep(write_sweep())
    st = SweepStore.for_sweep(sweep)
    assert not st.exists()
    assert not (sweep.path.parent / ".ablate").exists()
    assert locate(sweep).url.endswith("/.ablate/t.db")


@pytest.mark.parametrize("store", STORES)
def test_exists_only_looks(write_sweep, store_for, store):
    """exists() reads the study names and keeps nothing: no connection, no Optuna storage, no lock file,
    whether the study is there or not; the store is opened by what reads it next."""
    sweep = load_sweep(write_sweep(store=store_for(store)))
    first = SweepStore.for_sweep(sweep)
    assert not first.exists()
    SweepStore.for_sweep(sweep).sync(sweep)
    looked = SweepStore.for_sweep(sweep)
    folder = sweep.path.parent
    before = sorted(p.name for p in folder.rglob("*"))
    assert looked.exists() and first.exists()
    for st in (first, looked):
        assert (st._study_id, st._engine, st._storage) == (None, None, None)
    assert sorted(p.name for p in folder.rglob("*")) == before
    assert len(looked.attempts()) == len(sweep.trials)


def _claim(path: str, storage_id: int, token: str, barrier) -> bool:
    st = SweepStore.for_sweep(load_sweep(path))
    st.attempts()  # connect before the race starts
    barrier.wait()
    return st.claim(storage_id, token)


@pytest.mark.integration
@pytest.mark.parametrize("store", STORES)
def test_racing_claims_of_one_trial_have_one_winner(write_sweep, store_for, store):
    path = write_sweep(rows=ROWS[:3], store=store_for(store))
    sweep = load_sweep(path)
    st = SweepStore.for_sweep(sweep)
    st.sync(sweep)
    ctx = mp.get_context("spawn")
    barrier = ctx.Manager().Barrier(4)
    with ctx.Pool(4) as pool:
        for a in st.attempts():
            won = pool.starmap(_claim, [(str(path), a.storage_id, f"tok{i}", barrier) for i in range(4)])
            assert sum(won) == 1, won
            assert st.get(a.storage_id).attrs["token"] == f"tok{won.index(True)}"


def test_trial_states_are_one_view_of_the_attempts(write_sweep):
    sweep = load_sweep(write_sweep(rows=ROWS[:4]))
    st = SweepStore.for_sweep(sweep)
    assert [v.state for v in trial_states(st, sweep)] == ["waiting"] * 4  # no store yet: nothing created
    assert not st.exists()
    st.sync(sweep)
    done, failed, running, _ = (st.by_trial()[t.trial_id][0] for t in sweep.trials)
    for a in (done, failed, running):
        assert st.claim(a.storage_id, "t")
    st.finish(done.storage_id, {"val/ppl": 4.0, "params": 77})
    st.fail(failed.storage_id, "loss became NaN at step 3", "diverged")
    views = trial_states(st, sweep)
    assert [v.state for v in views] == ["done", "failed", "running", "waiting"]
    assert views[0].metrics == {"val/ppl": 4.0, "params": 77} and views[0].params == 77
    assert views[1].failure == "loss became NaN at step 3" and views[1].metrics == {}
    assert views[3].params > 0  # not run yet: the closed form from its config
    assert [v.row for v in views] == ["r0", "r1", "r2", "r3"] and views[2].latest.state == "RUNNING"
