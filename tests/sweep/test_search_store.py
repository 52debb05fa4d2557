"""Search mode against a real SQLite store, no worker and no training: Searcher.step asks each row's
Optuna study for configurations into the sweep's store, and the tests play the workers (claim, then
finish / prune / fail the attempts it created).

One search is played to the end once, by two controllers stepping in turn (the ``played`` fixture),
and read by several tests: the trial budget, the sampled params in the configs, the results told to
the row studies, the best re-runs, materialize / best_per_row / tuned_views, `ablate status` and
what optuna-dashboard reads. Other tests play short searches of their own: duplicates (Optuna's
GridSampler), ``parallel``, a flipped direction. Every sweep of this module has its own name in one
shared SQLite file (a new Optuna schema costs a second or more of fsyncs on a slow disk).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from optuna.trial import TrialState
from sweep_harness import TINY_EXPERIMENT

from ablate.cli import main
from ablate.errors import SweepError
from ablate.sweep.file.spec import Sweep, load_sweep, trial_id
from ablate.sweep.launch.base import Launcher
from ablate.sweep.plan import trial_states
from ablate.sweep.plan.search import Searcher, materialize, study_name
from ablate.sweep.plan.search_results import best_per_row, tuned_views
from ablate.sweep.store.state import Attempt
from ablate.sweep.store.store import SweepStore

ROWS = [
    {"name": "base", "group": "base", "paper": "base"},
    {"name": "h=1", "group": "A", "paper": "A1", "overrides": ["model.n_heads=1"]},
]
PARAMS = {
    "train.lr_factor": {"low": 0.1, "high": 4.0, "log": True},
    "model.dropout": {"choices": [0.0, 0.1]},
}
GRID = {"model.dropout": {"choices": [0.0, 0.1]}}


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite file for every sweep of this module (each under its own name)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('search-store') / 'searches.db'}"
    optuna.storages.RDBStorage(url)  # the schema, once
    return url


def _sweep(
    folder: Path, name: str, url: str, rows: list[dict[str, Any]] = ROWS, seeds: tuple[int, ...] = (1, 2), **search: Any
) -> Sweep:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "exp.yaml").write_text(yaml.safe_dump(TINY_EXPERIMENT))
    spec = {"metric": "val/ppl", "n_trials": 4, "sampler": "tpe", "params": PARAMS, **search}
    data = {
        "name": name,
        "experiment": "exp.yaml",
        "store": url,
        "seeds": list(seeds),
        "search": spec,
        "launcher": {"name": "local", "slots": 2},
        "wandb": {"mode": "disabled"},
        "rows": rows,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_sweep(path)


@pytest.fixture
def new_sweep(tmp_path: Path, store_url: str, request: pytest.FixtureRequest) -> Callable[..., Sweep]:
    """new_sweep(rows=..., seeds=..., **search) -> a search sweep named after the test, in the shared store."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    return lambda **keys: _sweep(tmp_path, name, store_url, **keys)


def _controller(sweep: Sweep) -> tuple[SweepStore, Searcher]:
    """What `ablate sweep` sets up: its own store connection (synced), its own Searcher."""
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    return store, Searcher(sweep, store)


def _get(config: dict[str, Any], key: str) -> Any:
    return reduce(lambda node, part: node[part], key.split("."), config)


def _ppl(attrs: dict[str, Any]) -> float:
    """A made-up result: best near lr_factor 1, dropout 0.1 a little worse, h=1 worse than base."""
    params = attrs["search"]["params"]
    lr, dropout = params.get("train.lr_factor", 1.0), params["model.dropout"]
    return 10 + abs(math.log(lr)) + 5 * dropout + (attrs["row"] == "h=1")


def _waiting(store: SweepStore, phase: str | None = None) -> list[Attempt]:
    return [a for a in store.attempts() if a.state == "WAITING" and phase in (None, a.attrs["search"]["phase"])]


