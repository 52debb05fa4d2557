"""TransformerSystem: the one LightningModule every trial trains (the paper's recipe, section 5).

Its hyperparameters are primitives (the model section as a plain dict, the vocabulary size, numbers):
``save_hyperparameters()`` stores them, so a checkpoint alone rebuilds the model with
``TransformerSystem.load_from_checkpoint`` and unpickles no ablate class. The model section is turned
into its one shape (a frozen ``ModelConfig``) once, here, and built from that.

- Loss: label-smoothed cross-entropy, padding ignored, averaged over the batch's target tokens (5.4);
  projected and softmaxed only at real target positions, a chunk of rows at a time (losses.py).
- Optimizer: the ``optimizer`` and ``schedule`` slots (ablate/recipe/); by
  default the paper's Adam(beta1 0.9, beta2 0.98, eps 1e-9) with the warm-up / inverse-sqrt schedule
  (5.3), stepped per optimizer update. An optimizer with ``train()`` / ``eval()`` (schedule-free ones)
  is switched to its evaluation weights around validation and at the end of training; checkpoints
  hold its mode, so a resume retraces the uninterrupted run.
- Validation: ``val/nll`` (unsmoothed, the token-weighted mean over the whole dev set: torchmetrics'
  ``MeanMetric`` in float64, which sums over every rank) and ``val/ppl = exp(val/nll)`` every
  validation. Dev BLEU during training is a callback (:class:`ablate.eval.callback.DevBleu`); how to
  decode is not the module's business.
- The RNG state of every rank is saved in checkpoints and restored when training resumes, so a
  resumed run draws the same dropout masks as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
import torch.distributed as dist
from torchmetrics import MeanMetric

from ablate.config import ModelConfig, model_section
from ablate.errors import TrainingDiverged
from ablate.model.build import build_model
from ablate.recipe import Horizon, Shared, optimizer_of, schedule_of, scheduler
from ablate.rundir import CheckpointUnreadable
from ablate.train.graphs import step_features
from ablate.train.losses import linear_label_smoothed_loss
from ablate.train.rng import rng_state, set_rng_state


class TransformerSystem(pl.LightningModule):
    def __init__(
        self,
        model: dict[str, Any] | ModelConfig,
        vocab_size: int,
        pad_id: int = 0,
        bos_id: int = 2,
        eos_id: int = 3,
        label_smoothing: float = 0.1,
        lr_factor: float = 1.0,
        warmup_steps: int = 4000,
        adam_beta1: float = 0.9,
        adam_beta2: float = 0.98,
        adam_eps: float = 1e-9,
        weight_decay: float = 0.0,
        compile: bool = False,
        cuda_graphs: bool = False,
        optimizer: Any = "adam",
        schedule: Any = "noam",
        lr: float | None = None,
        max_steps: int = 0,
    ) -> None:
        super().__init__()
        section = model_section(model, "TransformerSystem(model=...)")
        model = dataclasses.asdict(section)  # the hyperparameter stays a plain dict (see the module docstring)
        self.save_hyperparameters()
        self.model = build_model(section, vocab_size, pad_id)
        self._features: Any = None  # the (compiled) training forward, made at the first step
        self.d_model = section.d_model
        self.dev_nll = MeanMetric().set_dtype(torch.float64)  # weighted by target tokens: a corpus mean
        self._pending_rng: dict[str, Any] | None = None
        self.train_tokens = 0  # target tokens seen by this rank since the start (or resume) of fit

    # -- training ------------------------------------------------------------------------------------
    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        """(source, target inputs) of the translator, (tokens,) of a language model -> logits."""
        return self.model(*inputs)

    def _real_positions(
        self, batch: dict[str, torch.Tensor], training: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Decoder hidden states [N, D] and targets [N] at the N real (non-pad) target positions: padded
        positions never pay the V-way projection and softmax."""
        target = batch["tgt_out"]
        real = target != self.model.pad_id
        hidden = self._features_for(training)(*self.model.batch_inputs(batch))
        return hidden[real], target[real]

    def _features_for(self, training: bool) -> Any:
        """``model.features`` as the step runs it (:func:`ablate.train.graphs.step_features`: eager, compiled
        or CUDA graphs). The weights stay the model's own, so checkpoints load with or without either;
        validation under CUDA graphs (exact, unbucketed shapes) and decoding run eager."""
        if not training and self.hparams.get("cuda_graphs"):
            return self.model.features
        if self._features is None:
            on_cuda = next(self.model.parameters()).is_cuda
            hp = self.hparams
            self._features = step_features(
                self.model.features,
                compile=bool(hp.get("compile")),
                cuda_graphs=bool(hp.get("cuda_graphs")),
                on_cuda=on_cuda,
            )
        return self._features

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        hidden, target = self._real_positions(batch)
        n_tokens = target.numel()  # known from the shape: no device sync
        loss_sum = linear_label_smoothed_loss(hidden, self.model.output_weight, target, self.hparams.label_smoothing)
        loss = loss_sum / max(n_tokens, 1)
        self._note_finite(loss)
        self.train_tokens += n_tokens
        # No prog_bar: Lightning turns progress-bar metrics into Python numbers at every step (a host sync
        # each), and its bar is off (ablate.train.monitor draws one from trainer.callback_metrics).
        self.log("train/loss", loss, on_step=True)
        # The row's step (metrics.csv, W&B's trainer/global_step): the optimizer steps done before this
        # batch. Lightning's own logging counter comes back one off after some resumes; a logged "step"
        # is its public way to set the step (LoggerConnector.log_metrics takes it as the row's step).
        self.log("step", float(self.global_step), on_step=True, on_epoch=False)
        return loss

    _first_bad: torch.Tensor | None = None  # on the device: the first step whose loss was not finite (-1: none)

    def _note_finite(self, loss: torch.Tensor) -> None:
        """Remember, on the device, the first step whose loss is NaN or infinite: no host sync per step
        (a Python ``if`` on the loss waited for the GPU at every step); :meth:`check_finite` looks."""
        device = loss.device
        if self._first_bad is None or self._first_bad.device != device:
            self._first_bad = torch.full((), -1, dtype=torch.long, device=device)
        here = torch.full((), self.global_step + 1, dtype=torch.long, device=device)  # a fill: no copy, no sync
        bad = ~torch.isfinite(loss.detach()) & (self._first_bad < 0)
        self._first_bad = torch.where(bad, here, self._first_bad)

    def check_finite(self) -> None:
        """Raise TrainingDiverged if a loss since the start was not finite (one host sync)."""
        if self._first_bad is not None and (first := int(self._first_bad)) > 0:
            raise TrainingDiverged(
                f"loss became NaN or infinite at step {first}; lower train.lr_factor or raise train.warmup_steps"
            )

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        """Look for a diverged loss at the logging interval and at the last step (not at every step:
        each look waits for the device)."""
        trainer = self.trainer
        step, last = trainer.global_step, 0 < trainer.max_steps <= trainer.global_step
        if last or step % max(1, int(trainer.log_every_n_steps)) == 0:
            self.check_finite()

    def on_train_end(self) -> None:
        self.check_finite()  # also when training stopped between looks (max_epochs, max_time, a signal)
        self._optimizer_mode("eval")  # the final scores are of the evaluation weights

    def configure_optimizers(self) -> Any:
        hp = self.hparams
        shared = Shared(betas=(hp.adam_beta1, hp.adam_beta2), eps=hp.adam_eps, weight_decay=hp.weight_decay)
        opt = optimizer_of(hp.get("optimizer", "adam")).build(self.model, shared)
        horizon = Horizon(hp.get("lr"), hp.warmup_steps, int(hp.get("max_steps") or 0), self.d_model, hp.lr_factor)
        sched = scheduler(opt, schedule_of(hp.get("schedule", "noam")), horizon)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step", "frequency": 1}}

    def _optimizer_mode(self, mode: str) -> None:
        """``optimizer.train()`` / ``.eval()`` where the optimizer has them (schedule-free: the averaged
        weights are the ones to evaluate and to keep at the end)."""
        for opt in self.trainer.optimizers:
            switch = getattr(opt, mode, None)
            if callable(switch):
                switch()

    def on_train_start(self) -> None:
        self._optimizer_mode("train")

    def on_validation_start(self) -> None:
        self._optimizer_mode("eval")

    def on_validation_end(self) -> None:
        # after the callbacks' on_validation_end: last.ckpt and best.ckpt hold the evaluated weights
        self._optimizer_mode("train")

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        if self._pending_rng is not None:  # restore after Lightning has finished its own set-up draws
            set_rng_state(self._pending_rng)
            self._pending_rng = None

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        self.log("lr", optimizer.param_groups[0]["lr"], on_step=True)

    # -- validation ----------------------------------------------------------------------------------
    def on_validation_epoch_start(self) -> None:
        self.dev_nll.reset()

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        hidden, target = self._real_positions(batch, training=False)
        if target.numel():
            nll = linear_label_smoothed_loss(hidden, self.model.output_weight, target, 0.0)
            self.dev_nll.update(nll.double() / target.numel(), weight=target.numel())

    def on_validation_epoch_end(self) -> None:
        # compute() sums value x weight and the weights over every rank: an exact corpus mean, not a
        # mean of the ranks' means. The logged numbers are the same on every rank, so sync_dist's mean
        # leaves them as they are (and Lightning does not warn about epoch-level values under DDP).
        nll = self.dev_nll.compute().float()
        self.log("val/nll", nll, sync_dist=True)
        self.log("val/ppl", torch.exp(nll), prog_bar=True, sync_dist=True)
        self.log("step", float(self.global_step - 1), sync_dist=True)  # the label of the last training row

    # -- checkpoint state ----------------------------------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # Called on every rank before rank 0 writes: gather each rank's RNG so each resumes its own stream.
        state = rng_state()
        if dist.is_available() and dist.is_initialized() and self.trainer.world_size > 1:
            states: list[Any] = [None] * dist.get_world_size()
            dist.all_gather_object(states, state)
        else:
            states = [state]
        checkpoint["ablate_rng"] = states

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        states = checkpoint.get("ablate_rng")
        if states:
            rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
            self._pending_rng = states[rank] if rank < len(states) else states[0]


