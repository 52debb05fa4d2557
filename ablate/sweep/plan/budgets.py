"""Each trial's training budget for the dry run and the cost model: its steps, epochs and target tokens.

A budget in ``train.epochs`` or ``train.target_tokens`` becomes steps only against the prepared data
(:mod:`ablate.data.budget`), and a budget in steps means epochs only there. The prepared folder of a
trial's data section is looked up in the cache (nothing is prepared or downloaded), once per distinct
data section in a process (a miss is looked up again); before the first trial prepared it, the
figures it would give are unknown (None) and the dry run says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ablate.data.budget import Budget, EpochStats, resolve
from ablate.devices import devices_of
from ablate.family import ModelFamily, family_of

_STATS: dict[str, EpochStats | None] = {}


def trial_budget(config: Mapping[str, Any]) -> Budget:
    """The budget of a trial's resolved config (steps None: set in epochs or tokens, data not prepared)."""
    train = config["train"]
    stats = data_stats(config["data"], family_of(config))
    return resolve(train, stats, devices_of(config["trainer"]), int(train["accumulate_grad_batches"]))


def data_stats(data: Mapping[str, Any], family: ModelFamily) -> EpochStats | None:
    """One training epoch of this data section as ``family`` counts it (a trial asks the same family),
    if its prepared folder is in the cache."""
    key = json.dumps([data, family.name, os.environ.get("ABLATE_CACHE")], sort_keys=True, default=str)
    if _STATS.get(key) is None:  # a miss is asked again: the data may have been prepared since
        _STATS[key] = _find(data, family)
    return _STATS[key]


def _find(data: Mapping[str, Any], family: ModelFamily) -> EpochStats | None:
    from omegaconf import OmegaConf

    from ablate.data.errors import DataError
    from ablate.data.prepare import find_prepared

    try:
        prepared = find_prepared(OmegaConf.create(dict(data)))
    except (DataError, OSError):  # not downloaded, files missing: the trial's own start reports those
        return None
    if prepared is None:
        return None
    return family.epoch_stats(data, prepared)