def _finish(store: SweepStore, attempts: list[Attempt], result: Callable[[dict[str, Any]], float] = _ppl) -> None:
    """Play the workers: claim each attempt, then report its result as the worker does."""
    for a in attempts:
        assert store.claim(a.storage_id, "test-token")
        store.finish(a.storage_id, {"val/ppl": result(a.attrs), "step": 12})


def _row_trials(store: SweepStore, sweep: Sweep, row: str) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name=study_name(sweep.name, row), storage=store.storage).get_trials()


def _of_row(attempts: list[Attempt], row: str, phase: str = "search") -> list[Attempt]:
    return [a for a in attempts if a.attrs["row"] == row and a.attrs["search"]["phase"] == phase]


def _assert_each_trial_once(store: SweepStore) -> None:
    """No ablate trial holds two first attempts (it would be trained twice, or claimed and dropped)."""
    firsts = [a.ablate_id for a in store.attempts() if a.attempt == 0]
    assert len(firsts) == len(set(firsts)), sorted(firsts)


# ----------------------------------------------------------------------------------------------
# One search played to the end by two controllers
# ----------------------------------------------------------------------------------------------


@dataclass
class Played:
    sweep: Sweep
    store: SweepStore
    sizes: list[int] = field(default_factory=list)  # attempts in the store after each step
    notes: list[list[str]] = field(default_factory=list)  # what each step said
    told: dict[str, Any] = field(default_factory=dict)  # ablate id -> (state, value) of its row-study trial
    outcome: dict[str, str] = field(default_factory=dict)  # ablate id -> what the worker did
    more: list[bool] = field(default_factory=list)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, store_url: str) -> Played:
    """2 rows x 4 trials, seeds 1 (search), 2 and 3 (the best re-run); two controllers A and B.

    base: done, pruned, done, done. h=1: done, diverged, crashed then retried and done, running
    while the others are told, then done. Then the best re-runs finish."""
    sweep = _sweep(tmp_path_factory.mktemp("played"), "played", store_url, seeds=(1, 2, 3), n_trials=4)
    (store, a), (store_b, b) = _controller(sweep), _controller(sweep)
    p = Played(sweep, store)

    def step(searcher: Searcher, room: int) -> None:
        answer = searcher.step(room)
        p.notes.append(list(answer.notes))
        p.sizes.append(len(store.attempts()))
        p.more.append(answer.more)

    step(a, 3)  # room limits what one step asks
    step(b, 100)  # the rest of both rows: 8, not 100
    for searcher in (a, b, a):  # large room again and again: nothing more to ask
        step(searcher, 100)
    base, h1 = _of_row(store.attempts(), "base"), _of_row(store.attempts(), "h=1")
    _finish(store, [base[0], base[2], base[3], h1[0]])
    assert store_b.claim(base[1].storage_id, "b")
    store_b.prune(base[1].storage_id, {"val/ppl": 1.0, "step": 3, "pruned_at": 3})  # low, but pruned: never best
    for att, kind in ((h1[1], "diverged"), (h1[2], "crashed")):
        assert store.claim(att.storage_id, "tok")
        store.fail(att.storage_id, "boom", kind)
    assert store.claim(h1[3].storage_id, "tok")
    step(b, 100)  # base is over: its best re-runs; h=1 still has one running and one to retry
    p.told = {t.user_attrs["ablate_id"]: (t.state, t.value) for r in sweep.rows for t in _row_trials(store, sweep, r)}
    p.outcome = {
        base[0].ablate_id: "done",
        base[1].ablate_id: "pruned",
        h1[0].ablate_id: "done",
        h1[1].ablate_id: "diverged",
        h1[2].ablate_id: "crashed",
        h1[3].ablate_id: "running",
    }
    assert store.retry(store.get(h1[2].storage_id))  # what the controller does with a crash
    _finish(store, _waiting(store, "search"))
    store.finish(h1[3].storage_id, {"val/ppl": _ppl(h1[3].attrs), "step": 12})
    step(a, 100)  # h=1 is over
    step(b, 100)  # nothing new, whoever steps
    _finish(store, _waiting(store, "final"))
    step(a, 100)
    return p


