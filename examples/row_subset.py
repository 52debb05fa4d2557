"""A sweep policy in one file: ``subset: {rows: 3, seed: 0}`` runs the first row and a random draw of the others.

A screening pass over a long table: the first row (the base the others are compared with) and ``rows``
of the others drawn at random (seeded, so every command of the sweep draws the same ones). Import it
from a sweep file beside it::

    imports: [row_subset]
    subset: {rows: 3, seed: 0}

It shows the three places a policy owns, all here: its block of the sweep file (read and checked, and
the trials it leaves), its lines under ``ablate status`` and its note under ``ablate table``. Nothing
else in ablate knows it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.file.blocks import BLOCKS, SweepBlock
from ablate.sweep.file.spec import Sweep, row_layers
from ablate.sweep.plan.base import PLANS, Wrapper


def drawn(labels: Sequence[str], spec: Mapping[str, int]) -> list[str]:
    """The rows kept: the first, and ``rows`` of the others drawn with ``seed`` (in the file's order)."""
    others = list(labels[1:])
    keep = set(random.Random(spec["seed"]).sample(others, min(spec["rows"], len(others))))
    return [labels[0], *(label for label in others if label in keep)]


def all_rows(sweep: Sweep) -> list[str]:
    return [label for _, label, _, _ in row_layers(sweep.source)]


@BLOCKS.register("subset")
class SubsetBlock(SweepBlock):
    """subset: {rows, seed}: the first row and a random draw of the others."""

    doc = "{rows: N, seed: S}: the first row and N of the others drawn at random"

    @staticmethod
    def read(where: str, value: Any) -> dict[str, int]:
        if not isinstance(value, Mapping) or set(value) - {"rows", "seed"}:
            raise SweepError(f"{where}: subset must be a mapping {{rows: N, seed: S}}, got {value!r}")
        rows, seed = value.get("rows"), value.get("seed", 0)
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            raise SweepError(f"{where}: subset.rows must be an integer >= 1, got {rows!r}")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise SweepError(f"{where}: subset.seed must be an integer, got {seed!r}")
        return {"rows": rows, "seed": seed}

    @staticmethod
    def build(sweep: Sweep, spec: dict[str, int], grid: Callable[[], Sweep]) -> Sweep:
        full = grid()
        keep = set(drawn(all_rows(full), spec))
        return replace(full, trials=tuple(t for t in full.trials if t.row in keep))


@PLANS.register("subset")
class SubsetPlan(Wrapper):
    """Adds no trial while the sweep runs: it says which rows were drawn."""

    order = 20

    @staticmethod
    def applies(sweep: Sweep) -> bool:
        return "subset" in sweep.blocks

    def _left_out(self) -> list[str]:
        spec = self.sweep.blocks["subset"]
        return [label for label in all_rows(self.sweep) if label not in drawn(all_rows(self.sweep), spec)]

    def status_lines(self, trials: Sequence[Any]) -> list[str]:
        spec, out = self.sweep.blocks["subset"], self._left_out()
        kept = len(all_rows(self.sweep)) - len(out)
        own = f"subset: {kept} row(s) drawn (seed {spec['seed']}); left out: {', '.join(out)}"
        return [*self.inner.status_lines(trials), own]

    def table_notes(self, trials: Sequence[Any]) -> list[str]:
        own = f"rows drawn at random (subset:); not run: {', '.join(self._left_out())}"
        return [*self.inner.table_notes(trials), own]
