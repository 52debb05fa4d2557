"""The one interface of the plan room: what a sweep runs next, and the registry of the policies.

A *plan* decides which trials a sweep has. The grid's are all in the sweep file; a search samples its
trials while it runs; adaptive seeds add seeds to the rows still undecided. A sweep's plan is one
*base* plan (the grid, or a search: exactly one applies) inside the *wrappers* that apply (adaptive
seeds; a plugin's), innermost first by ``order``: :func:`ablate.sweep.plan.plans.plan_of` builds it,
once per command (the opened sweep holds it, :class:`ablate.sweep.loader.OpenSweep`).
The launcher holds that one plan and calls it at every controller pass; neither it nor a command asks
which policy it holds. Every answer is a return value; how a wrapper combines its own answer with the
inner plan's is written on each hook of :class:`Wrapper` (its default is that rule).

A plan's ``sweep`` is the one it was built for and never changes: the sweep that grows as trials are
added travels in the :class:`Step` alone. The launcher keeps the last Step and hands its sweep to the
next :meth:`Plan.step`; :meth:`Plan.materialize` is given the sweep to add to. So every command that
shares the plan (the dry run, ``status``, the table, the launcher) reads the same file's answers.

Everything that reads a sweep's trials (``status``, the table, a resumed controller) sees the trials
the plans added through :meth:`Plan.materialize`, computed from the store alone, so a killed
controller loses nothing.

A new policy is one file: its block of the sweep file (:mod:`ablate.sweep.file.blocks`), its plan (a
:class:`Wrapper` or :class:`Plan` registered in :data:`PLANS`), imported through the sweep file's
``imports:`` (a plugin) or by :mod:`ablate.sweep.plan.plans` (a built-in).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ablate.registry import Registry
from ablate.sweep.file.spec import Sweep, Trial
from ablate.sweep.store.state import Attempt, TrialView

PLANS: Registry = Registry("plan", "what a sweep runs next (the sweep file's blocks choose)")

Read = Callable[[Sweep], Sequence[TrialView]]  # the trials of a sweep as the store has them now


@dataclass(frozen=True)
class Step:
    """A plan's answer at the start of a sweep or at one controller pass."""

    sweep: Sweep  # the sweep with every trial the plan has added so far (its one carrier)
    notes: tuple[str, ...] = ()  # lines for the user
    more: bool = False  # whether a later pass may still add trials


class Plan:
    """A base plan (the grid, a search): the trials of the sweep's rows. ``store`` is None when only asked
    before anything runs (notes, the dry run, status lines) by a caller that has no store; ``sweep`` is
    the sweep it was built for, never reassigned (the growing sweep travels in :class:`Step`)."""

    order: int = 0  # wrappers apply in this order, innermost (lowest) first
    settles: bool = False  # wants one more pass after the last trial ends (to tell its result)

    def __init__(self, sweep: Sweep, store: Any = None) -> None:
        self.sweep, self.store = sweep, store

    @staticmethod
    def applies(sweep: Sweep) -> bool:
        """Whether this policy runs for ``sweep`` (its sweep file asked for it)."""
        raise NotImplementedError

    def materialize(self, sweep: Sweep, by_trial: Mapping[str, Sequence[Attempt]]) -> Sweep:
        """``sweep`` with the trials this plan added so far, as the store records them."""
        return sweep

    def to_add(self, added: int) -> int:
        """How many trials the plan will still add, ``added`` sampled ones being in the sweep (the progress
        line's count and ETA; 0 when it cannot say or adds none)."""
        return 0

    def notes(self) -> list[str]:
        """Notes before the sweep runs (its dry run too): something the user may want to change."""
        return []

    def detach_problem(self) -> str | None:
        """Why ``--detach`` cannot run this plan (it needs its controller), or None."""
        return None

    def to_prepare(self, todo: set[str]) -> list[Trial]:
        """The trials whose data is prepared before the sweep starts (``todo``: ids still to run)."""
        return [t for t in self.sweep.shapes if t.trial_id in todo]

    def tally(self) -> tuple[str, ...]:
        """The trial states the end-of-sweep tally counts, in order."""
        return ("done", "failed")

    def dry_run(self, as_json: bool) -> int | None:
        """Print the plan's own dry run instead of the trial list (its exit code), or None."""
        return None

    def dry_run_notes(self, device_hours: float | None) -> list[str]:
        """Lines after the dry run's trial list (``device_hours``: the list's total)."""
        return []

    def status_lines(self, trials: Sequence[TrialView]) -> list[str]:
        """Lines after ``ablate status``'s table."""
        return []

    def table_notes(self, trials: Sequence[TrialView]) -> list[str]:
        """Lines under ``ablate table``'s table (every format that has notes)."""
        return []

    def start(self, created: Sequence[Any]) -> Step:
        """Once before the first pass (``created``: the trials the store just made)."""
        return Step(self.sweep)

    def step(self, sweep: Sweep, room: int, read: Read) -> Step:
        """One controller pass: add trials (``room``: how many more may run now) to ``sweep``, the sweep of
        the last Step. A plan that adds none answers its own sweep."""
        return Step(self.sweep)


