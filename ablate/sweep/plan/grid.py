"""The grid: every trial is in the sweep file (rows x seeds); nothing is added while the sweep runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ablate.sweep.file.spec import Sweep, Trial
from ablate.sweep.plan.base import PLANS, Plan


@PLANS.register("grid")
class GridPlan(Plan):
    """Every row at every seed of the sweep file (the default: no ``search:`` block)."""

    @staticmethod
    def applies(sweep: Sweep) -> bool:
        return sweep.search is None

    @staticmethod
    def to_prepare(sweep: Sweep, todo: set[str]) -> list[Trial]:
        return [t for t in sweep.trials if t.trial_id in todo]

    @staticmethod
    def tally(sweep: Sweep) -> tuple[str, ...]:
        return ("done", "failed", "waiting", "running")

    def start(self, created: Sequence[Any]) -> list[str]:
        return [f"store {self.store.url}: {len(created)} new trial(s), {len(self.sweep.trials)} in the sweep"]
