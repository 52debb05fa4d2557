"""Many trials end to end through the local launcher (the fake trainer: real worker processes,
milliseconds of training each). Every trial runs once, none twice, and the search never trains more
than ``n_trials`` per row. The cost of a controller pass at this size is measured by
benchmarks/bench_controller.py; this checks that nothing breaks or repeats.

The integration tier runs a search of 200 trials end to end (concurrent samplers over four rows),
a 1,000-trial grid's dry run (the ``--max-trials`` rule) and a grid of 150 trials to the end and
rerun. The same two runs at 1,000 trials are marked ``scale``: ``pytest -m scale`` runs them (about
7 and 9 minutes on 2 cores, alone; see docs/ci.md). Each stand-in trial is a worker process that
costs about 0.7 CPU-s, mostly importing Optuna's storage, so a run of N trials is CPU-bound at N x 0.35 s
on 2 cores: the integration tier cannot afford 1,000 beside everything else it runs.
"""

from __future__ import annotations

from collections import Counter

import pytest
from sweep_harness import calls

from ablate.cli import main
from ablate.sweep.loader import load_results
from ablate.sweep.size import MAX_TRIALS

N_SEARCH = 200  # the search in the integration tier: n_trials per row, each once, a rerun adds nothing
N_GRID = 150  # the grid in the integration tier: every trial once, and a rerun launches nothing
N_FULL = 1000  # the grid under the `scale` marker, and the size of the dry run's --max-trials check
LAUNCHER = {"name": "local", "slots": 4, "poll_s": 0.2}


def _grid(write_sweep, n: int):
    rows = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 + i}"]} for i in range(10)]
    return write_sweep(rows=rows, seeds=list(range(1, n // 10 + 1)), launcher=LAUNCHER)


def _runs_each_once_and_a_rerun_launches_nothing(path, n: int, capsys) -> None:
    confirm = ["--max-trials", str(n)]
    assert main(["sweep", str(path), *confirm]) == 0
    results = load_results(path)
    assert len(results) == n and {r.state for r in results} == {"done"}
    assert len({r.run_dir for r in results}) == n  # no two trials share a run directory
    runs = Counter(len(calls(r.run_dir)) for r in results)
    assert runs == {1: n}, runs  # every trial trained exactly once
    capsys.readouterr()
    assert main(["sweep", str(path), *confirm]) == 0  # a rerun of the finished sweep launches nothing
    assert "0 new trial(s)" in capsys.readouterr().out
    assert Counter(len(calls(r.run_dir)) for r in load_results(path)) == {1: n}


def test_a_grid_over_the_limit_needs_max_trials_at_the_dry_run(write_sweep, capsys) -> None:
    assert N_FULL > MAX_TRIALS  # the check below is about a sweep over the default limit
    path = _grid(write_sweep, N_FULL)
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert f"--max-trials {N_FULL}" in capsys.readouterr().err
    assert main(["sweep", str(path), "--dry-run", "--max-trials", str(N_FULL)]) == 0
    assert f"{N_FULL} trials, 10 rows" in capsys.readouterr().out
    assert not (path.parent / "runs").exists()  # nothing ran


@pytest.mark.integration
def test_a_sweep_of_150_trials_runs_each_once(write_sweep, fake_trainer, capsys) -> None:
    _runs_each_once_and_a_rerun_launches_nothing(_grid(write_sweep, N_GRID), N_GRID, capsys)


@pytest.mark.scale
def test_a_sweep_of_1000_trials_runs_each_once(write_sweep, fake_trainer, capsys) -> None:
    _runs_each_once_and_a_rerun_launches_nothing(_grid(write_sweep, N_FULL), N_FULL, capsys)


def _search_keeps_n_trials_per_row(write_sweep, n: int) -> None:
    rows = [{"name": f"r{i}", "group": "A"} for i in range(4)]
    search = {
        "metric": "val/ppl",
        "n_trials": n // 4,
        "sampler": "random",
        "params": {"train.lr_factor": {"low": 0.05, "high": 8.0, "log": True}},
    }
    path = write_sweep(rows=rows, launcher=LAUNCHER, search=search)
    assert main(["sweep", str(path)]) == 0
    done = [r for r in load_results(path) if r.state == "done"]
    per_row = Counter(r.row for r in done)
    assert per_row == {f"r{i}": n // 4 for i in range(4)}, per_row  # never more than n_trials per row
    assert len({r.run_dir for r in done}) == n
    assert Counter(len(calls(r.run_dir)) for r in done) == {1: n}  # every sampled trial trained once
    assert main(["sweep", str(path)]) == 0
    assert Counter(r.row for r in load_results(path) if r.state == "done") == per_row  # nothing more


@pytest.mark.integration
@pytest.mark.slow
def test_a_search_of_200_trials_keeps_n_trials_per_row(write_sweep, fake_trainer) -> None:
    _search_keeps_n_trials_per_row(write_sweep, N_SEARCH)


@pytest.mark.scale
def test_a_search_of_1000_trials_keeps_n_trials_per_row(write_sweep, fake_trainer) -> None:
    _search_keeps_n_trials_per_row(write_sweep, N_FULL)