def test_two_controllers_never_exceed_n_trials_per_row(played: Played) -> None:
    store, sweep = played.store, played.sweep
    assert played.sizes[:5] == [3, 8, 8, 8, 8]
    assert played.sizes[-1] == 8 + 1 + 4  # + h=1's retry + 2 rows x 2 seeds of best re-runs
    assert played.more == [True, False, False, False, False, False, False, False, False]
    for row in ("base", "h=1"):
        assert len(_row_trials(store, sweep, row)) == 4
        assert len({a.ablate_id for a in _of_row(store.attempts(), row)}) == 4
    _assert_each_trial_once(store)


def test_each_trial_config_carries_its_sampled_params(played: Played) -> None:
    store, sweep = played.store, played.sweep
    by_id = {t.user_attrs["ablate_id"]: t for row in sweep.rows for t in _row_trials(store, sweep, row)}
    search = [a for a in store.attempts() if a.attrs["search"]["phase"] == "search" and a.attempt == 0]
    assert len(search) == 8
    for a in search:
        info, config = a.attrs["search"], a.attrs["config"]
        assert info["study"] == study_name("played", a.attrs["row"])
        assert set(info["params"]) == set(PARAMS)
        for key, value in info["params"].items():
            assert _get(config, key) == value, (key, config)
            assert f"{key}={value}" in a.attrs["overrides"]
        assert 0.1 <= info["params"]["train.lr_factor"] <= 4.0 and info["params"]["model.dropout"] in (0.0, 0.1)
        assert config["train"]["seed"] == 1  # searched at the first seed
        assert _get(config, "model.n_heads") == (1 if a.attrs["row"] == "h=1" else 2)  # the row's own overrides
        assert trial_id(config) == a.ablate_id  # the id is the config's hash, as for a grid trial
        ft = by_id[a.ablate_id]  # the row-study trial and the ablate trial point at each other
        assert (ft.number, ft._trial_id) == (info["number"], info["trial_id"])  # noqa: SLF001
        assert ft.user_attrs["run_dir"] == a.attrs["run_dir"]
        assert ft.params == pytest.approx(info["params"], rel=1e-11)  # the config holds them rounded to 12 digits


def test_results_are_told_to_the_row_study(played: Played) -> None:
    expected = {
        "done": TrialState.COMPLETE,
        "pruned": TrialState.PRUNED,
        "diverged": TrialState.FAIL,
        "crashed": TrialState.RUNNING,
        "running": TrialState.RUNNING,
    }
    # a crash is retried by the controller, so its row-study trial waits for the retry's result
    by_id = {a.ablate_id: a for a in played.store.attempts()}
    for aid, outcome in played.outcome.items():
        state, value = played.told[aid]
        assert state == expected[outcome], (outcome, state)
        if outcome == "done":
            assert value == pytest.approx(_ppl(by_id[aid].attrs))
    # at the end every row-study trial is told: the retried crash and the late one too
    final = {
        ft.user_attrs["ablate_id"]: ft for r in ("base", "h=1") for ft in _row_trials(played.store, played.sweep, r)
    }
    assert [final[aid].state for aid in played.outcome] == [
        TrialState.COMPLETE,
        TrialState.PRUNED,
        TrialState.COMPLETE,
        TrialState.FAIL,
        TrialState.COMPLETE,
        TrialState.COMPLETE,
    ]
    for aid in played.outcome:
        if final[aid].state == TrialState.COMPLETE:
            assert final[aid].value == pytest.approx(_ppl(by_id[aid].attrs))


