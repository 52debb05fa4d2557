"""One trial, end to end: ``train(cfg)`` and ``evaluate_run(run_dir)`` (the engine behind `ablate train` / `eval`).

prepare_data -> TranslationDataModule -> TranslationSystem -> Trainer.fit -> best checkpoint -> dev BLEU
(beam search) and test metrics -> ``metrics.json``. The run directory layout is the contract in
docs/architecture.md; an existing ``checkpoints/last.ckpt`` in it is resumed.
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from ablate.config import from_dict, read_yaml, save_config, to_dict
from ablate.errors import AblateError
from ablate.atomic import atomic_write_json
from ablate.train.loggers import build_loggers
from ablate.train.rundir import (
    check_resumable,
    config_hash,
    make_run_dir,
    provenance,
    resolve_precision,
    wandb_mode,
    wandb_run_id,
)


class RunDirError(AblateError):
    """A run directory cannot be used (missing files, a different config, an unknown checkpoint)."""


def system_kwargs(cfg: DictConfig, vocab_size: int) -> dict[str, Any]:
    """The TranslationSystem's primitive hyperparameters from a resolved config."""
    from ablate.data.tokenizer import BOS_ID, EOS_ID, PAD_ID

    t, e = cfg.train, cfg.eval
    return dict(
        model=to_dict(cfg)["model"],
        vocab_size=int(vocab_size),
        pad_id=PAD_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        label_smoothing=float(t.label_smoothing),
        lr_factor=float(t.lr_factor),
        warmup_steps=int(t.warmup_steps),
        adam_beta1=float(t.adam_beta1),
        adam_beta2=float(t.adam_beta2),
        adam_eps=float(t.adam_eps),
        weight_decay=float(t.weight_decay),
        beam_size=int(e.beam_size),
        length_penalty=float(e.length_penalty),
        max_len_a=float(e.max_len_a),
        max_len_b=int(e.max_len_b),
        eval_batch_size=int(e.batch_size),
        bleu_every=int(e.bleu_every),
        tokenized_bleu=bool(e.tokenized_bleu),
    )


def bleu_set(prepared: Any, split: str, limit: int | None = None) -> Any:
    """Source ids (+EOS), raw target references and the detokenizer for ``split`` (first ``limit`` rows)."""
    from ablate.data.tokenizer import EOS_ID
    from ablate.train.evaluate import BleuSet

    shard = prepared.split(split)
    n = len(shard) if limit is None else min(limit, len(shard))
    sources = [[*shard.src(i).tolist(), EOS_ID] for i in range(n)]
    refs = prepared.raw(split, "tgt")[:n]
    return BleuSet(sources=sources, references=refs, detokenize=prepared.tokenizer.decode)


def evaluate_split(system: Any, dm: Any, prepared: Any, split: str, prefix: str, cfg: DictConfig,
                   beam_size: int | None = None, device: Any = None) -> tuple[dict[str, Any], list[str]]:
    """``{prefix}/nll, /ppl, /bleu, /bleu_signature[, /bleu_tok]`` of ``split`` and the hypotheses."""
    from ablate.train.evaluate import corpus_nll, score_bleu

    model = system.model
    meter = corpus_nll(model, dm._loader(split, dm.eval_sampler(split)), device=device)
    hp = system.hparams
    bleu = score_bleu(model, bleu_set(prepared, split), beam_size=beam_size or cfg.eval.beam_size,
                      alpha=hp.length_penalty, max_len_a=hp.max_len_a, max_len_b=hp.max_len_b,
                      batch_size=hp.eval_batch_size, bos_id=hp.bos_id, eos_id=hp.eos_id,
                      tokenized=bool(cfg.eval.tokenized_bleu), device=device)
    out = {f"{prefix}/nll": meter.nll, f"{prefix}/ppl": meter.ppl, f"{prefix}/bleu": bleu["bleu"],
           f"{prefix}/bleu_signature": bleu["bleu_signature"], f"{prefix}/tokens": meter.tokens}
    if "bleu_tok" in bleu:
        out[f"{prefix}/bleu_tok"] = bleu["bleu_tok"]
    return out, bleu["hypotheses"]


class _NoLightningTips(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "\N{ELECTRIC LIGHT BULB} Tip:" not in record.getMessage()


def quiet_lightning() -> None:
    """Drop Lightning messages that are noise here, each one by its text (no blanket filters)."""
    if "SLURM_JOB_ID" not in os.environ:
        # srun on PATH (a login node, a workstation with the SLURM client) is no reason to warn a run
        # that SLURM did not start; inside a SLURM job the hint stays.
        warnings.filterwarnings("ignore", message="The `srun` command is available on your system")
    # Lightning 2.6 calls a torch.utils._pytree API that torch 2.13 deprecates: nothing a user can act on.
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _NoLightningTips) for f in logger.filters):
            logger.addFilter(_NoLightningTips())  # advertisements for Lightning's cloud services


