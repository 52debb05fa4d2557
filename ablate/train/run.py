"""One trial, end to end: ``train(cfg)`` (the engine behind `ablate train` and the sweep worker).

prepare_data -> CorpusDataModule -> TransformerSystem -> Trainer.fit -> the final model (best or
last, :mod:`ablate.train.final`) -> dev and test metrics -> ``metrics.json``. The run directory layout is
:mod:`ablate.rundir`; an existing ``checkpoints/last.ckpt`` in it is resumed. Evaluation of a finished
run (``ablate eval``) is :func:`ablate.train.rerun.evaluate_run`, re-exported here.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from ablate.config import save_config, to_dict
from ablate.errors import Pruned
from ablate.family import family_of
from ablate.rundir import SPAWNED_AT_ENV, CheckpointUnreadable, RunDir, RunDirError
from ablate.train.identity import check_resumable, make_run_dir, wandb_run_id
from ablate.train.preempt import Preempted
from ablate.train.rerun import evaluate_run


def system_kwargs(cfg: DictConfig, vocab_size: int, max_steps: int | None = None) -> dict[str, Any]:
    """The TransformerSystem's primitive hyperparameters from a resolved config; ``max_steps``: the run's
    steps where a budget set them (else train.max_steps), where a decaying schedule ends."""
    from ablate.data.special import BOS_ID, EOS_ID, PAD_ID

    t = cfg.train
    plain = to_dict(cfg)["train"]
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
        compile=bool(t.get("compile", False)),
        cuda_graphs=bool(t.get("cuda_graphs", False)),
        optimizer=plain.get("optimizer", "adam"),
        schedule=plain.get("schedule", "noam"),
        lr=None if t.get("lr") is None else float(t.lr),
        max_steps=int(max_steps if max_steps is not None else t.max_steps),
    )


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
    # A resumed run writes into its own checkpoints/ on purpose.
    warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty")
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _NoLightningTips) for f in logger.filters):
            logger.addFilter(_NoLightningTips())  # advertisements for Lightning's cloud services


def open_run_dir(
    cfg: DictConfig, output_dir: str | Path | None, resume: bool
) -> tuple[RunDir, int | None, Path | None]:
    """The run directory (created; ``config.yaml`` written), and the step and checkpoint to resume from.

    A directory holding another model / data / recipe is refused (RunDirError)."""
    rd = RunDir(output_dir if output_dir is not None else make_run_dir(cfg))
    resume_step, resume_from = None, None
    if resume and rd.last_ckpt.is_file():
        check_resumable(rd.path, cfg)
        resume_step, resume_from = _resume_point(rd)
    try:
        rd.path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file of that name, a read-only folder: the same on every try
        raise RunDirError(
            f"{rd.path}: cannot create the run directory ({exc.strerror}); choose another --output"
        ) from None
    save_config(cfg, rd.config)
    return rd, resume_step, resume_from


def _resume_point(rd: RunDir) -> tuple[int | None, Path | None]:
    """(step, checkpoint) to resume from: ``last.ckpt``; when it cannot be read (cut short by a full disk
    or a copy), ``best.ckpt`` (an earlier step) or, without a readable one, the start. Said in the log,
    never a crash that would repeat on every retry. Nothing is moved or written but a copy of the broken
    file (``last.ckpt.broken-<time>``, by rank 0 only): every DDP rank of a SLURM job runs this at once
    and must reach the same answer from the same files."""
    from ablate.train.system import checkpoint_step

    try:
        return checkpoint_step(rd.last_ckpt), rd.last_ckpt
    except CheckpointUnreadable as exc:
        said = f"warning: {exc}"
    if _rank_zero():
        broken = rd.last_ckpt.with_name(f"last.ckpt.broken-{int(time.time())}")
        shutil.copyfile(rd.last_ckpt, broken)  # kept; the next checkpoint replaces last.ckpt
        said += f"; a copy kept as {broken.name}"
    try:
        step = checkpoint_step(rd.best_ckpt) if rd.best_ckpt.is_file() else None
    except CheckpointUnreadable:
        step = None
    if step is None:
        print(f"{said}; no readable checkpoint: training starts again from step 0", flush=True)
        return None, None
    print(f"{said}; resuming from best.ckpt (step {step})", flush=True)
    return step, rd.best_ckpt


def _say(line: str) -> None:
    """One ``[train]`` line on the log, from DDP rank zero only."""
    if _rank_zero():
        print(f"[train] {line}", file=sys.stderr, flush=True)


def _rank_zero() -> bool:
    """Whether this process is DDP rank 0 as its launcher tells it (SLURM, torchrun, Lightning)."""
    ranks = [os.environ.get(k, "0") for k in ("SLURM_PROCID", "RANK", "LOCAL_RANK")]
    return all(not r.strip().isdigit() or int(r) == 0 for r in ranks)


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

    from ablate.train.fast import fast_path
    from ablate.train.final import final_metrics
    from ablate.train.host import keep_freed_memory
    from ablate.train.split import settle_split
    from ablate.train.system import TransformerSystem
    from ablate.train.trainer import build_trainer

    t0 = time.monotonic()
    timing: dict[str, float | None] = {"startup_s": _startup_seconds()}
    keep_freed_memory()
    settle_split(cfg, output_dir, resume, _say)  # train.global_tokens: this machine's batches, before the run dir
    family = family_of(cfg)
    family.check_data(cfg)  # e.g. a language model's split too short for one block: one line, before the run dir
    rd, resume_step, resume_from = open_run_dir(cfg, output_dir, resume)
    prepared, budget = _prepare(cfg)
    timing["data_s"] = time.monotonic() - t0
    dm = family.datamodule(cfg, prepared)
    pl.seed_everything(cfg.train.seed, workers=True, verbose=False)
    system = TransformerSystem(**system_kwargs(cfg, prepared.vocab_size, max_steps=budget.steps))
    family.check_model(cfg, prepared, system.model)  # before any step: a failure that would repeat
    run_id = wandb_id or wandb_run_id(cfg, rd.path)
    quiet_lightning()
    overrides = {"max_steps": budget.steps, **(trainer_kwargs or {})}
    trainer, monitor = build_trainer(cfg, rd, run_id, prepared, resume_step=resume_step, overrides=overrides)
    fast_path(cfg, trainer)  # on a GPU: TF32, and which attention kernel the trial's shapes get
    _start_run_dir(cfg, rd, trainer, resume_step)
    status, metrics = "failed", {}
    try:
        t_fit = time.monotonic()
        timing["setup_s"] = t_fit - t0 - timing["data_s"]
        trainer.fit(system, datamodule=dm, ckpt_path=str(resume_from) if resume_from is not None else None)
        timing["fit_s"] = time.monotonic() - t_fit
        if not trainer.is_global_zero:
            status = "done"
            return {}
        metrics = final_metrics(cfg, trainer, system, prepared, rd, monitor, t0, run_id, timing, budget)
        _log_final(trainer, metrics)
        status = "done"
        return metrics
    except Preempted:
        status = "preempted"  # last.ckpt holds this step; the requeued job resumes into the same W&B run
        raise
    except Pruned:
        status = "pruned"  # a search's pruner stopped it: a result (W&B run finished cleanly)
        raise
    finally:
        if trainer.is_global_zero:
            _write_final_progress(rd, monitor.last, metrics, status, time.monotonic() - t0)
        _finish_wandb(trainer, status)


def _prepare(cfg: DictConfig) -> tuple[Any, Any]:
    """The prepared data (prepared now, or found in the cache) and the budget resolved on it."""
    from ablate.data.prepare import prepare_data

    prepared = prepare_data(cfg.data, progress=cfg.logging.progress_bar)
    return prepared, resolve_budget(cfg, prepared)


def _start_run_dir(cfg: DictConfig, rd: RunDir, trainer: Any, resume_step: int | None) -> None:
    """Rank zero clears a killed writer's temporary files and records where the run came from."""
    from ablate.train.provenance import provenance

    if trainer.is_global_zero:
        rd.remove_stale_temps()  # of a killed writer (e.g. .last.ckpt.tmp-PID); nothing of ours is being written
        rd.write_provenance(provenance(cfg, trainer, resumed=resume_step is not None, run_dir=rd.path))