class Wrapper(Plan):
    """A plan around another (``inner``): adaptive seeds around the grid or a search, a plugin's policy.
    Each hook below answers with the inner plan's answer combined with the wrapper's own by the rule its
    docstring states; a wrapper overrides the hooks where it has something to add."""

    order = 10

    def __init__(self, sweep: Sweep, store: Any = None, *, inner: Plan) -> None:
        super().__init__(sweep, store)
        self.inner = inner
        self.settles = type(self).settles or inner.settles

    def materialize(self, sweep: Sweep, by_trial: Mapping[str, Sequence[Attempt]]) -> Sweep:
        """Chained: the inner plan's sweep, then the wrapper's trials on it."""
        return self.inner.materialize(sweep, by_trial)

    def to_add(self, added: int) -> int:
        """Summed: the inner plan's count plus the wrapper's."""
        return self.inner.to_add(added)

    def notes(self) -> list[str]:
        """Concatenated: the inner plan's, then the wrapper's."""
        return self.inner.notes()

    def detach_problem(self) -> str | None:
        """First answer: the inner plan's, else the wrapper's."""
        return self.inner.detach_problem()

    def to_prepare(self, todo: set[str]) -> list[Trial]:
        """The inner plan's (it knows the shapes of the trials to come)."""
        return self.inner.to_prepare(todo)

    def tally(self) -> tuple[str, ...]:
        """The inner plan's."""
        return self.inner.tally()

    def dry_run(self, as_json: bool) -> int | None:
        """The inner plan's."""
        return self.inner.dry_run(as_json)

    def dry_run_notes(self, device_hours: float | None) -> list[str]:
        """Concatenated: the inner plan's, then the wrapper's."""
        return self.inner.dry_run_notes(device_hours)

    def status_lines(self, trials: Sequence[TrialView]) -> list[str]:
        """Concatenated: the inner plan's, then the wrapper's."""
        return self.inner.status_lines(trials)

    def table_notes(self, trials: Sequence[TrialView]) -> list[str]:
        """Concatenated: the inner plan's, then the wrapper's."""
        return self.inner.table_notes(trials)

    def start(self, created: Sequence[Any]) -> Step:
        """Chained: the inner plan starts, then the wrapper on the sweep it answered."""
        return self.inner.start(created)

    def step(self, sweep: Sweep, room: int, read: Read) -> Step:
        """The inner plan first (given the same last sweep): while it may add trials the wrapper waits; once
        it may not, the wrapper's turn on the inner plan's sweep (a wrapper that adds nothing answers what
        the inner plan did)."""
        return self.inner.step(sweep, room, read)
