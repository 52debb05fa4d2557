"""The plan room: what a sweep runs next (grid, search, adaptive seeds) behind one interface.

:mod:`~ablate.sweep.plan.base` holds :class:`Plan` and the registry; each policy is one file
(``grid``, ``search``, ``adaptive``) with its helpers beside it (``search_results``, ``search_plan``,
``pruning``); ``cost`` and ``budgets`` estimate what a trial costs, for the dry run and for ordering.
:mod:`~ablate.sweep.plan.plans` composes the policies a sweep asked for. Below it: the store and the
sweep file; above it: the launchers.
"""

from ablate.sweep.plan.plans import SweepPlan, materialize, trial_states

__all__ = ["SweepPlan", "materialize", "trial_states"]