def test_the_best_reruns_at_the_other_seeds_once(played: Played) -> None:
    store = played.store
    notes = [n for step in played.notes for n in step]
    assert [n.split(":")[0] for n in notes] == ["base", "h=1"]  # base first (h=1 still running), each once
    assert all("search done; best #" in n and n.endswith("re-runs at seeds [2, 3]") for n in notes)
    assert played.notes[5] == [notes[0]] and played.notes[6] == [notes[1]]
    attempts = store.attempts()
    for row in ("base", "h=1"):
        done = [a for a in _of_row(attempts, row) if a.state == "COMPLETE"]
        best = min(done, key=lambda a: _ppl(a.attrs))
        finals = _of_row(attempts, row, "final")
        assert sorted(a.attrs["seed"] for a in finals) == [2, 3]
        for a in finals:
            assert a.state == "COMPLETE" and a.attrs["search"]["params"] == best.attrs["search"]["params"]
            assert a.attrs["search"]["best_of"] == best.attrs["search"]["number"]
            config, best_config = a.attrs["config"], best.attrs["config"]
            assert config["model"] == best_config["model"] and config["train"]["seed"] == a.attrs["seed"]
            assert {**config["train"], "seed": 1} == best_config["train"]  # the best config, another seed


def test_materialize_best_per_row_and_tuned_views(played: Played) -> None:
    sweep, store = played.sweep, played.store
    assert sweep.trials == ()  # the sweep file alone holds no sampled trial
    by_trial = store.by_trial()
    full = materialize(sweep, by_trial)
    assert {t.trial_id for t in full.trials} == set(by_trial) and len(full.trials) == 8 + 4
    assert [t.row for t in full.trials] == ["base"] * 6 + ["h=1"] * 6  # row order
    numbers = [t.search["number"] for t in full.trials if t.search["phase"] == "search"]
    assert numbers == [0, 1, 2, 3] * 2  # each row's trials in the order they were sampled
    assert sorted(t.seed for t in full.trials[:6]) == [1, 1, 1, 1, 2, 3]

    views = trial_states(store, sweep)  # materialized too
    assert [v.trial_id for v in views] == [t.trial_id for t in full.trials]
    assert sorted(v.state for v in views) == ["done"] * 10 + ["failed", "pruned"]
    best = best_per_row(sweep.search, views)
    assert set(best) == {"base", "h=1"}
    counts = {row: (b.trials, b.done, b.pruned, b.running, b.failed) for row, b in best.items()}
    assert counts == {"base": (4, 3, 1, 0, 0), "h=1": (4, 3, 0, 0, 1)}
    for row, rb in best.items():
        done = [v for v in views if v.row == row and v.state == "done" and v.trial.search["phase"] == "search"]
        winner = min(done, key=lambda v: v.metrics["val/ppl"])
        assert rb.best_id == winner.trial_id and rb.best_value == pytest.approx(winner.metrics["val/ppl"])
        assert rb.best_params == winner.trial.search["params"]
    tuned = tuned_views(sweep.search, views)
    assert sorted((v.row, v.seed) for v in tuned) == [("base", s) for s in (1, 2, 3)] + [("h=1", s) for s in (1, 2, 3)]
    assert all(v.trial.search["params"] == best[v.row].best_params for v in tuned)


def test_status_shows_the_best_per_row(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", str(played.sweep.path)]) == 0
    out = capsys.readouterr().out
    assert "search: val/ppl (minimize), 4 trials per row" in out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if "sampled" in ln}
    best = best_per_row(played.sweep.search, trial_states(played.store, played.sweep))
    for row, counts in (
        ("base", "4/4 sampled (3 done, 1 pruned, 0 running)"),
        ("h=1", "4/4 sampled (3 done, 0 pruned, 0 running, 1 failed)"),
    ):
        assert counts in lines[row], lines[row]
        assert f"best {best[row].best_value:.4g} at train.lr_factor=" in lines[row]
        assert lines[row].endswith("best re-run: 2/2 done")


