"""``seeds: {start: 2, max: 8, until: decided}``: the block of an adaptive-seeds sweep, checked. Pure.

As a mapping, ``seeds:`` is this block (every row starts at seeds 1..start); as a list, the file's own
seeds. What the controller does with it: :mod:`ablate.sweep.plan.adaptive`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ablate.config.schema import SEED_MAX
from ablate.errors import SweepError
from ablate.sweep.file.blocks import BLOCKS, SweepBlock

UNTIL = ("decided",)


@dataclass(frozen=True)
class AdaptiveSeeds:
    """``seeds: {start, max, until}`` of a sweep file."""

    start: int  # seeds 1..start run first
    max: int  # no row runs more seeds than this
    until: str = "decided"

    @property
    def looks(self) -> int:
        """How many times the controller may decide: after start, start + 1, ..., max seeds."""
        return self.max - self.start + 1

    def level(self, alpha: float) -> float:
        """The level of each look's tests: alpha spread evenly over the possible looks."""
        return alpha / self.looks

    def record(self) -> dict[str, Any]:
        return {"start": self.start, "max": self.max, "until": self.until}


def read_adaptive(where: str, value: Mapping[str, Any]) -> AdaptiveSeeds:
    """Check ``seeds: {start: 2, max: 8, until: decided}``; one SweepError line per mistake."""
    unknown = sorted(set(value) - {"start", "max", "until"})
    if unknown:
        raise SweepError(f"{where}: seeds: unknown key(s) {', '.join(unknown)} (seeds takes start, max, until)")
    start, most = value.get("start", 2), value.get("max")
    for key, n in (("start", start), ("max", most)):
        if not isinstance(n, int) or isinstance(n, bool):
            raise SweepError(f"{where}: seeds.{key} must be an integer, got {n!r} (e.g. seeds: {{start: 2, max: 8}})")
    if start < 2 or most <= start:
        raise SweepError(
            f"{where}: seeds: need 2 <= start < max (a test over seeds needs 2 of them), got start={start}, max={most}"
        )
    if most > SEED_MAX:  # seeds 1..max: numpy and torch take none past it
        raise SweepError(
            f"{where}: seeds.max must be at most {SEED_MAX:,} (numpy and torch's largest seed), got {most}"
        )
    until = value.get("until", "decided")
    if until not in UNTIL:
        raise SweepError(f"{where}: seeds.until must be {' or '.join(UNTIL)}, got {until!r}")
    return AdaptiveSeeds(start=start, max=most, until=until)


@BLOCKS.register("seeds")
class SeedsBlock(SweepBlock):
    """seeds: {start, max}: more seeds only while a row is undecided."""

    doc = "{start, max, until: decided}: seeds 1..start first, more only while a row is undecided"

    @staticmethod
    def claims(value: Any) -> bool:
        return isinstance(value, Mapping)

    @staticmethod
    def read(where: str, value: Mapping[str, Any]) -> AdaptiveSeeds:
        return read_adaptive(where, value)

    @staticmethod
    def seeds(spec: AdaptiveSeeds) -> tuple[int, ...]:
        return tuple(range(1, spec.start + 1))
