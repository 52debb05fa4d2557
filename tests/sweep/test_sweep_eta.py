"""The whole sweep's ETA weighs each waiting trial by the dry run's estimate of its row, scaled by how the
trials so far compared with their estimates: a sweep starts its longest trials first, so the mean of the
first ones would promise hours for a sweep of minutes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ablate.sweep.file.spec import load_sweep
from ablate.sweep.launch.progress import TrialLine, row_costs, sweep_eta

ROOT = Path(__file__).resolve().parents[2]


def line(row: str, state: str, **kw: float) -> TrialLine:
    base = dict(seed=1, attempts=1, step=None, max_steps=None, ppl=None, failure=None, elapsed_s=None, eta_s=None)
    return TrialLine(**{**base, "row": row, "state": state, **kw})


def test_waiting_trials_take_their_rows_estimate_scaled_by_the_measured_rate() -> None:
    cost = {"big": 800.0, "small": 80.0}
    lines = [line("big", "done", elapsed_s=1000.0), *(line("small", "waiting") for _ in range(10))]
    # measured 1.25 x the estimate: each small trial 100 s, not the 1,000 s of the one finished so far
    assert sweep_eta(lines, cost=cost) == pytest.approx(10 * 100)
    assert sweep_eta(lines) == pytest.approx(10 * 1000)  # without estimates: the mean, as before


def test_a_row_without_an_estimate_takes_the_mean_and_a_running_one_its_scaled_estimate() -> None:
    cost = {"big": 800.0, "small": 80.0}
    lines = [
        line("big", "done", elapsed_s=1000.0),
        line("small", "running", elapsed_s=30.0),  # no ETA of its own yet: 100 s expected, 30 gone
        line("other", "waiting"),  # no estimate: the mean measured span, 1,000 s
    ]
    assert sweep_eta(lines, cost=cost) == pytest.approx(70 + 1000)


def test_the_mini_table3_rows_are_estimated_longest_first_as_they_run() -> None:
    costs = row_costs(load_sweep(ROOT / "sweeps" / "table3-mini.yaml"))
    assert len(costs) == 20
    assert costs["big"] > costs["d_model=128"] > costs["base"] > costs["N=1"] > 0