def test_row_studies_read_back_through_optunas_public_api(played: Played, store_url: str) -> None:
    """What optuna-dashboard shows: one study per row, named <sweep>:<row>, with its params."""
    summaries = {s.study_name: s for s in optuna.get_all_study_summaries(storage=store_url)}
    assert {"played", "played:base", "played:h=1"} <= set(summaries)
    assert not any(n.startswith("played:") for n in set(summaries) - {"played:base", "played:h=1"})
    for row in ("base", "h=1"):
        s = summaries[f"played:{row}"]
        assert s.user_attrs["row"] == row and s.user_attrs["sweep"] == "played"
        assert s.user_attrs["metric"] == "val/ppl"
        assert s.user_attrs["params"] == ["train.lr_factor in [0.1, 4.0] log", "model.dropout in [0.0, 0.1]"]
        assert s.direction == optuna.study.StudyDirection.MINIMIZE and s.n_trials == 4
        study = optuna.load_study(study_name=f"played:{row}", storage=store_url)
        assert study.user_attrs["row"] == row
        for t in study.trials:
            assert set(t.params) == set(t.distributions) == set(PARAMS)
            assert t.user_attrs["ablate_id"] in played.store.by_trial()
        complete = study.get_trials(states=(TrialState.COMPLETE,))
        assert len(complete) == 3 and study.best_value == min(t.value for t in complete)
        assert (
            study.best_trial.user_attrs["ablate_id"]
            == best_per_row(played.sweep.search, trial_states(played.store, played.sweep))[row].best_id
        )


# ----------------------------------------------------------------------------------------------
# Short searches of their own
# ----------------------------------------------------------------------------------------------


def test_parallel_caps_a_rows_trials_in_flight(new_sweep: Callable[..., Sweep]) -> None:
    sweep = new_sweep(n_trials=3, parallel=1)
    store, searcher = _controller(sweep)
    assert searcher.step(100).more is True
    assert sorted(a.attrs["row"] for a in _waiting(store)) == ["base", "h=1"]  # one per row in flight
    _finish(store, [a for a in _waiting(store) if a.attrs["row"] == "base"])
    searcher.step(100)
    assert sorted(a.attrs["row"] for a in _waiting(store)) == ["base", "h=1"]
    assert len(_of_row(store.attempts(), "base")) == 2 and len(_of_row(store.attempts(), "h=1")) == 1


@pytest.mark.parametrize("twins", ["running", "finished"])
def test_a_sampled_duplicate_is_linked_not_trained_twice(new_sweep: Callable[..., Sweep], twins: str) -> None:
    """Three draws from two choices repeat one (pigeonhole); a repeat never becomes a second ablate trial,
    whether its twin still runs or finished, and it is told its twin's result."""
    sweep = new_sweep(rows=ROWS[:1], n_trials=3, sampler="random", params=GRID)
    store, searcher = _controller(sweep)
    searcher.step(1)
    if twins == "finished":
        _finish(store, _waiting(store))
    searcher.step(5)
    if twins == "finished":
        _finish(store, _waiting(store))
    searcher.step(5)
    trials = _row_trials(store, sweep, "base")
    assert len(trials) == 3
    ids = {a.ablate_id for a in store.attempts() if a.attrs["search"]["phase"] == "search"}
    assert len(ids) == len({json.dumps(t.params, sort_keys=True) for t in trials}) <= 2
    repeats = [t for t in trials if "same_as" in t.user_attrs]
    assert repeats and all(t.user_attrs["same_as"] == t.user_attrs["ablate_id"] in ids for t in repeats)
    _finish(store, _waiting(store))
    searcher.step(5)  # tells all three: a repeat gets its twin's result
    trials = _row_trials(store, sweep, "base")
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3
    by_id = {a.ablate_id: a for a in store.attempts() if a.attrs["search"]["phase"] == "search"}
    for t in repeats:
        assert trials[t.number].value == pytest.approx(_ppl(by_id[t.user_attrs["ablate_id"]].attrs))
    _assert_each_trial_once(store)


def test_a_duplicate_sampled_within_one_step_is_linked(new_sweep: Callable[..., Sweep]) -> None:
    sweep = new_sweep(rows=ROWS[:1], n_trials=3, sampler="random", params=GRID)
    store, searcher = _controller(sweep)
    searcher.step(10)  # asks all 3 at once; at least one repeats an earlier one of this same step
    assert len(_row_trials(store, sweep, "base")) == 3
    _assert_each_trial_once(store)


