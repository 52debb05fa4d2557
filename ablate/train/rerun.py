"""``ablate eval``: re-evaluate a finished run's checkpoint on a whole split.

It lives in ``train/`` because it loads the LightningModule (``train.system``) to read the checkpoint;
``eval/`` holds the decoding and scoring it uses and imports nothing from ``train/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ablate.family import EvalOptions, family_of
from ablate.rundir import RunDir, RunDirError, safe_name


def _checkpoint_path(rd: RunDir, checkpoint: str) -> Path:
    path = {"best": rd.best_ckpt, "last": rd.last_ckpt}.get(checkpoint, Path(checkpoint))
    if not path.is_file():
        raise RunDirError(f"{path}: no such checkpoint (use --checkpoint best, last or a .ckpt path)")
    return path


def evaluate_run(
    run_dir: str | Path,
    split: str = "test",
    beam_size: int | None = None,
    checkpoint: str = "best",
    *,
    print_results: bool = True,
) -> dict[str, Any]:
    """Re-evaluate a run's checkpoint (``best`` | ``last`` | a path) on the whole ``split``: NLL, PPL, BLEU.

    Decoding settings come from the run's ``eval`` config (``beam_size`` overrides its beam)."""
    from ablate.config import from_dict, read_yaml
    from ablate.data.prepare import prepare_data
    from ablate.devices import device_kind
    from ablate.train.system import checkpoint_step, load_system

    rd = RunDir(run_dir)
    if not rd.config.is_file():
        raise RunDirError(f"{rd.path}: not a run directory (no config.yaml); pass one written by `ablate train`")
    if beam_size is not None and beam_size < 1:
        raise RunDirError(f"--beam must be >= 1, got {beam_size}")
    cfg = from_dict(read_yaml(rd.config), source=str(rd.config))
    path = _checkpoint_path(rd, checkpoint)
    prepared = prepare_data(cfg.data, progress=False)
    if split not in prepared.splits:
        raise RunDirError(f"split {split!r} is not in the run's data (has: {', '.join(prepared.splits)})")
    device = "cuda" if device_kind(cfg.trainer.accelerator) == "gpu" else "cpu"
    model = load_system(path, map_location=device).model
    prefix = {cfg.data.valid_split: "val", cfg.data.test_split: "test"}.get(split, split)
    options = EvalOptions(beam_size=beam_size, device=device)
    scores, hypotheses = family_of(cfg).eval_scores(cfg, model, prepared, split, prefix, options)
    beam = scores.pop("beam_size", None)  # a family that decodes says with which beam
    metrics = {**scores, "checkpoint": str(path), "checkpoint_step": checkpoint_step(path), "split": split}
    metrics.update({} if beam is None else {"beam_size": beam})
    name = eval_name(split, checkpoint, None if beam is None else beam_size)
    return _report(rd, name, metrics, hypotheses, print_results)


def _report(rd: RunDir, name: str, metrics: dict[str, Any], hypotheses: list[str], show: bool) -> dict[str, Any]:
    written = write_eval(rd, name, metrics, hypotheses)
    if show:
        for key, value in metrics.items():
            print(f"{key:<24} {value:.4f}" if isinstance(value, float) else f"{key:<24} {value}")
        print(f"written: {written[0]} and {written[1].name}")
    return metrics


def eval_name(split: str, checkpoint: str, beam_size: int | None) -> str:
    """``eval-<split>-<checkpoint>[-beam<N>]``: the stem of an `ablate eval`'s files in ``outputs/``."""
    label = checkpoint if checkpoint in ("best", "last") else Path(checkpoint).stem
    label = safe_name(label, keep="-_.")
    return f"eval-{split}-{label}" + (f"-beam{beam_size}" if beam_size is not None else "")


def write_eval(rd: RunDir, name: str, metrics: dict[str, Any], hypotheses: list[str]) -> tuple[Path, Path]:
    """``outputs/<name>.json`` (the metrics) and ``outputs/<name>.hyp`` (the hypotheses) of a run directory."""
    from ablate.atomic import atomic_write_json

    rd.write_hypotheses(name, hypotheses)
    hyp = rd.hyp_file(name)
    atomic_write_json(hyp.with_suffix(".json"), metrics)
    return hyp.with_suffix(".json"), hyp
