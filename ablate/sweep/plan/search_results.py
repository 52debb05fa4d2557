"""Reading a search: each row's best configuration, and the row at it (the best trial and its re-runs).

Pure functions of the trial views (:mod:`ablate.sweep.store.state`) and the search spec; the report's
tuned table and ``ablate status`` read a search through them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ablate.sweep.file.search_spec import SearchSpec
from ablate.sweep.store.state import TrialView


def _value(v: TrialView, metric: str) -> float | None:
    value = v.metrics.get(metric)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


@dataclass
class RowBest:
    row: str
    trials: int  # search trials of the row (not the final re-runs)
    done: int
    pruned: int
    running: int
    failed: int
    best_value: float | None
    best_params: dict[str, Any]
    best_id: str | None


def best_per_row(spec: SearchSpec, views: Sequence[TrialView]) -> dict[str, RowBest]:
    """Per row: counts of its search trials and its best one (by the search metric and direction)."""
    out: dict[str, RowBest] = {}
    for v in views:
        if v.trial.search.get("phase") != "search":
            continue
        rb = out.setdefault(v.row, RowBest(v.row, 0, 0, 0, 0, 0, None, {}, None))
        rb.trials += 1
        key = {"done": "done", "pruned": "pruned", "running": "running", "waiting": "running"}.get(v.state, "failed")
        setattr(rb, key, getattr(rb, key) + 1)
        value = _value(v, spec.metric) if v.state == "done" else None
        if value is None:
            continue
        lower = spec.direction == "minimize"
        if rb.best_value is None or (value < rb.best_value if lower else value > rb.best_value):
            rb.best_value, rb.best_params, rb.best_id = value, dict(v.trial.search.get("params") or {}), v.trial_id
    return out


def tuned_views(spec: SearchSpec, views: Sequence[TrialView]) -> list[TrialView]:
    """Each row at its best configuration: the best search trial and its re-runs at other seeds."""
    best = best_per_row(spec, views)
    out = []
    for v in views:
        rb = best.get(v.row)
        if rb is None or rb.best_id is None:
            continue
        if v.trial_id == rb.best_id or (
            v.trial.search.get("phase") == "final" and v.trial.search.get("params") == rb.best_params
        ):
            out.append(v)
    return out
