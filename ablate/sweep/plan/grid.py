"""The grid: every trial is in the sweep file (rows x seeds); nothing is added while the sweep runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ablate.sweep.file.spec import Sweep
from ablate.sweep.plan.base import PLANS, Plan, Step


@PLANS.register("grid")
class GridPlan(Plan):
    """Every row at every seed of the sweep file (the base plan of a sweep without a ``search:`` block)."""

    @staticmethod
    def applies(sweep: Sweep) -> bool:
        return sweep.search is None

    def tally(self) -> tuple[str, ...]:
        return ("done", "failed", "waiting", "running")

    def start(self, created: Sequence[Any]) -> Step:
        notes = (f"store {self.store.url}: {len(created)} new trial(s), {len(self.sweep.trials)} in the sweep",)
        return Step(self.sweep, notes)
