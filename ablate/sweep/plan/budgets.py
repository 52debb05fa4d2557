"""Each trial's training budget for the dry run and the cost model: its steps, epochs and target tokens.

A budget in ``train.epochs`` or ``train.target_tokens`` becomes steps only against the prepared data
(:mod:`ablate.data.budget`), and a budget in steps means epochs only there. The prepared folder of a
trial's data section is looked up in the cache (nothing is prepared or downloaded), once per distinct
data section in a process (a miss is looked up again); before the first trial prepared it, the
figures it would give are unknown (None) and the dry run says so.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from ablate.data.budget import Budget, EpochStats, resolve
from ablate.devices import devices_of
from ablate.family import ModelFamily, family_of

_STATS: dict[str, EpochStats | None] = {}
_PREPARED: dict[str, Any] = {}


def trial_budget(config: Mapping[str, Any]) -> Budget:
    """The budget of a trial's resolved config (steps None: set in epochs or tokens, data not prepared).

    A budget in tokens of a family whose every batch predicts the same tokens (a language model's whole
    blocks) has its steps before the data is prepared: the tokens over the tokens a step. The trial counts
    them from its epoch instead, which differs only by an epoch's last partial accumulation."""
    train, family = config["train"], family_of(config)
    devices, accumulate = devices_of(config["trainer"]), int(train["accumulate_grad_batches"])
    budget = resolve(train, data_stats(config["data"], family), devices, accumulate)
    batch = family.batch_cost(config["data"])
    if budget.steps is None and train.get("target_tokens") is not None and batch.exact:
        per_step = batch.tokens * devices * accumulate
        steps = max(1, math.ceil(float(train["target_tokens"]) / per_step))
        budget = Budget("train.target_tokens", steps, None, float(steps * per_step))
    return budget


def data_stats(data: Mapping[str, Any], family: ModelFamily) -> EpochStats | None:
    """One training epoch of this data section as ``family`` counts it (a trial asks the same family),
    if its prepared folder is in the cache."""
    key = json.dumps([data, family.name, os.environ.get("ABLATE_CACHE")], sort_keys=True, default=str)
    if _STATS.get(key) is None:  # a miss is asked again: the data may have been prepared since
        _STATS[key] = _find(data, family)
    return _STATS[key]


def prepared_problem(config: Mapping[str, Any]) -> str | None:
    """What a trial's prepared data cannot give it (a language model's block or evaluation length longer
    than a split holds: its family says), where that data is prepared here; None otherwise."""
    prepared = _lookup(config["data"])
    return None if prepared is None else family_of(config).prepared_problem(config, prepared)


def _find(data: Mapping[str, Any], family: ModelFamily) -> EpochStats | None:
    prepared = _lookup(data)
    return None if prepared is None else family.epoch_stats(data, prepared)


def _lookup(data: Mapping[str, Any]) -> Any:
    """The prepared data of a data section, or None where it is not prepared here (nothing is prepared);
    found once per data section and process (a sweep's rows mostly share one: 20 lookups cost 60 ms)."""
    key = json.dumps([data, os.environ.get("ABLATE_CACHE")], sort_keys=True, default=str)
    if _PREPARED.get(key) is None:  # a miss is asked again: the data may have been prepared since
        _PREPARED[key] = _find_prepared(data)
    return _PREPARED[key]


def _find_prepared(data: Mapping[str, Any]) -> Any:
    from omegaconf import OmegaConf

    from ablate.data.errors import DataError
    from ablate.data.prepare import find_prepared

    try:
        return find_prepared(OmegaConf.create(dict(data)))
    except (DataError, OSError):  # not downloaded, files missing: the trial's own start reports those
        return None
