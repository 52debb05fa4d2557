"""Throughput, ``progress.json`` and the progress display of a training run.

:class:`RunMonitor`: tokens/s, ``progress.json`` (rewritten atomically at each log step, through
:class:`ablate.rundir.RunDir`) and a progress display (a rich bar on a terminal, one line per log step
otherwise, e.g. in a SLURM log).

Why not Lightning's own: its progress bars count the batches of one epoch and start again each epoch,
while a run's budget is optimizer steps across epochs (11.5 epochs for the Multi30k recipe), so this
bar counts steps to ``max_steps`` with an ETA that also respects ``train.max_time_minutes``. Its
``ThroughputMonitor`` counts every batch the loader yields; tokens/s here counts the real (non-pad)
target tokens the loss saw, which is what the table's cost columns and the benchmarks compare.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch

from ablate.rundir import RunDir


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
        self.run_dir = RunDir(run_dir) if run_dir is not None else None
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

            self._bar = Progress(
                TextColumn("step {task.completed}/{task.total}"),
                BarColumn(),
                TextColumn("{task.fields[info]}"),
                TimeRemainingColumn(),
                transient=False,
            )
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
        if self.run_dir is not None:
            self.run_dir.write_progress(self.last)
        info = progress_info(self.last, tps)
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


def progress_info(last: dict[str, Any], tps: float) -> str:
    """The progress line's figures; one not measured yet (dev PPL before the first validation) is "-",
    not "nan", which reads as a diverged run."""

    def shown(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    return (
        f"loss {shown(last.get('train/loss'), '.3f')} | lr {shown(last.get('lr'), '.2e')} | "
        f"{tps:,.0f} tok/s | val/ppl {shown(last.get('val/ppl'), '.2f')}"
    )
