"""The plan room: what a sweep runs next (grid, search, adaptive seeds) behind one interface.

:mod:`~ablate.sweep.plan.base` holds :class:`Plan`, :class:`Wrapper` and the registry; each policy is one
file (``grid``, ``search_plan``, ``adaptive``) with its helpers beside it (``search``, ``search_results``,
``pruning``); ``cost`` and ``budgets`` estimate what a trial costs, for the dry run and for ordering.
:mod:`~ablate.sweep.plan.plans` composes the plan of a sweep. Below it: the store and the sweep file;
above it: the launchers.
"""

from ablate.sweep.plan.plans import plan_of, trial_states

__all__ = ["plan_of", "trial_states"]
