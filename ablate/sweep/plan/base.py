"""The one interface of the plan room: what a sweep runs next, and the registry of the policies.

A *plan* decides which trials a sweep has. The grid's are all in the sweep file; a search samples its
trials while it runs; adaptive seeds add seeds to the rows still undecided. The launcher holds one
:class:`~ablate.sweep.plan.plans.SweepPlan` (the plans that apply to the sweep, in ``order``) and
calls it at every controller pass; it never asks which policy it holds. Everything that reads a
sweep's trials (``status``, the table, a resumed controller) sees the trials the plans added through
:meth:`Plan.materialize`, computed from the store alone, so a killed controller loses nothing.

A new policy (say, successive halving over rows) is one file in ``ablate/sweep/plan/``: a subclass of
:class:`Plan` registered in :data:`PLANS`, imported by :mod:`ablate.sweep.plan.plans`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ablate.registry import Registry
from ablate.sweep.file.spec import Sweep, Trial
from ablate.sweep.store.state import Attempt, TrialView

PLANS: Registry = Registry("plan", "what a sweep runs next (the sweep file's blocks choose)")


class Plan:
    """A policy for what to run next; subclasses say when they apply and what they add."""

    order: int = 0  # plans that apply together materialize and step in this order (lowest first)
    settles: bool = False  # wants one more pass after the last trial ends (to tell its result)

    def __init__(self, sweep: Sweep, store: Any) -> None:
        self.sweep, self.store = sweep, store
        self.more = True  # whether a later step may still add trials

    @staticmethod
    def applies(sweep: Sweep) -> bool:
        """Whether this policy runs for ``sweep`` (its sweep file asked for it)."""
        raise NotImplementedError

    @staticmethod
    def materialize(sweep: Sweep, by_trial: Mapping[str, Sequence[Attempt]]) -> Sweep:
        """``sweep`` with the trials this policy added so far, as the store records them."""
        return sweep

    @staticmethod
    def to_add(sweep: Sweep, added: int) -> int:
        """How many trials this policy will still add, ``added`` of its own being in the sweep (for the
        progress line's count and ETA; 0 when it cannot say or adds none)."""
        return 0

    # -- what the commands ask of a sweep's plans before anything runs (class-level: no store needed) --
    @staticmethod
    def notes(sweep: Sweep) -> list[str]:
        """Notes before the sweep runs (its dry run too): something the user may want to change."""
        return []

    @staticmethod
    def detach_problem(sweep: Sweep) -> str | None:
        """Why ``--detach`` cannot run this policy (it needs its controller), or None."""
        return None

    @staticmethod
    def to_prepare(sweep: Sweep, todo: set[str]) -> list[Trial] | None:
        """The trials whose data is prepared before the sweep starts (``todo``: ids still to run);
        None: no opinion (another plan of the sweep says)."""
        return None

    @staticmethod
    def tally(sweep: Sweep) -> tuple[str, ...] | None:
        """The trial states the end-of-sweep tally counts, in order; None: no opinion."""
        return None

    @staticmethod
    def dry_run(sweep: Sweep, as_json: bool) -> int | None:
        """Print this policy's own plan instead of the trial list (its exit code), or None."""
        return None

    @staticmethod
    def dry_run_notes(sweep: Sweep, device_hours: float | None) -> list[str]:
        """Lines after the dry run's trial list (``device_hours``: the list's total)."""
        return []

    @staticmethod
    def status_lines(sweep: Sweep, trials: Sequence[TrialView]) -> list[str]:
        """Lines after ``ablate status``'s table."""
        return []

    def start(self, created: Sequence[Any]) -> list[str]:
        """Called once before the first pass (``created``: the trials the store just made); notes."""
        return []

    def step(self, room: int, trials: Sequence[TrialView]) -> list[str]:
        """One controller pass: add trials (``room``: how many more may run now); notes for the user.
        Sets :attr:`more` and :attr:`sweep` (with the trials it added)."""
        self.more = False
        return []