def resolve_budget(cfg: DictConfig, prepared: Any) -> Any:
    """The trial's steps, epochs and target tokens (train.epochs / train.target_tokens become steps here,
    from the prepared data; cfg is left as declared, so its hash and the run's identity stay), logged once
    (always when the budget is not in steps: what it came to is news)."""
    from lightning.pytorch.utilities import rank_zero_only

    from ablate.data.budget import resolve
    from ablate.devices import devices_of

    family = family_of(cfg)
    stats = family.epoch_stats(cfg.data, prepared)  # the dry run asks the same (ablate/sweep/plan/budgets.py)
    devices = devices_of(cfg.trainer, count_visible=True)
    budget = resolve(cfg.train, stats, devices, int(cfg.train.accumulate_grad_batches))
    if rank_zero_only.rank == 0 and (cfg.logging.progress_bar or budget.rule != "train.max_steps"):
        unit = family.epoch_unit
        print(f"[train] {budget.line()} ({stats.pairs:,} {unit}, {devices} device(s))", file=sys.stderr, flush=True)
    return budget


def _startup_seconds() -> float | None:
    """Seconds since a launcher spawned this process (interpreter, imports, worker set-up); None unless it says."""
    try:
        return max(0.0, time.time() - float(os.environ[SPAWNED_AT_ENV]))
    except (KeyError, ValueError):
        return None