def test_a_store_whose_row_study_has_the_other_direction_is_refused(new_sweep: Callable[..., Sweep]) -> None:
    _, searcher = _controller(new_sweep(rows=ROWS[:1], n_trials=2))
    searcher.step(1)
    flipped = new_sweep(rows=ROWS[:1], n_trials=2, metric="val/bleu")  # same name, maximize
    with pytest.raises(SweepError, match=r"search.direction is maximize but the store's study '[a-z0-9-]+:base'"):
        Searcher(flipped, SweepStore.for_sweep(flipped)).step(1)


def test_an_orphan_row_study_trial_does_not_block_the_row(new_sweep: Callable[..., Sweep]) -> None:
    sweep = new_sweep(rows=ROWS[:1], n_trials=2)
    store, searcher = _controller(sweep)
    searcher.step(1)
    optuna.load_study(study_name=study_name(sweep.name, "base"), storage=store.storage).ask()  # the orphan
    for _ in range(3):  # play the controller: step, let the workers finish what it enqueued
        _finish(store, _waiting(store, "search"))
        searcher.step(10)
    assert _waiting(store, "final") != []  # the row's search ended and its best re-runs


def test_a_grid_search_tries_every_grid_point_once(new_sweep: Callable[..., Sweep]) -> None:
    sweep = new_sweep(
        rows=ROWS[:1], n_trials=4, sampler="grid", params={"model.dropout": {"choices": [0.0, 0.1, 0.2, 0.3]}}
    )
    store, searcher = _controller(sweep)
    for _ in range(4):  # one at a time, each finished before the next ask
        searcher.step(1)
        _finish(store, _waiting(store, "search"))
    values = sorted(ft.params["model.dropout"] for ft in _row_trials(store, sweep, "base"))
    assert values == [0.0, 0.1, 0.2, 0.3]


class _Instant(Launcher):
    """Each attempt it starts ends before the loop reads the store again, as a SLURM job may end
    between the pass that told results and the pass that finds nothing left to do."""

    def start(self, waiting: list[Attempt]) -> None:
        _finish(self.store, waiting)


def test_a_trial_that_ends_after_the_tell_is_still_told(new_sweep: Callable[..., Sweep]) -> None:
    sweep = new_sweep(n_trials=2, seeds=(1, 2), sampler="random")
    store = SweepStore.for_sweep(sweep)
    launcher = _Instant(sweep, store)
    launcher.run()
    for row in sweep.rows:
        trials = _row_trials(store, sweep, row)
        assert len(trials) == 2 and {t.state for t in trials} == {TrialState.COMPLETE}, [t.state for t in trials]
    finals = [a for a in store.attempts() if a.attrs["search"]["phase"] == "final"]
    assert len(finals) == 2 and {a.state for a in finals} == {"COMPLETE"}, [a.state for a in finals]


def test_the_controllers_view_counts_the_trials_a_search_will_still_sample(
    new_sweep: Callable[..., Sweep], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The progress view knows no plan: the controller hands it its plan's count, which its heading shows."""
    from ablate.sweep.launch import base
    from ablate.sweep.launch.local import LocalLauncher
    from ablate.sweep.plan.plans import plan_of

    views: list[Any] = []

    class Recording(base.ProgressView):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, live=False, **kwargs)
            self.every_s = 0.0
            views.append(self)

    sweep = new_sweep(n_trials=3)
    launcher = LocalLauncher(sweep, SweepStore.for_sweep(sweep))
    monkeypatch.setattr(base, "ProgressView", Recording)
    monkeypatch.setattr(launcher, "_loop", lambda detach, view, stop: view.update(launcher.trials()))
    launcher.run()
    assert views and views[0].to_add(0) == plan_of(sweep).to_add(0) == 6  # 3 trials a row, 2 rows, none sampled
    assert "(6 to sample)" in capsys.readouterr().out
