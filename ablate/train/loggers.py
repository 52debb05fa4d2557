"""Loggers of a run: CSV always (``metrics.csv`` in the run directory), W&B unless disabled.

:class:`MetricsCSV` writes ``metrics.csv`` through Lightning's public ``Logger`` interface. Lightning's
own CSVLogger deletes an existing ``metrics.csv`` when its folder is not empty, which would erase a
resumed run's history, and it offers no public way to keep the file (the only way round it was to
override a private method of its writer). This one keeps the file, drops the rows labelled at or
after the step of the checkpoint being resumed (they are logged again, from the same state) and
appends; a new column rewrites the file with the wider header, as Lightning's does.

W&B goes through Lightning's WandbLogger: offline unless an API key is configured (``logging.wandb:
auto``), never blocking on the network, with a deterministic run id and ``resume="allow"`` so that a
resumed run appends to its own W&B run.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.loggers import Logger
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig

from ablate.config import to_dict
from ablate.tracking import wandb_mode


def _step(row: dict[str, str]) -> int:
    try:
        return int(float(row.get("step") or 0))
    except ValueError:
        return 0


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def _write(path: Path, keys: list[str], rows: list[dict[str, Any]], mode: str = "w") -> None:
    with open(path, mode, newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        if mode == "w":
            writer.writeheader()
        writer.writerows(rows)


class MetricsCSV(Logger):
    """``<save_dir>/metrics.csv``: one row per logging call (``step`` plus the metrics), kept across a
    resume: rows labelled at or after ``resume_step`` (the checkpoint's step) are dropped when the logger
    first saves."""

    def __init__(self, save_dir: str | Path, resume_step: int | None = None) -> None:
        super().__init__()
        self._dir = Path(save_dir)
        self._path = self._dir / "metrics.csv"
        self._keys: list[str] = []
        self._rows: list[dict[str, Any]] = []
        self._resume_step = resume_step
        self._opened = False

    @property
    def name(self) -> str:
        return ""

    @property
    def version(self) -> str:
        return ""

    @property
    def save_dir(self) -> str:
        return str(self._dir)

    @property
    def log_dir(self) -> str:
        return str(self._dir)

    def _open(self) -> None:  # lazily, on rank zero only: the file is rank zero's
        self._opened = True
        self._dir.mkdir(parents=True, exist_ok=True)
        if self._path.is_file():
            self._keys, rows = _read(self._path)
            keep = [r for r in rows if self._resume_step is None or _step(r) < self._resume_step]
            _write(self._path, self._keys, keep)

    @rank_zero_only
    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass  # the run directory's config.yaml holds them

    @rank_zero_only
    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        row = {k: (v.item() if hasattr(v, "item") else v) for k, v in metrics.items()}
        row["step"] = step if step is not None else len(self._rows)
        self._rows.append(row)

    @rank_zero_only
    def save(self) -> None:
        if not self._opened:
            self._open()
        if not self._rows:
            return
        new = sorted(set().union(*self._rows) - set(self._keys))
        if new or not self._path.is_file():
            keys = sorted([*self._keys, *new])
            old = _read(self._path)[1] if self._path.is_file() else []
            _write(self._path, keys, old + self._rows)
            self._keys = keys
        else:
            _write(self._path, self._keys, self._rows, mode="a")
        self._rows = []

    @rank_zero_only
    def finalize(self, status: str) -> None:
        self.save()


def build_loggers(cfg: DictConfig, run_dir: Path, run_id: str, resume_step: int | None = None) -> list[Any]:
    """[CSV] or [CSV, W&B] for ``cfg.logging``."""
    loggers: list[Any] = [MetricsCSV(run_dir, resume_step)]
    mode = wandb_mode(cfg.logging.wandb)
    if mode != "disabled":
        import wandb
        from lightning.pytorch.loggers import WandbLogger

        lg = cfg.logging
        # flush the offline .wandb file every second (default 15 s: a SIGKILL would lose those rows)
        settings = wandb.Settings(x_transaction_log_flush_interval=1, silent=True)
        loggers.append(
            WandbLogger(
                project=lg.project,
                entity=lg.entity,
                group=lg.group,
                job_type=lg.get("job_type"),
                name=lg.name or run_dir.name,
                tags=list(lg.tags),
                id=run_id,
                resume="allow",
                save_dir=str(run_dir),
                mode=mode,
                config=to_dict(cfg),
                settings=settings,
            )
        )
    return loggers


class DefineMetrics(pl.Callback):
    """W&B's run table shows each metric's summary: the best dev PPL and NLL (min) and BLEU (max), not the
    last value logged; the val/* series are plotted against the training step (WandbLogger's own
    ``trainer/global_step``)."""

    SUMMARIES = {"val/ppl": "min", "val/nll": "min", "val/bleu": "max", "train/loss": "min"}

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not trainer.is_global_zero:
            return
        for logger in trainer.loggers:
            if type(logger).__name__ == "WandbLogger":
                run = logger.experiment
                for name, summary in self.SUMMARIES.items():
                    run.define_metric(name, step_metric="trainer/global_step", summary=summary)
