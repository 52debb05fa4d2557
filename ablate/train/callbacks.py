"""Lightning plumbing for a run directory: atomic checkpoints, last.ckpt, progress.json, throughput, a
progress display, and the final validation.

- :class:`AtomicCheckpointIO`: Lightning 2.6's ``_atomic_save`` writes through fsspec's transaction,
  whose temporary file lives in the system temp dir; ``shutil.move`` across file systems (``/tmp`` ->
  a cluster's shared disk) is a copy, so a crash can leave a torn checkpoint. Here the temporary file
  is a sibling of the target, fsynced, then ``os.replace``d: the target is always old or new, never partial.
- :class:`LastCheckpoint`: ``checkpoints/last.ckpt`` after every validation and every
  ``every_steps`` optimizer steps (what a preempted SLURM job resumes from).
- :class:`FinishWithValidation`: asks Lightning to stop (and so validate) at the final step or epoch,
  so the last weights are always validated and are a candidate for ``best.ckpt``.
- :class:`RunMonitor`: tokens/s, ``progress.json`` (rewritten atomically at each log step) and a progress
  display (a rich bar on a terminal, one line per log step otherwise, e.g. in a SLURM log).
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO

from ablate.atomic import atomic_open, atomic_write_json


def rng_state() -> dict[str, Any]:
    """Global torch / CUDA / Python / NumPy RNG states, as tensors and plain values (weights_only-loadable)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    numpy_state = [kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(gauss)]
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": numpy_state}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class AtomicCheckpointIO(TorchCheckpointIO):
    """torch.save into a sibling temporary file, fsync, os.replace (see the module docstring)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None) -> None:
        with atomic_open(path) as f:
            torch.save(checkpoint, f)  # streamed to disk, not held twice in memory


class LastCheckpoint(pl.Callback):
    """Writes ``<dirpath>/last.ckpt`` after each validation and every ``every_steps`` optimizer steps."""

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
    """What a resumed run needs to retrace an uninterrupted one exactly.

    - Validation must not move the training RNG: DataLoader iterators draw a seed from the global RNG
      when created, so a run that validated at a different step (an interrupted run validates where it
      stops) would continue with other dropout masks. The RNG is snapshotted after every training batch
      and restored when validation ends (before ``last.ckpt`` is written, so this callback goes first).
    - Lightning restores its logging step one short when the checkpoint was written in
      ``on_validation_end`` at a stop; without multiple optimizers it always equals ``global_step``.
    """

    def __init__(self) -> None:
        self._rng: dict[str, Any] | None = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        trainer.fit_loop.epoch_loop._batches_that_stepped = trainer.global_step

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        self._rng = rng_state()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._rng is not None and trainer.state.fn == "fit":
            set_rng_state(self._rng)


class FinishWithValidation(pl.Callback):
    """Sets ``trainer.should_stop`` at the last step / last batch of the last epoch, which makes
    Lightning run a validation there (it does not on reaching max_steps by itself)."""

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        last_step = trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps
        epoch_loop = trainer.fit_loop.epoch_loop
        last_epoch = (
            trainer.max_epochs is not None
            and trainer.max_epochs > 0
            and epoch_loop.batch_progress.is_last_batch
            and trainer.current_epoch + 1 >= trainer.max_epochs
        )
        if last_step or last_epoch:
            trainer.should_stop = True


def _fmt_time(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "?"
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class RunMonitor(pl.Callback):
    """Throughput, progress.json and the progress display (see the module docstring).

    Training time excludes validation, so ``tokens_per_sec`` measures training alone. Under DDP the
    rank-0 token count is multiplied by the world size (ranks see equal numbers of batches).
    """

    def __init__(self, run_dir: str | Path | None, log_every_steps: int = 50, show: bool = True) -> None:
        self.path = Path(run_dir) / "progress.json" if run_dir is not None else None
        self.log_every = max(1, log_every_steps)
        self.show = show
        self.train_seconds = 0.0
        self.tokens = 0
        self._mark = 0.0
        self._t_fit = 0.0
        self._start_step = 0
        self._window: tuple[float, int] = (0.0, 0)  # (train seconds, tokens) at the last log step
        self.last: dict[str, Any] = {}
        self._bar: Any = None
        self._task: Any = None

    # -- timing: wall time from batch end to batch end (data loading included), validation excluded --
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._t_fit = self._mark = time.monotonic()
        self._start_step = trainer.global_step
        self._base_tokens = getattr(pl_module, "train_tokens", 0)
        if self.show and trainer.is_global_zero and sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("step {task.completed}/{task.total}"), BarColumn(),
                                 TextColumn("{task.fields[info]}"), TimeRemainingColumn(), transient=False)
            self._task = self._bar.add_task("train", total=trainer.max_steps, completed=trainer.global_step, info="")
            self._bar.start()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._mark = time.monotonic()

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any) -> None:
        now = time.monotonic()
        self.train_seconds += now - self._mark
        self._mark = now
        self.tokens = (getattr(pl_module, "train_tokens", 0) - self._base_tokens) * trainer.world_size
        step = trainer.global_step
        if step and step % self.log_every == 0 and trainer.is_global_zero:
            self._report(trainer, pl_module, step)
        if self._bar is not None:
            self._bar.update(self._task, completed=step)

    def _report(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> None:
        secs, toks = self.train_seconds - self._window[0], self.tokens - self._window[1]
        self._window = (self.train_seconds, self.tokens)
        tps = toks / secs if secs > 0 else 0.0
        pl_module.log("train/tokens_per_sec", tps, rank_zero_only=True)
        metrics = trainer.callback_metrics
        elapsed = time.monotonic() - self._t_fit
        done = step - self._start_step
        eta = elapsed / done * (trainer.max_steps - step) if done > 0 and trainer.max_steps > 0 else None
        eta = _sooner(eta, _time_left(trainer))
        self.last = {
            "step": step,
            "max_steps": trainer.max_steps,
            "epoch": trainer.current_epoch,
            "train/loss": _value(metrics.get("train/loss")),
            "lr": _value(metrics.get("lr")),
            "val/ppl": _value(metrics.get("val/ppl")),
            "tokens_per_sec": round(tps, 1),
            "elapsed_s": round(elapsed, 1),
            "eta_s": round(eta, 1) if eta is not None else None,
            "updated": time.time(),
        }
        if self.path is not None:
            atomic_write_json(self.path, self.last)
        info = (f"loss {self.last['train/loss'] or float('nan'):.3f} | lr {self.last['lr'] or 0:.2e} | "
                f"{tps:,.0f} tok/s | val/ppl {self.last['val/ppl'] or float('nan'):.2f}")
        if self._bar is not None:
            self._bar.update(self._task, info=info)
        elif self.show:
            print(f"step {step}/{trainer.max_steps} | {info} | ETA {_fmt_time(eta)}", file=sys.stderr, flush=True)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    @property
    def tokens_per_sec(self) -> float:
        return self.tokens / self.train_seconds if self.train_seconds > 0 else 0.0


def _value(x: Any) -> float | None:
    if x is None:
        return None
    return float(x.item() if isinstance(x, torch.Tensor) else x)


def _time_left(trainer: pl.Trainer) -> float | None:
    """Seconds until train.max_time_minutes stops the run (Lightning's Timer), if a limit is set."""
    from lightning.pytorch.callbacks import Timer

    for cb in trainer.callbacks:  # type: ignore[attr-defined]
        if isinstance(cb, Timer):
            left = cb.time_remaining("train")
            return None if left is None else max(0.0, float(left))
    return None


def _sooner(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)
