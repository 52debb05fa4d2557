"""The Lightning Trainer of a run: precision, loggers, and the callbacks in the order they must run.

Callback order matters. Lightning runs ``Checkpoint`` callbacks after all others, in list order:
``best`` (a ModelCheckpoint on ``val/ppl``) and then :class:`~ablate.train.callbacks.LastCheckpoint`,
so last.ckpt always holds a ``best`` that has seen the validation it follows.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Checkpoint, ModelCheckpoint
from omegaconf import DictConfig

from ablate.devices import device_kind
from ablate.eval.callback import DevBleu
from ablate.eval.corpus import bleu_set
from ablate.eval.settings import DecodeSettings
from ablate.family import family_of
from ablate.rundir import RunDir
from ablate.train.callbacks import AtomicCheckpointIO, FinishWithValidation, LastCheckpoint, ResumeConsistency
from ablate.train.loggers import DefineMetrics, build_loggers
from ablate.train.monitor import RunMonitor
from ablate.train.preempt import check as check_preempted
from ablate.train.preempt import reinstall as take_stop_signals
from ablate.train.preempt import requested as preempt_requested


def resolve_precision(precision: str | None, accelerator: str) -> str:
    """None -> bf16-mixed on a GPU, 32-true on CPU (bf16 matmuls run ~400x slower on this kind of CPU)."""
    if precision is not None:
        return precision
    return "bf16-mixed" if device_kind(accelerator) == "gpu" else "32-true"


def build_callbacks(cfg: DictConfig, rd: RunDir, prepared: Any) -> tuple[list[pl.Callback], RunMonitor]:
    """Resume consistency, progress, the final validation, dev BLEU, best.ckpt, last.ckpt (in this order)."""
    t, e = cfg.train, cfg.eval
    monitor = RunMonitor(rd.path, t.log_every_steps, show=cfg.logging.progress_bar)
    dev_bleu = []
    if family_of(cfg).has_bleu:  # dev BLEU during training: a family that decodes (a language model does not)
        dev_set = bleu_set(prepared, cfg.data.valid_split, e.bleu_max_sentences)
        dev_bleu.append(
            DevBleu(dev_set, DecodeSettings.from_config(e), every=e.bleu_every, tokenized=bool(e.tokenized_bleu))
        )
    best = ModelCheckpoint(
        dirpath=rd.checkpoints,
        filename="best",
        monitor="val/ppl",
        mode="min",
        save_top_k=1,
        auto_insert_metric_name=False,
        enable_version_counter=False,
        save_last=False,
    )
    last = LastCheckpoint(rd.checkpoints, t.checkpoint_every_steps)
    callbacks = [ResumeConsistency(), DefineMetrics(), monitor, FinishWithValidation(), *dev_bleu, best, last]
    return [*callbacks, StopOnPreempt(last)], monitor


class StopOnPreempt(Checkpoint):
    """In a SLURM task (:mod:`ablate.train.preempt` installed): after a stop signal, write last.ckpt at
    the current step and raise ``Preempted``. A ``Checkpoint`` listed after ``last``, so it runs last,
    after the RNG snapshot and any save of that step (its save is the every-N-steps one, deduplicated).

    Lightning's signal connector replaces the SIGTERM handler when fit starts (and would raise its own
    ``SIGTERMException`` without a checkpoint); the stop signals are taken back at the start of training.
    """

    def __init__(self, last: LastCheckpoint) -> None:
        self.last = last

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        take_stop_signals()
        check_preempted(f"before training resumed at step {trainer.global_step}")

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        if 0 < trainer.max_steps <= trainer.global_step:
            return  # the last step: finish (a resumed run would skip the final validation)
        # Any rank's signal stops every rank at this same step (a rank stopping alone would hang the others).
        if trainer.strategy.reduce_boolean_decision(preempt_requested(), all=False):
            self.last._save(trainer)  # noqa: SLF001 - the same save as every_steps, at this step
            check_preempted(f"at step {trainer.global_step} (checkpoints/last.ckpt)")


def build_trainer(
    cfg: DictConfig,
    rd: RunDir,
    run_id: str,
    prepared: Any,
    *,
    resume_step: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> tuple[pl.Trainer, RunMonitor]:
    """The Trainer of ``cfg.train`` / ``cfg.trainer`` writing into ``rd`` (``overrides``: Trainer keywords
    that replace ours, e.g. a SLURM environment plugin; ``callbacks`` among them are added to ours), and
    its :class:`RunMonitor`."""
    t, tr = cfg.train, cfg.trainer
    callbacks, monitor = build_callbacks(cfg, rd, prepared)
    kwargs: dict[str, Any] = dict(
        accelerator=tr.accelerator,
        devices=tr.devices,
        strategy=tr.strategy,
        num_nodes=tr.num_nodes,
        precision=resolve_precision(tr.precision, tr.accelerator),
        deterministic=tr.deterministic,
        max_steps=t.max_steps,
        max_epochs=t.max_epochs if t.max_epochs is not None else -1,
        max_time={"minutes": t.max_time_minutes} if t.max_time_minutes else None,
        accumulate_grad_batches=t.accumulate_grad_batches,
        val_check_interval=t.val_every_steps * t.accumulate_grad_batches,
        check_val_every_n_epoch=None,
        log_every_n_steps=t.log_every_steps,
        gradient_clip_val=t.grad_clip or None,
        logger=build_loggers(cfg, rd.path, run_id, resume_step),
        default_root_dir=rd.path,
        num_sanity_val_steps=0,
        callbacks=callbacks,
        plugins=[AtomicCheckpointIO()],
        use_distributed_sampler=False,  # the batch sampler splits by rank
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    extra = dict(overrides or {})
    kwargs["callbacks"] = callbacks + list(extra.pop("callbacks", []))  # added to ours (e.g. a search's pruner)
    kwargs.update(extra)
    return pl.Trainer(**kwargs), monitor
