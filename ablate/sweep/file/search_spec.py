"""The ``search:`` block of a sweep file: metric, direction, budget, sampler, pruner and ranges. Pure.

```yaml
search:
  metric: val/ppl              # val/ppl | val/nll (every validation) | val/bleu (see KNOWN_METRICS)
  direction: minimize          # maximize for val/bleu
  n_trials: 12                 # per row (a sweep without rows: one implicit row)
  sampler: tpe                 # tpe | random | grid | cmaes | qmc, or {name: tpe, n_startup_trials: 4}
  pruner: median               # none | median | hyperband | successive_halving, or {name: median, ...}
  parallel: 2                  # trials of one row in flight at once (default: as many as slots)
  seed: 0                      # seeds the samplers (each ask is seeded from it, the row and the count)
  params:
    train.lr_factor: {low: 0.1, high: 2.0, log: true}
    train.warmup_steps: {low: 50, high: 400, step: 50}
    model.dropout: {choices: [0.0, 0.1, 0.2, 0.3]}
```

Each param is a range (``low``/``high``, with ``log`` or ``step``) or ``choices``. Integer ranges are
those whose low, high and step are integers. Whether a key exists in the config and accepts the
values is checked when the rows are expanded (every bound and choice is resolved once). Sampler and
pruner options are checked against the Optuna constructor's own parameters (Optuna is imported then,
not torch). Every error is one :class:`SweepError` line naming file, key and fix.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ablate.errors import SweepError, check_known_keys, unknown_key

SEARCH_KEYS = ("metric", "direction", "n_trials", "sampler", "pruner", "params", "parallel", "seed")
PARAM_KEYS = ("low", "high", "log", "step", "choices")
DIRECTIONS = ("minimize", "maximize")
# name -> Optuna class (in optuna.samplers / optuna.pruners)
SAMPLERS = {
    "tpe": "TPESampler",
    "random": "RandomSampler",
    "grid": "GridSampler",
    "cmaes": "CmaEsSampler",
    "qmc": "QMCSampler",
}
PRUNERS = {
    "none": "NopPruner",
    "median": "MedianPruner",
    "hyperband": "HyperbandPruner",
    "successive_halving": "SuccessiveHalvingPruner",
}
# The metrics a search can rank by: the trainer records each in a trial's final metrics, and their
# better side. val/ppl and val/nll are also logged at every validation, so a pruner sees them as the
# trial trains; val/bleu only every ``eval.bleu_every`` validations (0, the default: at the end only,
# so a pruner never stops a trial on it). Any other name would leave every trial unranked (told FAIL)
# after it trained, so it is refused before anything is launched.
KNOWN_METRICS = {"val/ppl": "minimize", "val/nll": "minimize", "val/bleu": "maximize"}


@dataclass(frozen=True)
class Param:
    """One searched config key: a range (low, high, log or step) or a list of choices."""

    key: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple[Any, ...] | None = None

    @property
    def is_int(self) -> bool:
        nums = [v for v in (self.low, self.high, self.step) if v is not None]
        return self.choices is None and all(isinstance(v, int) and not isinstance(v, bool) for v in nums)

    def grid_values(self) -> list[Any] | None:
        """Every value the param can take, or None for a continuous range."""
        if self.choices is not None:
            return list(self.choices)
        if self.step is None:
            return None
        assert self.low is not None and self.high is not None
        n = int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1  # never past high
        values = [self.low + i * self.step for i in range(n)]
        return [int(v) if self.is_int else round(float(v), 12) for v in values]

    def bounds(self) -> list[Any]:
        """The values checked against the config at load: the choices, or low and high."""
        return list(self.choices) if self.choices is not None else [self.low, self.high]

    def describe(self) -> str:
        if self.choices is not None:
            return f"{self.key} in {list(self.choices)}"
        how = " log" if self.log else (f" step {self.step}" if self.step is not None else "")
        return f"{self.key} in [{self.low}, {self.high}]{how}"


@dataclass(frozen=True)
class SearchSpec:
    """A checked ``search:`` block."""

    metric: str
    direction: str
    n_trials: int
    sampler: str
    pruner: str
    params: tuple[Param, ...]
    sampler_options: dict[str, Any] = field(default_factory=dict)
    pruner_options: dict[str, Any] = field(default_factory=dict)
    parallel: int | None = None
    seed: int = 0

    def record(self) -> dict[str, Any]:
        """As plain data (the store's study attribute ``search``, the JSON table, the W&B config)."""
        return {
            "metric": self.metric,
            "direction": self.direction,
            "n_trials": self.n_trials,
            "sampler": self.sampler,
            "sampler_options": dict(self.sampler_options),
            "pruner": self.pruner,
            "pruner_options": dict(self.pruner_options),
            "params": [p.describe() for p in self.params],
            "seed": self.seed,
        }

    @property
    def keys(self) -> list[str]:
        return [p.key for p in self.params]

    def grid_size(self) -> int | None:
        size = 1
        for p in self.params:
            values = p.grid_values()
            if values is None:
                return None
            size *= len(values)
        return size


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def read_param(where: str, key: Any, spec: Any) -> Param:
    pwhere = f"{where}.params.{key}"
    if not isinstance(key, str) or "." not in key:
        raise SweepError(f"{where}.params: {key!r} must be a dotted config key like train.lr_factor")
    if not isinstance(spec, Mapping):
        raise SweepError(f"{pwhere}: must be {{low: .., high: ..}} (with log: true or step: ..) or {{choices: [..]}}")
    check_known_keys(pwhere, spec, PARAM_KEYS)
    if "choices" in spec:
        extra = [k for k in ("low", "high", "log", "step") if k in spec]
        if extra:
            raise SweepError(f"{pwhere}: give either choices or a range (low/high), not both (remove {extra[0]})")
        choices = spec["choices"]
        if not isinstance(choices, list) or not choices:
            raise SweepError(f"{pwhere}: choices must be a non-empty list, got {choices!r}")
        if len({repr(c) for c in choices}) != len(choices):
            raise SweepError(f"{pwhere}: choices lists a value twice: {choices}")
        for c in choices:
            if c is not None and not isinstance(c, (str, int, float, bool)):
                raise SweepError(f"{pwhere}: choices must be plain values (numbers, strings, booleans), got {c!r}")
        return Param(key, choices=tuple(choices))
    for bound in ("low", "high"):
        if bound not in spec:
            raise SweepError(f"{pwhere}: missing {bound} (a range needs low and high; or give choices: [..])")
        if not _number(spec[bound]):
            raise SweepError(f"{pwhere}: {bound} must be a number, got {spec[bound]!r}")
    low, high, log, step = spec["low"], spec["high"], spec.get("log", False), spec.get("step")
    if low > high:
        raise SweepError(f"{pwhere}: low {low} is above high {high}; swap them")
    if not isinstance(log, bool):
        raise SweepError(f"{pwhere}: log must be true or false, got {log!r}")
    if log and low <= 0:
        raise SweepError(f"{pwhere}: log: true needs low > 0, got low {low}; raise low or drop log")
    if step is not None:
        if log:
            raise SweepError(f"{pwhere}: give log or step, not both (Optuna samples a log range continuously)")
        if not _number(step) or step <= 0:
            raise SweepError(f"{pwhere}: step must be a positive number, got {step!r}")
    return Param(key, low=low, high=high, log=log, step=step)


def _named(where: str, what: str, value: Any, table: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """(name, options) of ``sampler: tpe`` or ``sampler: {name: tpe, n_startup_trials: 4}``, checked."""
    options: dict[str, Any] = {}
    if isinstance(value, Mapping):
        options = {str(k): v for k, v in value.items() if k != "name"}
        value = value.get("name")
    if not isinstance(value, str) or value not in table:
        raise SweepError(f"{where}.{what}: unknown {what} {value!r}; use one of {', '.join(table)}")
    if options:
        import optuna

        module = optuna.samplers if what == "sampler" else optuna.pruners
        sig = inspect.signature(getattr(module, table[value]).__init__)
        valid = [p for p in sig.parameters if p not in ("self", "search_space", "seed", "args", "kwargs")]
        for key in options:
            if key not in valid:
                raise unknown_key(f"{where}.{what} ({value})", key, valid)
    return value, options


def _positive_int(where: str, key: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SweepError(f"{where}.{key}: must be a positive integer, got {value!r}")


def read_search(where: str, data: Any) -> SearchSpec:
    """Check a sweep file's ``search:`` block (``where``: the file); one SweepError line per problem."""
    where = f"{where}: search"
    if not isinstance(data, Mapping):
        raise SweepError(f"{where}: must be a mapping with metric, direction, n_trials, sampler, pruner, params")
    check_known_keys(where, data, SEARCH_KEYS)
    metric = data.get("metric", "val/ppl")
    if not isinstance(metric, str) or metric not in KNOWN_METRICS:
        known = ", ".join(KNOWN_METRICS)
        raise SweepError(f"{where}.metric: must be one of {known} (what a trial records), got {metric!r}")
    direction = data.get("direction", KNOWN_METRICS.get(metric, "minimize"))
    if direction not in DIRECTIONS:
        raise SweepError(f"{where}.direction: must be minimize or maximize, got {direction!r}")
    better = KNOWN_METRICS.get(metric)
    if better is not None and better != direction:
        raise SweepError(
            f"{where}.direction: {metric} is better {'lower' if better == 'minimize' else 'higher'}; "
            f"set direction: {better}"
        )
    if "n_trials" not in data:
        raise SweepError(f"{where}: missing n_trials (trials per row)")
    _positive_int(where, "n_trials", data["n_trials"])
    for key in ("parallel",):
        if data.get(key) is not None:
            _positive_int(where, key, data[key])
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SweepError(f"{where}.seed: must be an integer, got {seed!r}")
    sampler, sampler_options = _named(where, "sampler", data.get("sampler", "tpe"), SAMPLERS)
    pruner, pruner_options = _named(where, "pruner", data.get("pruner", "none"), PRUNERS)
    params = data.get("params")
    if not isinstance(params, Mapping) or not params:
        raise SweepError(f"{where}.params: must map config keys to ranges, e.g. train.lr_factor: {{low: 0.5, high: 2}}")
    checked = tuple(read_param(where, k, v) for k, v in params.items())
    spec = SearchSpec(
        metric=metric,
        direction=direction,
        n_trials=int(data["n_trials"]),
        sampler=sampler,
        pruner=pruner,
        params=checked,
        sampler_options=sampler_options,
        pruner_options=pruner_options,
        parallel=data.get("parallel"),
        seed=seed,
    )
    if sampler == "grid":
        continuous = [p.key for p in checked if p.grid_values() is None]
        if continuous:
            raise SweepError(f"{where}.sampler: grid needs choices or a step for every param; {continuous[0]} has none")
        size = spec.grid_size() or 0
        if spec.n_trials > size:
            raise SweepError(
                f"{where}.n_trials: {spec.n_trials} trials but the grid has {size} point(s), so some "
                f"would repeat; set n_trials: {size}"
            )
    if sampler == "cmaes" and any(p.choices is not None for p in checked):
        raise SweepError(f"{where}.sampler: cmaes samples ranges only; use tpe for choices")
    return spec