def train(
    cfg: DictConfig,
    output_dir: str | Path | None = None,
    *,
    resume: bool = True,
    trainer_kwargs: dict[str, Any] | None = None,
    wandb_id: str | None = None,
) -> dict[str, Any]:
    """Train and evaluate one configuration; returns (and writes to metrics.json) the final metrics."""
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import ModelCheckpoint

    from ablate.data.datamodule import TranslationDataModule
    from ablate.data.prepare import prepare_data
    from ablate.train.callbacks import (
        AtomicCheckpointIO,
        FinishWithValidation,
        LastCheckpoint,
        ResumeConsistency,
        RunMonitor,
    )
    from ablate.train.system import TranslationSystem

    t0 = time.monotonic()
    run_dir = Path(output_dir) if output_dir is not None else make_run_dir(cfg)
    ckpt_dir = run_dir / "checkpoints"
    last = ckpt_dir / "last.ckpt"
    resuming = resume and last.is_file()
    if resuming:
        check_resumable(run_dir, cfg, RunDirError)
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(cfg, run_dir / "config.yaml")
    t, tr = cfg.train, cfg.trainer

    prepared = prepare_data(cfg.data, progress=cfg.logging.progress_bar)
    dm = TranslationDataModule(prepared.dir, cfg.data.max_tokens, t.seed, cfg.data.valid_split,
                               cfg.data.test_split, num_workers=cfg.data.num_workers)
    pl.seed_everything(t.seed, workers=True, verbose=False)
    system = TranslationSystem(**system_kwargs(cfg, prepared.vocab_size))
    system.bleu_set = bleu_set(prepared, cfg.data.valid_split, cfg.eval.bleu_max_sentences)

    run_id = wandb_id or wandb_run_id(cfg, run_dir)
    monitor = RunMonitor(run_dir, t.log_every_steps, show=cfg.logging.progress_bar)
    best = ModelCheckpoint(dirpath=ckpt_dir, filename="best", monitor="val/ppl", mode="min", save_top_k=1,
                           auto_insert_metric_name=False, enable_version_counter=False, save_last=False)
    kwargs: dict[str, Any] = dict(
        accelerator=tr.accelerator, devices=tr.devices, strategy=tr.strategy, num_nodes=tr.num_nodes,
        precision=resolve_precision(tr.precision, tr.accelerator), deterministic=tr.deterministic,
        max_steps=t.max_steps, max_epochs=t.max_epochs if t.max_epochs is not None else -1,
        max_time={"minutes": t.max_time_minutes} if t.max_time_minutes else None,
        accumulate_grad_batches=t.accumulate_grad_batches,
        val_check_interval=t.val_every_steps * t.accumulate_grad_batches, check_val_every_n_epoch=None,
        log_every_n_steps=t.log_every_steps, gradient_clip_val=t.grad_clip or None,
        logger=build_loggers(cfg, run_dir, run_id, _checkpoint_step(last) if resuming else None),
        default_root_dir=run_dir, num_sanity_val_steps=0,
        callbacks=[ResumeConsistency(), monitor, FinishWithValidation(),
                   LastCheckpoint(ckpt_dir, t.checkpoint_every_steps), best],
        plugins=[AtomicCheckpointIO()], use_distributed_sampler=False,  # the batch sampler splits by rank
        enable_progress_bar=False, enable_model_summary=False,
    )
    kwargs.update(trainer_kwargs or {})
    quiet_lightning()
    trainer = pl.Trainer(**kwargs)
    if trainer.is_global_zero:
        atomic_write_json(run_dir / "provenance.json", provenance(cfg, trainer, resumed=resuming))
    status = "failed"
    try:
        trainer.fit(system, datamodule=dm, ckpt_path=str(last) if resuming else None)
        if not trainer.is_global_zero:
            status = "done"
            return {}
        metrics = _final_metrics(cfg, trainer, system, dm, prepared, run_dir, best, monitor, t0, run_id)
        for logger in trainer.loggers:
            logger.log_metrics({k: v for k, v in metrics.items() if isinstance(v, float)}, step=trainer.global_step)
            logger.save()
        status = "done"
        return metrics
    finally:
        if trainer.is_global_zero:
            atomic_write_json(run_dir / "progress.json", {**monitor.last, "status": status,
                                                          "elapsed_s": round(time.monotonic() - t0, 1)})
        _finish_wandb(trainer, status)


def _checkpoint_step(path: Path) -> int:
    import torch

    return int(torch.load(path, map_location="cpu", mmap=True, weights_only=False)["global_step"])


