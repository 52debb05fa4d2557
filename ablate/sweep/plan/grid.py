"""The grid: every trial is in the sweep file (rows x seeds); nothing is added while the sweep runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ablate.sweep.file.spec import Sweep
from ablate.sweep.plan.base import PLANS, Plan


@PLANS.register("grid")
class GridPlan(Plan):
    """Every row at every seed of the sweep file (the default: no ``search:`` block)."""

    @staticmethod
    def applies(sweep: Sweep) -> bool:
        return sweep.search is None

    def start(self, created: Sequence[Any]) -> list[str]:
        return [f"store {self.store.url}: {len(created)} new trial(s), {len(self.sweep.trials)} in the sweep"]
