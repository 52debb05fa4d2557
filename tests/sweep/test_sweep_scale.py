"""Many trials end to end through the local launcher (the fake trainer: real worker processes,
milliseconds of training each): a sweep of 1,000 trials and a search of 1,000. Every trial runs once,
none twice, and the search never trains more than ``n_trials`` per row. The cost of a controller pass
at this size is measured by benchmarks/bench_controller.py; this checks that nothing breaks or repeats.
"""

from __future__ import annotations

from collections import Counter

import pytest
from sweep_harness import calls

from ablate.cli import main
from ablate.sweep.loader import load_results

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N = 1000
N_SEARCH = 1000
LAUNCHER = {"name": "local", "slots": 4, "poll_s": 0.2}


def _ran_once(results: list) -> None:  # the sweep's N trials
    assert len(results) == N and {r.state for r in results} == {"done"}
    assert len({r.run_dir for r in results}) == N  # no two trials share a run directory
    runs = Counter(len(calls(r.run_dir)) for r in results)
    assert runs == {1: N}, runs  # every trial trained exactly once


def test_a_sweep_of_1000_trials_runs_each_once(write_sweep, fake_trainer, capsys) -> None:
    rows = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 + i}"]} for i in range(10)]
    path = write_sweep(rows=rows, seeds=list(range(1, N // 10 + 1)), launcher=LAUNCHER)
    confirm = ["--max-trials", str(N)]  # over the default limit of 500 trials, on purpose
    assert main(["sweep", str(path), *confirm]) == 0
    _ran_once(load_results(path))
    capsys.readouterr()
    assert main(["sweep", str(path), *confirm]) == 0  # a rerun of the finished sweep launches nothing
    assert "0 new trial(s)" in capsys.readouterr().out
    assert Counter(len(calls(r.run_dir)) for r in load_results(path)) == {1: N}


def test_a_search_of_1000_trials_keeps_n_trials_per_row(write_sweep, fake_trainer) -> None:
    rows = [{"name": f"r{i}", "group": "A"} for i in range(4)]
    search = {
        "metric": "val/ppl",
        "n_trials": N_SEARCH // 4,
        "sampler": "random",
        "params": {"train.lr_factor": {"low": 0.05, "high": 8.0, "log": True}},
    }
    path = write_sweep(rows=rows, launcher=LAUNCHER, search=search)
    assert main(["sweep", str(path)]) == 0
    done = [r for r in load_results(path) if r.state == "done"]
    per_row = Counter(r.row for r in done)
    assert per_row == {f"r{i}": N_SEARCH // 4 for i in range(4)}, per_row  # never more than n_trials per row
    assert len({r.run_dir for r in done}) == N_SEARCH
    assert Counter(len(calls(r.run_dir)) for r in done) == {1: N_SEARCH}  # every sampled trial trained once
    assert main(["sweep", str(path)]) == 0
    assert Counter(r.row for r in load_results(path) if r.state == "done") == per_row  # nothing more
