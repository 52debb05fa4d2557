"""Lightning plumbing for a run directory: atomic checkpoints, last.ckpt, resume consistency and the
final validation (throughput and progress.json: :mod:`ablate.train.monitor`).

- :class:`AtomicCheckpointIO`: Lightning 2.6's ``_atomic_save`` writes through fsspec's transaction,
  whose temporary file lives in the system temp dir; ``shutil.move`` across file systems (``/tmp`` ->
  a cluster's shared disk) is a copy, so a crash can leave a torn checkpoint. Here the temporary file
  is a sibling of the target, fsynced, then ``os.replace``d: the target is always old or new, never partial.
- :class:`LastCheckpoint`: ``checkpoints/last.ckpt`` after every validation and every
  ``every_steps`` optimizer steps (what a preempted SLURM job resumes from). It is a Lightning
  ``Checkpoint`` listed after the ``best`` ModelCheckpoint, so Lightning runs it after that one: the
  ``best.ckpt`` bookkeeping saved inside last.ckpt already includes the validation just done (written
  the other way round, a kill between the two writes would resume with a best that never saw it).
- :class:`FinishWithValidation`: asks Lightning to stop (and so validate) at the final step or epoch,
  so the last weights are always validated and are a candidate for ``best.ckpt``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.pytorch.callbacks import Checkpoint

from ablate.atomic import atomic_open
from ablate.train.rng import rng_state, set_rng_state


class AtomicCheckpointIO(TorchCheckpointIO):
    """torch.save into a sibling temporary file, fsync, os.replace (see the module docstring)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None) -> None:
        with atomic_open(path) as f:
            torch.save(checkpoint, f)  # streamed to disk, not held twice in memory


class LastCheckpoint(Checkpoint):
    """Writes ``<dirpath>/last.ckpt`` after each validation and every ``every_steps`` optimizer steps.

    Not ``ModelCheckpoint(save_last=True, every_n_train_steps=...)``: Lightning's ModelCheckpoint saves
    either every N training steps or at validation ends (its ``every_n_train_steps``, ``every_n_epochs``
    and ``train_time_interval`` are mutually exclusive), and a resumable run needs both: the step
    interval bounds the work a kill loses, the validation save keeps the dev-PPL history in step.
    """

    def __init__(self, dirpath: str | Path, every_steps: int = 0) -> None:
        self.path = Path(dirpath) / "last.ckpt"
        self.every_steps = every_steps
        self._saved_step = -1

    def _save(self, trainer: pl.Trainer) -> None:
        if trainer.global_step != self._saved_step:
            trainer.save_checkpoint(self.path, weights_only=False)  # every rank calls it; rank 0 writes
            self._saved_step = trainer.global_step

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        step = trainer.global_step
        if self.every_steps and step and step % self.every_steps == 0:  # deduplicated per step by _save
            self._save(trainer)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not trainer.sanity_checking and trainer.state.fn == "fit":
            self._save(trainer)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._save(trainer)  # also after max_time stops mid-interval


class ResumeConsistency(pl.Callback):
    """Validation must not move the training RNG, so that a resumed run retraces an uninterrupted one.

    DataLoader iterators draw a seed from the global RNG when created, so a run that validated at a
    different step (an interrupted run validates where it stops) would continue with other dropout
    masks. The RNG is snapshotted after every training batch and restored when validation ends (before
    ``last.ckpt`` is written: checkpoint callbacks run last). The logging step a resumed run needs is
    logged by the LightningModule itself (see ``TransformerSystem.training_step``).
    """

    def __init__(self) -> None:
        self._rng: dict[str, Any] | None = None

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        self._rng = rng_state()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._rng is not None and trainer.state.fn == "fit":
            set_rng_state(self._rng)


class FinishWithValidation(pl.Callback):
    """Sets ``trainer.should_stop`` at the last step / last batch of the last epoch, which makes
    Lightning run a validation there (it does not on reaching max_steps by itself)."""

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        last_step = trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps
        last_epoch = (
            trainer.max_epochs is not None
            and trainer.max_epochs > 0
            and batch_idx + 1 >= trainer.num_training_batches
            and trainer.current_epoch + 1 >= trainer.max_epochs
        )
        if last_step or last_epoch:
            trainer.should_stop = True
