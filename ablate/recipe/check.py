"""The training recipe's two slots, resolved and checked: ``train.optimizer`` and ``train.schedule``.

:func:`make` turns a slot (a name or ``{name, args}``) into the registered recipe, its args checked
against the constructor as a model variant's are (an unknown name gets the registry's one line with
the nearest valid name). :func:`check_recipe` is what ablate/config/check.py runs at load, torch-free:
the two slots, the peak ``train.lr`` a schedule needs, the schedules an optimizer runs under, and no
recipe key that the chosen recipe does not read set by the layer that chose it or a later one (an
inherited one, such as the mini recipe's ``lr_factor`` under a row's ``cosine``, belongs to the recipe
that row replaced).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from ablate.recipe.optimizers import OPTIMIZERS, OptimizerRecipe
from ablate.recipe.schedules import SCHEDULES, ScheduleRecipe
from ablate.registry import Registry, RegistryError, parse_slot

# The train keys that belong to a recipe: each is read by some optimizer or schedule, not by all.
RECIPE_KEYS = ("lr", "lr_factor", "warmup_steps", "adam_beta1", "adam_beta2", "adam_eps", "weight_decay")


@functools.cache
def _accepted(cls: type) -> frozenset[str]:
    """The keywords a recipe class's constructor takes (read once a class: a sweep checks every trial's)."""
    if cls.__init__ is object.__init__:
        return frozenset()
    params = inspect.signature(cls.__init__).parameters
    return frozenset(k for k, p in params.items() if k != "self" and p.kind is p.POSITIONAL_OR_KEYWORD)


def make(registry: Registry[Any], spec: Any) -> Any:
    """The recipe a slot names, built with its args; RegistryError (one line) for a bad name or arg."""
    name, args = parse_slot(spec, f"train.{registry.kind}")
    cls = registry.get(name)
    accepted = _accepted(cls)
    unknown = sorted(set(args) - accepted)
    if unknown:
        raise RegistryError(
            f"{name!r} does not take the argument(s) {', '.join(unknown)} "
            f"(it takes: {', '.join(sorted(accepted)) or 'none'})"
        )
    try:
        return cls(**args)
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"{name}: {exc}") from None


def optimizer_of(spec: Any) -> OptimizerRecipe:
    return make(OPTIMIZERS, spec)


def schedule_of(spec: Any) -> ScheduleRecipe:
    return make(SCHEDULES, spec)


def check_recipe(c: Any) -> None:
    """The load-time checks of the recipe, on ablate/config/check.py's checker ``c``."""
    made = {}
    for key, registry in (("train.optimizer", OPTIMIZERS), ("train.schedule", SCHEDULES)):
        try:
            made[key] = make(registry, c.get(key))
        except RegistryError as exc:
            c.fail(key, str(exc))
    opt, sched = made["train.optimizer"], made["train.schedule"]
    opt_name, sched_name = parse_slot(c.get("train.optimizer"))[0], parse_slot(c.get("train.schedule"))[0]
    if opt.schedules is not None and sched_name not in opt.schedules:
        what = f"{opt_name} runs under {' or '.join(opt.schedules)} only, got {sched_name!r}"
        c.fail("train.schedule", what, "train.optimizer")
    if sched.needs_peak and c.get("train.lr") is None:
        c.fail("train.lr", f"schedule {sched_name!r} needs the peak learning rate: set train.lr", "train.schedule")
    c.positive("train.lr", optional=True)
    if sched_name == "noam" and c.get("train.lr") is not None and c.origins.index("train.lr_factor") >= 0:
        if c.origins.index("train.lr_factor") >= c.origins.index("train.lr"):
            c.fail("train.lr_factor", "noam's peak is train.lr when it is set: set one of them", "train.lr")
    if sched.decays and c.get("train.epochs") is None and c.get("train.target_tokens") is None:
        if c.get("train.max_steps") <= c.get("train.warmup_steps"):
            what = f"schedule {sched_name!r} decays after the warm-up: max_steps must exceed train.warmup_steps"
            c.fail("train.max_steps", what, "train.warmup_steps", "train.schedule")
    _check_unread(c, set(opt.uses) | set(sched.uses), f"{opt_name} with {sched_name}")


def _set_at(c: Any, key: str) -> int:
    """The last layer that set ``key`` (a slot: its name too); -1 for the defaults."""
    return max(c.origins.index(key), c.origins.index(f"{key}.name"))


def _check_unread(c: Any, uses: set[str], recipe: str) -> None:
    """A recipe key the chosen recipe does not read, set where the recipe was chosen or later: an error."""
    chosen = max(_set_at(c, "train.optimizer"), _set_at(c, "train.schedule"))
    for name in RECIPE_KEYS:
        key = f"train.{name}"
        at = c.origins.index(key)
        if name not in uses and at >= 0 and at >= chosen and c.get(key) is not None:
            c.fail(key, f"{recipe} does not read it (they read: {', '.join(sorted(uses))})")
