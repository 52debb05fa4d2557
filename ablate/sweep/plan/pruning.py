"""Pruning inside the training loop: report each validation to the row's study, stop when it says so.

Not optuna-integration's ``PyTorchLightningPruningCallback``: that one needs an ``optuna.Trial`` in the
training process and, under DDP, Optuna's RDB storage on every rank; ours is built from the stored
attempt (the row study's name and trial id), works with every store ablate supports (the journal
file too), lets rank 0 alone talk to the store and broadcasts its decision, and never prunes at the
last step (a trial that trained to the end is a result). A pruned trial raises
:class:`ablate.errors.Pruned`; the worker records the attempt PRUNED with the value it stopped at.
Imports Lightning: only the worker of a search trial imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import lightning.pytorch as pl

from ablate.errors import Pruned
from ablate.sweep.plan.search import make_pruner, pruning_spec


class PruneOnValidation(pl.Callback):
    """Reports ``metric`` at each validation to the row-study trial ``trial_id``; raises Pruned if pruned."""

    def __init__(
        self, storage: Any, study: str, trial_id: int, metric: str, pruner: str, options: Mapping[str, Any]
    ) -> None:
        self.storage, self.study_name, self.trial_id = storage, study, trial_id
        self.metric, self.pruner, self.options = metric, pruner, dict(options)

    def _decide(self, step: int, value: float) -> bool:
        import optuna
        from optuna.exceptions import UpdateFinishedTrialError

        try:
            self.storage.set_trial_intermediate_value(self.trial_id, step, value)
        except UpdateFinishedTrialError:
            return False  # told already (a re-run of a finished trial): nothing to decide
        study = optuna.load_study(
            study_name=self.study_name, storage=self.storage, pruner=make_pruner(self.pruner, self.options)
        )
        return bool(optuna.trial.Trial(study, self.trial_id).should_prune())

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        step = int(trainer.global_step)
        raw = trainer.callback_metrics.get(self.metric)
        value = float(raw) if raw is not None else math.nan
        decision = False
        last = 0 < trainer.max_steps <= step
        if trainer.is_global_zero and math.isfinite(value) and not last:
            decision = self._decide(step, value)
        if trainer.strategy.broadcast(decision, src=0):
            raise Pruned(step, value, self.metric)


def pruning_callbacks(store: Any, attrs: Mapping[str, Any]) -> list[pl.Callback]:
    """The callback of a search-phase attempt (none for grid trials, final re-runs or no pruner)."""
    spec = pruning_spec(store.study_attrs() or {}, attrs)
    if spec is None:
        return []
    search = attrs["search"]
    return [
        PruneOnValidation(
            store.storage,
            str(search["study"]),
            int(search["trial_id"]),
            str(spec["metric"]),
            str(spec["pruner"]),
            spec.get("pruner_options") or {},
        )
    ]
