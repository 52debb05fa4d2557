"""Loggers of a run: CSV always (``metrics.csv`` in the run directory), W&B unless disabled.

Lightning's CSV writer deletes an existing ``metrics.csv`` when its directory is not empty, which would
erase a resumed run's history. :class:`ResumableCSVLogger` keeps the file, continues its header, and
drops the rows logged after the checkpoint being resumed (they are logged again, from the same state).

W&B goes through Lightning's WandbLogger: offline unless an API key is configured (``logging.wandb:
auto``), never blocking on the network, with a deterministic run id and ``resume="allow"`` so that a
resumed run appends to its own W&B run.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from omegaconf import DictConfig

from ablate.config import to_dict
from ablate.tracking import wandb_mode


class _AppendingWriter(ExperimentWriter):
    def __init__(self, log_dir: str, keep_below_step: int | None) -> None:
        self._keep_below = keep_below_step
        super().__init__(log_dir=log_dir)

    def _check_log_dir_exists(self) -> None:  # called by the base __init__: keep (and trim) the old file
        path = Path(self.metrics_file_path)
        if not path.is_file():
            return
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            keys = list(reader.fieldnames or [])
            rows = [r for r in reader if self._keep_below is None or _step(r) < self._keep_below]
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=keys)
            writer.writeheader()
            writer.writerows(rows)
        self.metrics_keys = sorted(keys)


def _step(row: dict[str, str]) -> int:
    try:
        return int(float(row.get("step") or 0))
    except ValueError:
        return 0


class ResumableCSVLogger(CSVLogger):
    """CSVLogger writing ``<save_dir>/metrics.csv``, appending to it when a run resumes."""

    def __init__(self, save_dir: str | Path, resume_step: int | None = None) -> None:
        super().__init__(save_dir=save_dir, name="", version="")
        self._resume_step = resume_step

    @property
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _AppendingWriter(self.log_dir, self._resume_step)
        return self._experiment


def build_loggers(cfg: DictConfig, run_dir: Path, run_id: str, resume_step: int | None = None) -> list[Any]:
    """[CSV] or [CSV, W&B] for ``cfg.logging``."""
    loggers: list[Any] = [ResumableCSVLogger(run_dir, resume_step)]
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
