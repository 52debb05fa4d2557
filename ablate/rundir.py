"""The run-directory format: the one module that knows file names and JSON layouts of a run.

Writers (the trainer, ``ablate eval``) and readers (the sweep worker and progress display, the report,
the tests' fake trainer) all go through here, so the format lives in one place::

    <run>/config.yaml           the resolved config of the run
    <run>/provenance.json       git SHA, versions, host, devices
    <run>/checkpoints/{last,best}.ckpt
    <run>/metrics.csv           Lightning's CSV log
    <run>/progress.json         step, max_steps, train/loss, val/ppl, tokens_per_sec, elapsed_s, eta_s, status
    <run>/metrics.json          final metrics (val/*, test/*, params, step, checkpoint, ...)
    <run>/outputs/<split>.hyp   final detokenized hypotheses, one per line: the first N sentences of the
                                split's order (N = metrics.json's ``<prefix>/bleu_sentences``), i.e.
                                aligned with the references BLEU was computed against
    <run>/outputs/<split>.nll   summed NLL (natural log, EOS included) of every sentence of the split, one
                                float per line, in the split's order (for a paired bootstrap)
    <run>/wandb/                offline W&B files

No torch, no Lightning: status and report commands read run directories and must stay fast.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ablate.atomic import atomic_write_json, atomic_write_text, remove_stale_temps
from ablate.errors import AblateError


def safe_name(text: str, keep: str = "-_.=", fallback: str = "") -> str:
    """``text`` as a file or folder name: letters, digits and the characters of ``keep`` stay, every
    other character becomes ``_``, and no ``.`` or ``_`` leads or ends it (``..`` and ``.hidden`` stay
    inside their parent); ``fallback`` when nothing is left. Every name ablate makes from a user's text
    (a row, a sweep, a run, an evaluation) goes through here."""
    return "".join(c if c.isalnum() or c in keep else "_" for c in text).strip("._") or fallback


# Set by a launcher when it spawns a trial's process (time.time()), so the trial can report its start-up time.
SPAWNED_AT_ENV = "ABLATE_SPAWNED_AT"

CONFIG = "config.yaml"
PROVENANCE = "provenance.json"
PROGRESS = "progress.json"
METRICS = "metrics.json"
METRICS_CSV = "metrics.csv"
CHECKPOINTS = "checkpoints"
OUTPUTS = "outputs"


class RunDirError(AblateError):
    """A run directory cannot be used (missing files, a different config, an unknown checkpoint)."""


class CheckpointUnreadable(RunDirError):
    """A checkpoint file is empty, cut short or not a checkpoint (a full disk, a copy stopped halfway)."""


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object, or {} when the file is missing, being replaced, or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class RunDir:
    """Paths and readers/writers of one run directory."""

    path: Path

    def __init__(self, path: str | Path) -> None:
        object.__setattr__(self, "path", Path(path))

    # -- paths --
    @property
    def config(self) -> Path:
        return self.path / CONFIG

    @property
    def provenance(self) -> Path:
        return self.path / PROVENANCE

    @property
    def progress_file(self) -> Path:
        return self.path / PROGRESS

    @property
    def metrics_file(self) -> Path:
        return self.path / METRICS

    @property
    def metrics_csv(self) -> Path:
        return self.path / METRICS_CSV

    @property
    def checkpoints(self) -> Path:
        return self.path / CHECKPOINTS

    @property
    def last_ckpt(self) -> Path:
        return self.checkpoints / "last.ckpt"

    @property
    def best_ckpt(self) -> Path:
        return self.checkpoints / "best.ckpt"

    def hyp_file(self, split: str) -> Path:
        return self.path / OUTPUTS / f"{split}.hyp"

    def nll_file(self, split: str) -> Path:
        return self.path / OUTPUTS / f"{split}.nll"

    # -- readers (never raise on a missing or half-written file) --
    def read_progress(self) -> dict[str, Any]:
        return _read_json(self.progress_file)

    def read_metrics(self) -> dict[str, Any]:
        return _read_json(self.metrics_file)

    def read_provenance(self) -> dict[str, Any]:
        return _read_json(self.provenance)

    def read_curve(self, key: str) -> list[tuple[int, float]]:
        """(step, value) of every row of ``metrics.csv`` that logged ``key``, in step order, the last
        value of a step kept (empty when the file is missing or unreadable)."""
        try:
            with open(self.metrics_csv, newline="", encoding="utf-8") as f:
                rows = [(r.get("step"), r.get(key)) for r in csv.DictReader(f)]
        except OSError:
            return []
        out: dict[int, float] = {}
        for step, value in rows:
            try:
                if value not in (None, ""):
                    out[int(float(step or 0))] = float(value)
            except ValueError:
                continue
        return sorted(out.items())

    def read_hypotheses(self, split: str) -> list[str] | None:
        path = self.hyp_file(split)
        if not path.is_file():
            return None
        return path.read_text(encoding="utf-8").splitlines()

    def read_sentence_nll(self, split: str) -> list[float] | None:
        """Per-sentence NLL of ``split`` (split order), or None when the run has not written it."""
        path = self.nll_file(split)
        if not path.is_file():
            return None
        return [float(x) for x in path.read_text(encoding="utf-8").split()]

    # -- writers (atomic) --
    def write_progress(self, progress: dict[str, Any]) -> None:
        atomic_write_json(self.progress_file, progress)

    def write_metrics(self, metrics: dict[str, Any]) -> None:
        atomic_write_json(self.metrics_file, metrics)

    def write_provenance(self, provenance: dict[str, Any]) -> None:
        atomic_write_json(self.provenance, provenance)

    def write_hypotheses(self, split: str, hyps: list[str]) -> None:
        atomic_write_text(self.hyp_file(split), "".join(h + "\n" for h in hyps))

    def write_sentence_nll(self, split: str, values: list[float]) -> None:
        atomic_write_text(self.nll_file(split), "".join(f"{v!r}\n" for v in values))

    # -- upkeep --
    def remove_stale_temps(self) -> list[Path]:
        """Delete the temporary files of killed atomic writers (``.NAME.tmp-PID``) in the run directory,
        its checkpoints and its outputs; returns what was removed. Call it before anything writes."""
        return [p for folder in (self.path, self.checkpoints, self.path / OUTPUTS) for p in remove_stale_temps(folder)]


def read_progress(run_dir: str | Path) -> dict[str, Any]:
    """A run's progress.json, or {} when it is missing or being rewritten."""
    return RunDir(run_dir).read_progress()


def read_metrics(run_dir: str | Path) -> dict[str, Any]:
    """A run's final metrics.json, or {} when the run has not finished."""
    return RunDir(run_dir).read_metrics()