def _write_final_progress(
    rd: RunDir, last: dict[str, Any], metrics: dict[str, Any], status: str, elapsed_s: float
) -> None:
    """progress.json at the end: the final model's numbers (not those of the last periodic validation)."""
    final = {k: metrics[k] for k in ("step", "val/ppl", "val/bleu") if metrics.get(k) is not None}
    rd.write_progress({**rd.read_progress(), **last, **final, "status": status, "elapsed_s": round(elapsed_s, 1)})


def result_lines(metrics: dict[str, Any]) -> list[str]:
    """What `ablate train` prints at the end: the final numbers, where they are, what to run next."""
    run_dir = Path(str(metrics.get("run_dir", ".")))
    try:  # shown relative to the working directory when it lies below it
        shown = run_dir.relative_to(Path.cwd())
    except ValueError:
        shown = run_dir
    lines = [
        f"run {shown}: step {metrics.get('step')}, final weights {metrics.get('checkpoint')} "
        f"(step {metrics.get('checkpoint_step')})"
    ]
    for prefix, label in (("val", "dev "), ("test", "test")):
        ppl, bleu = metrics.get(f"{prefix}/ppl"), metrics.get(f"{prefix}/bleu")
        if not isinstance(ppl, (int, float)):
            continue
        line = f"  {label}  PPL {ppl:.2f}"
        if isinstance(bleu, (int, float)):
            n = metrics.get(f"{prefix}/bleu_sentences")
            line += f"  BLEU {bleu:.2f}" + (f" ({n} sentences)" if n else "")
        lines.append(line)
    rd = RunDir(shown)
    lines.append(f"  checkpoints {rd.checkpoints}/ (best.ckpt, last.ckpt); metrics {rd.metrics_file}, {rd.metrics_csv}")
    lines.append(f"  next: ablate eval {shown} --split test")  # a language model's too: perplexity per length
    return lines


def _log_final(trainer: Any, metrics: dict[str, Any]) -> None:
    """The final numbers to every logger (metrics.csv, W&B), at the final step."""
    for logger in trainer.loggers:
        logger.log_metrics({k: v for k, v in metrics.items() if isinstance(v, float)}, step=metrics["step"])
        logger.save()


def _finish_wandb(trainer: Any, status: str) -> None:
    """Finish this process's W&B run (``wandb.run``: the one the WandbLogger started, if it did). W&B
    mirrors what the run directory and the store record: its failure never fails a finished trial."""
    try:
        _finish_wandb_run(trainer, status)
    except Exception as exc:  # noqa: BLE001 - e.g. a stop signal took W&B's service process down
        print(f"warning: W&B did not finish cleanly ({type(exc).__name__}: {exc}); the run's files are complete")


def _finish_wandb_run(trainer: Any, status: str) -> None:
    wandb = sys.modules.get("wandb")  # not imported: no run was started
    if wandb is None or wandb.run is None:
        return
    for logger in getattr(trainer, "loggers", []):
        if type(logger).__name__ == "WandbLogger":
            if status != "preempted":
                if status == "pruned":
                    logger.experiment.summary["pruned"] = True
                logger.experiment.finish(exit_code=0 if status in ("done", "pruned") else 1)
                continue
            try:  # SLURM's SIGTERM reaches W&B's service process too: it may be gone already
                logger.experiment.mark_preempting()
                logger.experiment.finish(exit_code=0)
            except Exception:  # noqa: BLE001 - the rows it had are on disk; the resumed run continues the id
                pass
            try:  # tear W&B down now, or its atexit hook prints a traceback talking to the dead service
                wandb.teardown(exit_code=0)
            except Exception:  # noqa: BLE001 - the same: nothing is lost, the requeued job resumes the run
                pass


__all__ = ["train", "evaluate_run", "open_run_dir", "result_lines", "RunDirError", "system_kwargs"]
