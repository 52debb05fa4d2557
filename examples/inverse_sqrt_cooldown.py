"""A user-defined learning-rate schedule in one registered class: the paper's inverse square root with
a linear cooldown to zero over the last steps, so a noam-shaped run also ends fully decayed (the
"infinite schedule" idea of Hägele et al. 2024 applied to the inverse square root).

Nothing in ablate changes to add it. A sweep file lists this module under ``imports:`` and a row
selects it with ``train.schedule=inverse_sqrt_cooldown``::

    imports: [inverse_sqrt_cooldown]
    rows:
      - {name: rsqrt + cooldown, group: schedule, overrides: [train.schedule=inverse_sqrt_cooldown]}

See it listed: ``ablate variants --imports examples/inverse_sqrt_cooldown.py``. A plugin optimizer is
the same: a subclass of ``ablate.recipe.OptimizerRecipe`` registered in ``OPTIMIZERS``.
"""

from __future__ import annotations

from ablate.recipe import SCHEDULES, Horizon, ScheduleRecipe


@SCHEDULES.register("inverse_sqrt_cooldown")
class InverseSqrtCooldown(ScheduleRecipe):
    """Warm-up, the inverse square root through the peak train.lr, then linear to zero over the last steps."""

    def __init__(self, cooldown_fraction: float = 0.2) -> None:
        if not 0.0 < cooldown_fraction <= 1.0:
            raise ValueError(f"cooldown_fraction must be in (0, 1], got {cooldown_fraction}")
        self.cooldown_fraction = float(cooldown_fraction)

    def lr(self, step: int, h: Horizon) -> float:
        rsqrt = float(h.peak) * min(step / h.warmup_steps, (h.warmup_steps / step) ** 0.5)
        start = h.max_steps - round(self.cooldown_fraction * h.max_steps)
        if step <= start:
            return rsqrt
        return rsqrt * max(0.0, (h.max_steps - step) / max(1, h.max_steps - start))
