"""The plans a sweep runs under, as one: what the launcher holds and what every reader of trials uses.

:class:`SweepPlan` composes the registered plans that apply to a sweep (the grid or a search, then
adaptive seeds), in their ``order``; :func:`trial_states` is the one view of a sweep's trials with
what its plans added (``status``, the table, the launcher all read it); :func:`attempt_callbacks` is what a worker asks
of the plans (a search trial's pruner). The other functions are what the commands ask of a sweep's
plans before anything runs (notes, ``--detach``, data to prepare, the dry run, the status lines): the
commands never ask which policy a sweep has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ablate.sweep.file.spec import Sweep, Trial
from ablate.sweep.plan.adaptive import SeedsPlan
from ablate.sweep.plan.base import PLANS, Plan
from ablate.sweep.plan.grid import GridPlan
from ablate.sweep.plan.search import pruning_spec
from ablate.sweep.plan.search_plan import SearchPlan
from ablate.sweep.store.state import Attempt, TrialView, views

BUILT_IN = (GridPlan, SearchPlan, SeedsPlan)  # registered in PLANS as they are imported here


def plan_classes(sweep: Sweep) -> list[type[Plan]]:
    """The registered plans that apply to ``sweep``, in the order they materialize and step."""
    found = [PLANS.get(name) for name in PLANS.names()]
    return sorted((cls for cls in found if cls.applies(sweep)), key=lambda cls: cls.order)


def materialize(sweep: Sweep, by_trial: Mapping[str, Sequence[Attempt]]) -> Sweep:
    """``sweep`` with every trial its plans added so far (from the store's attempts alone)."""
    for cls in plan_classes(sweep):
        sweep = cls.materialize(sweep, by_trial)
    return sweep


def notes(sweep: Sweep) -> list[str]:
    """Notes of the sweep's plans before it runs (its dry run too)."""
    return [line for cls in plan_classes(sweep) for line in cls.notes(sweep)]


def detach_problem(sweep: Sweep) -> str | None:
    """Why ``--detach`` cannot run the sweep's plans, or None."""
    return next((why for cls in plan_classes(sweep) if (why := cls.detach_problem(sweep))), None)


def to_prepare(sweep: Sweep, todo: set[str]) -> list[Trial]:
    """The trials whose data is prepared before the sweep starts (``todo``: ids still to run)."""
    return next((found for cls in plan_classes(sweep) if (found := cls.to_prepare(sweep, todo)) is not None), [])


def tally(sweep: Sweep) -> tuple[str, ...]:
    """The states the end-of-sweep tally counts, in order."""
    return next((found for cls in plan_classes(sweep) if (found := cls.tally(sweep))), ("done", "failed"))


def dry_run(sweep: Sweep, as_json: bool) -> int | None:
    """A plan's own dry run (a search's bounds), its exit code; None: the trial list is the plan."""
    return next((code for cls in plan_classes(sweep) if (code := cls.dry_run(sweep, as_json)) is not None), None)


def dry_run_notes(sweep: Sweep, device_hours: float | None) -> list[str]:
    return [line for cls in plan_classes(sweep) for line in cls.dry_run_notes(sweep, device_hours)]


def status_lines(sweep: Sweep, trials: Sequence[TrialView]) -> list[str]:
    return [line for cls in plan_classes(sweep) for line in cls.status_lines(sweep, trials)]


def to_add(sweep: Sweep, added: int) -> int:
    """Trials the sweep's plans will still add (``added``: the sampled ones already in the sweep)."""
    return sum(cls.to_add(sweep, added) for cls in plan_classes(sweep))


def trial_states(store: Any, sweep: Sweep) -> list[TrialView]:
    """Every trial of the sweep with its state (read-only: no store yet = all waiting), the trials its
    plans added included (a search's samples, adaptive seeds)."""
    attempts = store.by_trial() if store.exists() else {}
    return store.reader.memo("views", sweep, lambda: views(materialize(sweep, attempts), attempts))


def attempt_callbacks(store: Any, attrs: Mapping[str, Any]) -> list[Any]:
    """Trainer callbacks the plans give an attempt as it trains: a search trial's pruner. Every other
    attempt gets none, decided without importing Lightning (2-3 CPU-seconds a worker)."""
    if pruning_spec(store.study_attrs(), attrs) is None:
        return []
    from ablate.sweep.plan.pruning import pruning_callbacks  # imports Lightning

    return pruning_callbacks(store, attrs)


class SweepPlan:
    """The plans of one sweep as one plan: the launcher's only view of what runs next."""

    def __init__(self, sweep: Sweep, store: Any) -> None:
        self.sweep = sweep
        self.plans = [cls(sweep, store) for cls in plan_classes(sweep)]
        self.settles = any(p.settles for p in self.plans)

    def start(self, created: Sequence[Any]) -> list[str]:
        notes = []
        for p in self.plans:
            notes += p.start(created)
            self.sweep = p.sweep
        return notes

    def step(self, room: int, read: Callable[[Sweep], Sequence[TrialView]]) -> tuple[list[str], bool]:
        """One pass: each plan in turn until one may still add trials; (notes, whether more may come).
        ``read`` gives the trials of a sweep as the store has them now (one read a pass, memoized)."""
        notes: list[str] = []
        for p in self.plans:
            notes += p.step(room, read(self.sweep))
            self.sweep = p.sweep
            if p.more:
                return notes, True
        return notes, False
