"""The final numbers of a trial: which weights they come from, their dev and test metrics, metrics.json.

The final model is the better by dev NLL of two candidates, both read here and not from Lightning's
callback state: the weights at the final step (in memory after fit, = ``last.ckpt``) and ``best.ckpt``
(the best earlier validation). A run killed after last.ckpt of the final step was written but before
the final validation finished never lets the ``best`` ModelCheckpoint see that validation (a retried
fit at max_steps does nothing), so its best.ckpt is stale; comparing the two candidates here gives a
retried run the same answer as an uninterrupted one. ``metrics.json`` says which one was used
(``checkpoint``: best | last) and its optimizer step (``checkpoint_step``). On a tie (best.ckpt was
written at the final step: the same weights) it is ``last``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig

from ablate.eval.evaluate import evaluate_split, write_outputs
from ablate.eval.nll import SplitNLL
from ablate.eval.settings import DecodeSettings
from ablate.family import family_of
from ablate.rundir import RunDir
from ablate.tracking import wandb_mode
from ablate.train.identity import config_hash
from ablate.train.system import checkpoint_step, read_checkpoint


def choose_final_weights(
    system: Any, rd: RunDir, dev_nll: Callable[[Any], SplitNLL], step: int
) -> tuple[str, int, SplitNLL]:
    """Load the final model into ``system`` (see the module docstring): ("best" | "last", its step, its dev NLL);
    ``dev_nll(model)`` measures a candidate (the translator's dev sentences, a language model's dev blocks)."""
    device = system.device
    last_nll = dev_nll(system.model)
    if not rd.best_ckpt.is_file():
        return "last", step, last_nll
    best_step = checkpoint_step(rd.best_ckpt)
    if best_step == step:
        return "last", step, last_nll
    last_state = {k: v.detach().clone() for k, v in system.state_dict().items()}
    system.load_state_dict(read_checkpoint(rd.best_ckpt, map_location=device)["state_dict"])
    best_nll = dev_nll(system.model)
    if best_nll.nll < last_nll.nll:
        return "best", best_step, best_nll
    system.load_state_dict(last_state)
    return "last", step, last_nll


def _timing(timing: dict[str, float | None], train_s: float, eval_s: float) -> dict[str, float | None]:
    """Where a trial's time went: start-up, data, set-up, validation during fit (fit minus training
    steps; checkpoint writes included) and the final evaluation, in seconds."""
    fit = timing.get("fit_s")
    return {
        "startup_s": timing.get("startup_s"),
        "data_s": timing.get("data_s"),
        "setup_s": timing.get("setup_s"),
        "val_time_s": max(0.0, fit - train_s) if fit is not None else None,
        "eval_time_s": eval_s,
    }


def final_metrics(
    cfg: DictConfig,
    trainer: Any,
    system: Any,
    prepared: Any,
    rd: RunDir,
    monitor: Any,
    t0: float,
    run_id: str,
    timing: dict[str, float | None] | None = None,
    budget: Any = None,
) -> dict[str, Any]:
    """Dev and test metrics of the final model -> metrics.json, outputs/<split>.hyp and .nll.

    ``timing`` (seconds: startup_s, data_s, setup_s, fit_s) joins the metrics with the final evaluation's
    own time, for the sweep's efficiency line (ablate.sweep.efficiency). ``budget``
    (:class:`ablate.data.budget.Budget`) adds the rule that set the steps and the epochs and target
    tokens they came to.
    """
    from ablate.config import model_section
    from ablate.config.size import count_parameters

    t_eval = time.monotonic()
    step = int(trainer.global_step)
    if step == 0 and rd.last_ckpt.is_file():  # ddp_spawn: training ran in child processes, their state is in files
        step = checkpoint_step(rd.last_ckpt)
    metrics, used, used_step = family_of(cfg).final_scores(cfg, system, prepared, rd, step)
    tokens_per_sec = monitor.tokens_per_sec or float(rd.read_progress().get("tokens_per_sec") or 0.0)
    metrics.update(
        {
            "params": int(count_parameters(model_section(cfg.model), prepared.vocab_size)),
            "tokens_per_sec": tokens_per_sec,
            "train_time_s": monitor.train_seconds,
            "wall_time_s": time.monotonic() - t0,
            **_timing(timing or {}, monitor.train_seconds, time.monotonic() - t_eval),
            "step": step,
            "epoch": passes_completed(trainer),  # whole passes over the training data (budget_epochs: the fraction)
            **_budget(budget),
            "checkpoint": used,
            "checkpoint_step": used_step,
            "wandb_run_id": run_id if wandb_mode(cfg.logging.wandb) != "disabled" else None,
            "run_dir": str(rd.path.resolve()),
            "config_hash": config_hash(cfg),
        }
    )
    rd.write_metrics(metrics)
    return metrics


def passes_completed(trainer: Any) -> int:
    """Whole passes over the training data, from the batch sampler's own state. Not Lightning's
    ``current_epoch``: it counted a pass cut short by ``max_steps`` as finished (epoch 1 after 2% of one
    epoch), and the same run resumed from a checkpoint said 0 (found by the chaos run)."""
    dm = getattr(trainer, "datamodule", None)
    sampler = getattr(dm, "train_sampler", None)
    if sampler is None:
        return int(trainer.current_epoch)
    consumed = dm.state_dict()  # batches trained on: the sampler itself runs ahead by Lightning's prefetch
    return int(consumed["epoch"]) + (1 if int(consumed["position"]) >= len(sampler) else 0)


def score_splits(cfg: DictConfig, system: Any, prepared: Any, rd: RunDir, dev_nll: Any) -> dict[str, Any]:
    """Dev (BLEU on the configured subset, the NLL already computed) and, when asked, test metrics;
    each split's hypotheses and per-sentence NLL written to ``outputs/``."""
    settings = DecodeSettings.from_config(cfg.eval)
    splits = [("val", cfg.data.valid_split, cfg.eval.bleu_max_sentences, dev_nll)]
    if cfg.eval.test:
        splits.append(("test", cfg.data.test_split, None, None))
    metrics: dict[str, Any] = {}
    for prefix, split, limit, nll in splits:
        result = evaluate_split(
            system.model,
            prepared,
            split,
            settings,
            prefix=prefix,
            max_tokens=int(cfg.data.max_tokens),
            bleu_limit=limit,
            tokenized=bool(cfg.eval.tokenized_bleu),
            device=system.device,
            nll=nll,
        )
        metrics.update(result.metrics)
        write_outputs(rd, split, result)
    return metrics


def _budget(budget: Any) -> dict[str, Any]:
    """The declared budget and what it came to (epochs and target tokens of the steps planned)."""
    if budget is None:
        return {}
    return {"budget": budget.rule, "budget_epochs": budget.epochs, "budget_target_tokens": budget.target_tokens}