def _final_metrics(cfg: DictConfig, trainer: Any, system: Any, dm: Any, prepared: Any, run_dir: Path,
                   best: Any, monitor: Any, t0: float, run_id: str) -> dict[str, Any]:
    """Dev and test metrics of the best checkpoint (by val/ppl) -> metrics.json and hypothesis files."""
    import torch

    from ablate.model.build import count_parameters

    device = system.device
    used = "last"
    if best.best_model_path and Path(best.best_model_path).is_file():
        state = torch.load(best.best_model_path, map_location=device, weights_only=False)["state_dict"]
        system.load_state_dict(state)
        used = "best"
    metrics: dict[str, Any] = {}
    outputs = run_dir / "outputs"
    outputs.mkdir(exist_ok=True)
    splits = [("val", cfg.data.valid_split)] + ([("test", cfg.data.test_split)] if cfg.eval.test else [])
    for prefix, split in splits:
        values, hyps = evaluate_split(system, dm, prepared, split, prefix, cfg, device=device)
        metrics.update(values)
        (outputs / f"{split}.hyp").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    tokens_per_sec, step = monitor.tokens_per_sec, int(trainer.global_step)
    last = run_dir / "checkpoints" / "last.ckpt"
    if step == 0 and last.is_file():  # ddp_spawn: training ran in child processes, their state is in files
        step = _checkpoint_step(last)
        tokens_per_sec = float(json.loads((run_dir / "progress.json").read_text()).get("tokens_per_sec") or 0.0)
    metrics.update({
        "params": int(count_parameters(cfg.model, prepared.vocab_size)),
        "tokens_per_sec": tokens_per_sec,
        "train_time_s": monitor.train_seconds,
        "wall_time_s": time.monotonic() - t0,
        "step": step,
        "epoch": int(trainer.current_epoch),
        "checkpoint": used,
        "wandb_run_id": run_id if wandb_mode(cfg.logging.wandb) != "disabled" else None,
        "run_dir": str(run_dir.resolve()),
        "config_hash": config_hash(cfg),
    })
    atomic_write_json(run_dir / "metrics.json", metrics)
    return metrics


def _finish_wandb(trainer: Any, status: str) -> None:
    for logger in getattr(trainer, "loggers", []):
        if type(logger).__name__ == "WandbLogger" and getattr(logger, "_experiment", None) is not None:
            logger.experiment.finish(exit_code=0 if status == "done" else 1)


def evaluate_run(run_dir: str | Path, split: str = "test", beam_size: int | None = None,
                 checkpoint: str = "best", *, print_results: bool = True) -> dict[str, Any]:
    """Re-evaluate a run's checkpoint (``best`` | ``last`` | a path) on ``split``: NLL, PPL, BLEU."""
    from ablate.data.datamodule import TranslationDataModule
    from ablate.data.prepare import prepare_data
    from ablate.train.system import TranslationSystem

    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").is_file():
        raise RunDirError(f"{run_dir}: not a run directory (no config.yaml); pass one written by `ablate train`")
    cfg = from_dict(read_yaml(run_dir / "config.yaml"), source=str(run_dir / "config.yaml"))
    path = run_dir / "checkpoints" / f"{checkpoint}.ckpt" if checkpoint in ("best", "last") else Path(checkpoint)
    if not path.is_file():
        raise RunDirError(f"{path}: no such checkpoint (use --checkpoint best, last or a .ckpt path)")
    if beam_size is not None and beam_size < 1:
        raise RunDirError(f"--beam must be >= 1, got {beam_size}")
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    prepared = prepare_data(cfg.data, progress=False)
    system = TranslationSystem.load_from_checkpoint(path, map_location=device)
    dm = TranslationDataModule(prepared.dir, cfg.data.max_tokens, cfg.train.seed, cfg.data.valid_split,
                               cfg.data.test_split, num_workers=cfg.data.num_workers)
    if split not in prepared.splits:
        raise RunDirError(f"split {split!r} is not in the run's data (has: {', '.join(prepared.splits)})")
    prefix = {cfg.data.valid_split: "val", cfg.data.test_split: "test"}.get(split, split)
    metrics, _ = evaluate_split(system, dm, prepared, split, prefix, cfg, beam_size=beam_size, device=device)
    metrics.update({"checkpoint": str(path), "split": split, "beam_size": beam_size or cfg.eval.beam_size})
    if print_results:
        for key, value in metrics.items():
            print(f"{key:<24} {value:.4f}" if isinstance(value, float) else f"{key:<24} {value}")
    return metrics


__all__ = ["train", "evaluate_run", "RunDirError", "system_kwargs"]
