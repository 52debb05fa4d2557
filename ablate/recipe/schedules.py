"""The learning-rate schedule slot (``train.schedule``): the paper's ``noam`` by default, and the modern ones.

``train.schedule`` is a name (``cosine``) or ``{name: wsd, args: {decay_fraction: 0.2, shape: sqrt}}``.
A schedule is one registered class whose constructor's keywords are its args (checked at load) and
whose :meth:`ScheduleRecipe.lr` is its closed form: the absolute learning rate of optimizer update
``step`` (counted from 1, as the paper's equation 3 counts). Every schedule but ``noam`` rises linearly
over ``train.warmup_steps`` updates to the peak ``train.lr`` and ends at ``train.max_steps`` (the
budget's steps when ``train.epochs`` or ``train.target_tokens`` set them); ``noam`` takes ``train.lr``
as its peak when it is set, in place of ``lr_factor x (d_model x warmup_steps)^-0.5``. :func:`scheduler` turns a
closed form into a per-step ``LambdaLR`` over an optimizer built at learning rate 1. Torch is imported
only there, so the config checks read this registry without it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ablate.registry import Registry

SCHEDULES: Registry[type[ScheduleRecipe]] = Registry("schedule", "train.schedule: the learning rate at each step")


@dataclass(frozen=True)
class Horizon:
    """What a schedule is evaluated against: the run's numbers, not the schedule's own args."""

    peak: float | None  # train.lr: the peak learning rate (None under noam, whose peak is lr_factor's)
    warmup_steps: int  # train.warmup_steps: linear warm-up updates
    max_steps: int  # the run's optimizer updates (where a decay ends)
    d_model: int = 512  # noam scales by d_model^-0.5
    lr_factor: float = 1.0  # noam's multiplier


class ScheduleRecipe:
    """A registered schedule: ``lr(step, horizon)`` is the absolute learning rate of update ``step`` (from 1)."""

    uses: tuple[str, ...] = ("lr", "warmup_steps")  # train keys it reads (one it does not read may not be set with it)
    decays: bool = True  # it ends at train.max_steps, so max_steps must be past the warm-up
    needs_peak: bool = True  # train.lr must be set (noam has its own peak without it)

    def lr(self, step: int, h: Horizon) -> float:
        raise NotImplementedError


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """The paper's equation 3 for optimizer step ``step`` (1-based): factor * d_model^-0.5 *
    min(step^-0.5, step * warmup_steps^-1.5)."""
    if step < 1:
        raise ValueError(f"the schedule counts steps from 1, got {step}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def warm(step: int, h: Horizon) -> float:
    """The linear warm-up's multiplier of the peak: step / warmup_steps until the peak, then 1."""
    return min(1.0, step / h.warmup_steps) if h.warmup_steps > 0 else 1.0


def progress(step: int, start: int, h: Horizon) -> float:
    """How far update ``step`` is through a decay from update ``start`` to ``max_steps``: 0 to 1."""
    return min(1.0, max(0.0, (step - start) / max(1, h.max_steps - start)))


@SCHEDULES.register("noam")
class Noam(ScheduleRecipe):
    """Warm-up, then the inverse square root of the step: the paper's equation 3 (Vaswani et al. 2017, 5.3)."""

    uses = ("lr", "lr_factor", "warmup_steps")
    decays = False
    needs_peak = False

    def lr(self, step: int, h: Horizon) -> float:
        if h.peak is None:  # the paper's: the peak is lr_factor x (d_model x warmup_steps)^-0.5
            return noam_lr(step, h.d_model, h.warmup_steps, h.lr_factor)
        # train.lr set: the same curve through that peak, so a search tunes noam on the others' scale
        return h.peak * min(step / h.warmup_steps, (h.warmup_steps / step) ** 0.5)


@SCHEDULES.register("constant")
class Constant(ScheduleRecipe):
    """Warm-up, then the peak to the end (the baseline; the schedule of schedule-free optimizers)."""

    decays = False

    def lr(self, step: int, h: Horizon) -> float:
        return float(h.peak) * warm(step, h)


@SCHEDULES.register("cosine")
class Cosine(ScheduleRecipe):
    """Warm-up, then a half cosine from the peak to floor x peak at max_steps (Loshchilov & Hutter 2017)."""

    def __init__(self, floor: float = 0.1) -> None:
        if not 0.0 <= floor <= 1.0:
            raise ValueError(f"floor is a fraction of the peak, in [0, 1]; got {floor}")
        self.floor = float(floor)

    def lr(self, step: int, h: Horizon) -> float:
        if step <= h.warmup_steps:
            return float(h.peak) * warm(step, h)
        cos = 0.5 * (1.0 + math.cos(math.pi * progress(step, h.warmup_steps, h)))
        return float(h.peak) * (self.floor + (1.0 - self.floor) * cos)


@SCHEDULES.register("linear")
class Linear(ScheduleRecipe):
    """Warm-up, then a straight line from the peak to zero at max_steps (Bergsma et al. 2025, decay to zero)."""

    def lr(self, step: int, h: Horizon) -> float:
        if step <= h.warmup_steps:
            return float(h.peak) * warm(step, h)
        return float(h.peak) * (1.0 - progress(step, h.warmup_steps, h))


WSD_SHAPES = ("sqrt", "linear", "cosine")  # the cooldown's shape, as a function of its progress q in [0, 1]


@SCHEDULES.register("wsd")
class WarmupStableDecay(ScheduleRecipe):
    """Warm-up, a constant stage, and a cooldown over the last decay_fraction of the steps (Hägele et al. 2024)."""

    def __init__(self, decay_fraction: float = 0.2, shape: str = "sqrt", floor: float = 0.0) -> None:
        if not 0.0 < decay_fraction <= 1.0:
            raise ValueError(f"decay_fraction is a share of train.max_steps, in (0, 1]; got {decay_fraction}")
        if shape not in WSD_SHAPES:
            raise ValueError(f"shape must be one of {', '.join(WSD_SHAPES)}; got {shape!r}")
        if not 0.0 <= floor <= 1.0:
            raise ValueError(f"floor is a fraction of the peak, in [0, 1]; got {floor}")
        self.decay_fraction, self.shape, self.floor = float(decay_fraction), shape, float(floor)

    def decay_start(self, h: Horizon) -> int:
        """The last update at the peak: the cooldown takes the final round(decay_fraction x max_steps)."""
        return max(h.warmup_steps, h.max_steps - round(self.decay_fraction * h.max_steps))

    def lr(self, step: int, h: Horizon) -> float:
        start = self.decay_start(h)
        if step <= start:
            return float(h.peak) * warm(step, h)
        q = progress(step, start, h)
        # 1 - sqrt(q) is Hägele et al.'s better cooldown; linear and cosine for comparison
        left = {"sqrt": 1.0 - math.sqrt(q), "linear": 1.0 - q, "cosine": 0.5 * (1.0 + math.cos(math.pi * q))}
        return float(h.peak) * (self.floor + (1.0 - self.floor) * left[self.shape])


def scheduler(optimizer: Any, schedule: ScheduleRecipe, horizon: Horizon) -> Any:
    """A per-step ``LambdaLR`` whose value is ``schedule.lr`` (the optimizer's base lr is set to 1).

    LambdaLR evaluates its function at 0 for the first update, hence ``index + 1``."""
    from torch.optim.lr_scheduler import LambdaLR

    for group in optimizer.param_groups:
        group["lr"] = 1.0
        group["initial_lr"] = 1.0
    return LambdaLR(optimizer, lambda index: schedule.lr(index + 1, horizon))
