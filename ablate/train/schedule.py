"""The learning-rate schedule of Vaswani et al. 2017, section 5.3 (equation 3), often called "Noam":

    lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

It rises linearly for ``warmup_steps`` optimizer steps, peaks at ``step == warmup_steps`` with the value
``factor * (d_model * warmup_steps)^-0.5``, then decays with the inverse square root of the step.
``step`` counts optimizer updates from 1 (the first update uses step 1, never step 0).
"""

from __future__ import annotations

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

from ablate.recipe.schedules import noam_lr  # the formula's one home: the schedule registry

__all__ = ["noam_lr", "noam_scheduler"]


def noam_scheduler(optimizer: Optimizer, d_model: int, warmup_steps: int, factor: float = 1.0) -> LambdaLR:
    """A per-step LambdaLR whose value is the absolute learning rate (the optimizer's base lr must be 1).

    LambdaLR evaluates its function at 0 for the first update, hence ``index + 1``.
    """
    for group in optimizer.param_groups:
        group["lr"] = 1.0
        group["initial_lr"] = 1.0
    return LambdaLR(optimizer, lambda index: noam_lr(index + 1, d_model, warmup_steps, factor))
