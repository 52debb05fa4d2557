"""The efficiency line at the end of a local sweep: shares of slot time, from the finished trials' timings."""

from __future__ import annotations

from ablate.sweep.efficiency import efficiency_lines


def _trial(train: float, val: float = 2.0, final: float = 3.0, startup: float = 5.0) -> dict:
    return {
        "train_time_s": train,
        "val_time_s": val,
        "eval_time_s": final,
        "startup_s": startup,
        "data_s": 0.5,
        "setup_s": 0.5,
    }


def test_shares_add_up_and_idle_is_the_rest() -> None:
    lines = efficiency_lines([_trial(80.0), _trial(60.0)], wall_s=100.0, slots=2)
    assert lines[0].startswith("efficiency: 75% of slot time in training and evaluation steps (2 slot(s) x 100 s")
    # training 140/200, evaluation 10/200, start-up 10/200, data 1/200, set-up 1/200, the rest 38/200
    assert "training 70%, evaluation 5%, start-up 5%, data 0%, set-up 0%, idle or unfinished trials 19%" in lines[1]
    assert lines[1].endswith("start-up 5.0 s per trial")


def test_nothing_without_a_timed_trial() -> None:
    assert efficiency_lines([], wall_s=10.0, slots=2) == []
    assert efficiency_lines([{"val/ppl": 3.0}], wall_s=10.0, slots=2) == []  # a store written by an older ablate


def test_missing_or_bad_values_count_as_zero() -> None:
    lines = efficiency_lines([{"train_time_s": 50.0, "startup_s": None, "val_time_s": "x"}], wall_s=100.0, slots=1)
    assert "efficiency: 50%" in lines[0] and "idle or unfinished trials 50%" in lines[1]
