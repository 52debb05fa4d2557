"""The training recipe as slots, beside the model's: ``train.optimizer`` and ``train.schedule``.

- optimizers.py: the ``optimizer`` registry (the paper's ``adam``, ``adamw``, ``muon``, ``lion``,
  ``schedulefree_adamw``) and what each keeps per parameter;
- schedules.py: the ``schedule`` registry (the paper's ``noam``, ``constant``, ``cosine``, ``linear``,
  ``wsd``), each a closed form of the learning rate at a step;
- check.py: a slot resolved into its recipe, and the load-time checks ablate/config/check.py runs;
- lion.py, muon.py: the two optimizers torch does not ship as one object (torch, imported on build).

Importing this package (and its registries) imports no torch: the config checks, ``ablate variants``
and the dry run read it without. A plugin recipe is one module under a sweep file's ``imports:`` that
registers a subclass of :class:`OptimizerRecipe` or :class:`ScheduleRecipe`.
"""

from __future__ import annotations

from ablate.recipe.check import make, optimizer_of, schedule_of
from ablate.recipe.optimizers import OPTIMIZERS, OptimizerRecipe, Shared
from ablate.recipe.schedules import SCHEDULES, Horizon, ScheduleRecipe, scheduler

__all__ = [
    "OPTIMIZERS",
    "SCHEDULES",
    "Horizon",
    "OptimizerRecipe",
    "ScheduleRecipe",
    "Shared",
    "make",
    "optimizer_of",
    "schedule_of",
    "scheduler",
]
