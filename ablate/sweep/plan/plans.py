"""A sweep's plan, composed: what the launcher holds and what every reader of trials uses.

:func:`plan_of` builds the plan of a sweep: its base plan (the grid, or a search) inside the wrappers
that apply (adaptive seeds, a plugin's), innermost first. It runs once per command: the opened sweep
holds the plan (:class:`ablate.sweep.loader.OpenSweep`), and the commands, the dry run, the table and
the launcher ask that one object (notes, ``--detach``, data to prepare, the dry run, the status lines,
the table's notes, every controller pass) and never which policy a sweep has. :func:`trial_states` is
the one view of a sweep's trials with what its plans added (``status``, the table, the launcher all
read it); :func:`attempt_callbacks` is what a worker asks of the plans (a search trial's pruner).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.file.spec import Sweep
from ablate.sweep.plan.adaptive import SeedsPlan
from ablate.sweep.plan.base import PLANS, Plan, Wrapper
from ablate.sweep.plan.grid import GridPlan
from ablate.sweep.plan.search import pruning_spec
from ablate.sweep.plan.search_plan import SearchPlan
from ablate.sweep.store.state import TrialView, views

BUILT_IN = (GridPlan, SearchPlan, SeedsPlan)  # registered in PLANS as they are imported here


def plan_of(sweep: Sweep, store: Any = None) -> Plan:
    """The plan of ``sweep``: the one base plan that applies, inside every wrapper that applies (in their
    ``order``). ``store``: None when the plan is only asked before anything runs."""
    found = [PLANS.get(name) for name in PLANS.names()]
    bases = [cls for cls in found if not issubclass(cls, Wrapper) and cls.applies(sweep)]
    if len(bases) != 1:
        names = ", ".join(cls.__name__ for cls in bases) or "none"
        raise SweepError(f"{sweep.path}: one base plan (grid or search) must apply to a sweep; found {names}")
    plan = bases[0](sweep, store)
    for cls in sorted((c for c in found if issubclass(c, Wrapper) and c.applies(sweep)), key=lambda c: c.order):
        plan = cls(sweep, store, inner=plan)
    return plan


def trial_states(store: Any, sweep: Sweep, plan: Plan | None = None) -> list[TrialView]:
    """Every trial of the sweep with its state (read-only: no store yet = all waiting), the trials its
    plans added included (a search's samples, adaptive seeds). ``plan``: the sweep's plan where the
    caller holds it (the opened sweep's, the launcher's); None builds one, for a caller with a bare sweep."""
    attempts = store.by_trial() if store.exists() else {}

    def build() -> list[TrialView]:
        return views((plan or plan_of(sweep)).materialize(sweep, attempts), attempts)

    return store.reader.memo("views", sweep, build)


def attempt_callbacks(store: Any, attrs: Mapping[str, Any]) -> list[Any]:
    """Trainer callbacks the plans give an attempt as it trains: a search trial's pruner. Every other
    attempt gets none, decided without importing Lightning (2-3 CPU-seconds a worker)."""
    if pruning_spec(store.study_attrs(), attrs) is None:
        return []
    from ablate.sweep.plan.pruning import pruning_callbacks  # imports Lightning

    return pruning_callbacks(store, attrs)
