"""Hand-made trial records for the table's unit tests: a mini-scale base and a few Table 3 rows.

``build_table`` takes anything with the fields of ``ablate.report.table.TrialLike`` (in a sweep, the
store's ``TrialView``s); these records are plain data with those fields. The end-to-end report tests
(test_report_commands.py) write real trials through ``SweepStore`` instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass(frozen=True)
class TrialResult:
    """A trial as the report reads it (the fields of ablate.report.table.TrialLike)."""

    trial_id: str
    row: str
    group: str
    paper: str | None
    seed: int
    state: str  # done | running | waiting | failed
    overrides: list[str]
    config: dict[str, Any]
    params: int | None
    metrics: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None
    run_dir: str = ""


# A resolved config, reduced to the keys the report reads (the Table 3 columns).
BASE_CONFIG: dict[str, Any] = {
    "model": {
        "n_layers": 3,
        "n_enc_layers": None,
        "n_dec_layers": None,
        "d_model": 64,
        "d_ff": 256,
        "n_heads": 8,
        "d_k": 8,
        "d_v": 8,
        "dropout": 0.1,
        "positional": "sinusoidal",
    },
    "train": {"label_smoothing": 0.1, "max_steps": 300, "seed": 1},
}


def config(**changes: Any) -> dict[str, Any]:
    """BASE_CONFIG with dotted changes: config(**{"model.n_heads": 1})."""
    cfg = copy.deepcopy(BASE_CONFIG)
    for key, value in changes.items():
        section, name = key.split(".")
        cfg[section][name] = value
    return cfg


def trial(
    row: str,
    group: str,
    paper: str | None,
    seed: int = 1,
    state: str = "done",
    ppl: float | None = None,
    bleu: float | None = None,
    params: int | None = 478_208,
    failure: str | None = None,
    **changes: Any,
) -> TrialResult:
    metrics = {} if state != "done" else {k: v for k, v in (("val/ppl", ppl), ("val/bleu", bleu)) if v is not None}
    return TrialResult(
        trial_id=f"{row}-{seed}",
        row=row,
        group=group,
        paper=paper,
        seed=seed,
        state=state,
        overrides=[f"{k}={v}" for k, v in changes.items()],
        config=config(**changes),
        params=params,
        metrics=metrics,
        failure=failure,
        run_dir="",
    )


@pytest.fixture
def make_trial() -> Callable[..., TrialResult]:
    return trial


@pytest.fixture
def snapshot_results() -> list[TrialResult]:
    """Three seeds of base, a row with one seed done / one failed / one running, a waiting row, a
    failed row, a row done once, and a user row with no counterpart in the paper."""
    h1 = {"model.n_heads": 1, "model.d_k": 64, "model.d_v": 64}
    return [
        trial("base", "base", "base", 1, ppl=5.0, bleu=20.0),
        trial("base", "base", "base", 2, ppl=5.2, bleu=20.5),
        trial("base", "base", "base", 3, ppl=5.6, bleu=21.0),
        trial("h=1", "A", "A1", 1, ppl=5.5, bleu=19.0, **h1),
        trial("h=1", "A", "A1", 2, state="failed", failure="loss became NaN at step 120", **h1),
        trial("h=1", "A", "A1", 3, state="running", **h1),
        trial("d_k=2", "B", "B1", 1, state="waiting", params=421_952, **{"model.d_k": 2}),
        trial(
            "N=1",
            "C",
            "C1",
            1,
            state="failed",
            params=244_864,
            failure="killed (SLURM TIMEOUT)",
            **{"model.n_layers": 1},
        ),
        trial("learned pos", "E", "E", 1, ppl=5.1, bleu=20.4, params=510_976, **{"model.positional": "learned"}),
        trial("rope", "E", None, 1, ppl=4.9, bleu=21.0, **{"model.positional": "rope"}),
    ]