def read_checkpoint(path: str | Path, **kwargs: Any) -> dict[str, Any]:
    """``torch.load`` of a Lightning checkpoint, or :class:`CheckpointUnreadable` (one line) when the file
    is empty, cut short or something else: torch raises EOFError, a zip-reader RuntimeError, an
    UnpicklingError or an OSError there, each a traceback of its own."""
    try:
        ckpt = torch.load(path, weights_only=False, **kwargs)
    except (EOFError, RuntimeError, OSError, pickle.UnpicklingError, ValueError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointUnreadable(f"{path}: not a readable checkpoint (empty or cut short? {why})") from None
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise CheckpointUnreadable(f"{path}: not a Lightning checkpoint (no state_dict)")
    return ckpt


def load_system(path: str | Path, map_location: Any = "cpu") -> TransformerSystem:
    """A TransformerSystem from a checkpoint. Checkpoints of older ablate versions also hold the decoding
    settings as hyperparameters (beam_size, length_penalty, ...): they now come from the run's
    ``eval`` config, so hyperparameters the constructor no longer takes are dropped."""
    ckpt = read_checkpoint(path, map_location=map_location)
    known = set(inspect.signature(TransformerSystem.__init__).parameters) - {"self"}
    hparams = {k: v for k, v in ckpt.get("hyper_parameters", {}).items() if k in known}
    system = TransformerSystem(**hparams)
    system.load_state_dict(ckpt["state_dict"])
    return system.to(map_location)


def checkpoint_step(path: str | Path) -> int:
    """The optimizer step a Lightning checkpoint was written at (memory-mapped: the weights are not read)."""
    try:
        ckpt = read_checkpoint(path, map_location="cpu", mmap=True)
    except CheckpointUnreadable:  # a file system without mmap: read it whole before calling it broken
        ckpt = read_checkpoint(path, map_location="cpu")
    return int(ckpt.get("global_step", 0))
