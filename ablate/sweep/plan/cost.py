"""The dry-run cost model: parameters, training FLOPs and device-hours of a trial from its config.

``ablate sweep --dry-run`` prints it, and the launchers use the FLOPs to start the most expensive
waiting trials first. Throughput is an assumption (``cost:`` of the sweep file, else the defaults
below); GPU or CPU is decided by :func:`ablate.devices.device_kind`, like everywhere else.
"""

from __future__ import annotations

from typing import Any

from ablate.config.batch_split import GIB, Split, split_of
from ablate.devices import device_kind, devices_of
from ablate.errors import ConfigError
from ablate.family import family_of
from ablate.sweep.file.spec import Sweep, Trial, describe_trial
from ablate.sweep.plan.budgets import trial_budget

# Throughput assumptions of the dry-run cost estimate, unless the sweep file's `cost:` says otherwise.
# A device step takes step_overhead_s + its FLOPs / (flops_per_second x mfu).
# CPU: the fp32 matmul peak of a 2-core AVX2 machine (~120 GFLOP/s), of which training reached ~50%.
# GPU: measured with benchmarks/bench_gpu.py on one H200 (eager, bf16, 6,250 tokens a side): the base
# step took 30.2 ms for 2.46 TFLOP and the big step 48.2 ms for 8.34 TFLOP. A single rate cannot give
# both (81 and 173 TFLOP/s); the line through the two points can: 22.7 ms a step of host-side cost
# (kernel launches: the base model is bound by them at this batch) plus FLOPs at 327 TFLOP/s, 33% of
# the chip's dense bf16 peak of 989 TFLOP/s. Two points, two parameters: it fits them by construction.
DEFAULT_COST = {
    "cpu": {"flops_per_second": 1.2e11, "mfu": 0.5, "step_overhead_s": 0.0},
    "gpu": {"flops_per_second": 9.89e14, "mfu": 0.33, "step_overhead_s": 0.0227},
}
# The device memory a train.global_tokens split is planned for, unless the sweep file's `cost:` gives
# memory_gb: 80 GiB, the smallest of the H100 / A100-80GB / H200 class a Table 3 sweep runs on. The CPU
# is not planned for (one batch a device), as a CPU trial does (ablate/train/split.py).
DEFAULT_MEMORY_GB = {"cpu": None, "gpu": 80.0}


def step_seconds(flops_per_device_step: float, assumption: dict[str, float]) -> float:
    """One device's step time under a cost assumption (``DEFAULT_COST`` or a sweep file's ``cost:``)."""
    rate = assumption["flops_per_second"] * assumption["mfu"]
    return assumption.get("step_overhead_s", 0.0) + flops_per_device_step / rate


def estimate(sweep: Sweep, t: Trial) -> dict[str, Any]:
    """Parameters, budget, training FLOPs and device-hours of one trial, from its config (and, for its
    epochs and target tokens, the prepared data's statistics: :mod:`ablate.sweep.plan.budgets`). FLOPs and
    device-hours are None for a budget in epochs or tokens whose data is not prepared yet."""
    from ablate.config import model_section
    from ablate.config.size import count_parameters, train_flops  # closed forms: no torch

    c = t.config
    model, vocab_size = model_section(c["model"]), c["data"]["vocab_size"]
    devices = devices_of(c["trainer"])
    kind = device_kind(c["trainer"].get("accelerator"))
    assumption = {**DEFAULT_COST[kind], **sweep.cost}
    split = _split(c, devices, kind, assumption, f"{sweep.path}: row {t.row!r}")
    if split is not None:  # the batches a device of the assumed memory would run (the trial settles its own)
        c = {**c, "data": {**c["data"], "max_tokens": split.max_tokens}}
        c["train"] = {**c["train"], "accumulate_grad_batches": split.accumulate}
    accumulate = c["train"]["accumulate_grad_batches"]
    batch = family_of(c).batch_cost(c["data"])  # what one batch holds for this kind of model
    per_step = batch.tokens * devices * accumulate
    budget = trial_budget(c)
    flops = device_s = step_s = None
    if budget.steps is not None:
        tokens = float(per_step) * budget.steps
        flops = train_flops(model, vocab_size, tokens * batch.src_share, tokens, tgt_len=batch.tgt_len)
        step_s = accumulate * step_seconds(flops / budget.steps / devices / accumulate, assumption)
        device_s = step_s * budget.steps * devices
    planned = {} if split is None else _planned(split, step_s)
    target_tokens = budget.target_tokens
    if target_tokens is None and batch.exact and budget.steps:  # its data not prepared yet: its steps' tokens
        target_tokens = float(per_step) * budget.steps
    return {
        **describe_trial(t),
        "params": int(count_parameters(model, vocab_size)),
        "tokens_per_step": per_step,
        "steps": budget.steps,
        "budget": budget.rule,
        "epochs": budget.epochs,  # a language model's: passes over its training blocks
        "target_tokens": target_tokens,
        "devices": devices,
        "flops": flops,
        "device_hours": device_s / 3600.0 if device_s is not None else None,
        "wall_hours": device_s / 3600.0 / devices if device_s is not None else None,
        "assumption": {"device": kind, **assumption, "source": "sweep file cost:" if sweep.cost else "default"},
        **planned,
    }


def _planned(split: Split, step_s: float | None) -> dict[str, Any]:
    """The dry run's figures of a trial's split: its text, predicted peak and step, and the memory it assumed."""
    memory = None if split.memory_bytes is None else split.memory_bytes / GIB
    return {"split": split.text(), "peak_gib": split.peak_bytes / GIB, "step_s": step_s, "memory_gb": memory}


def _split(config: dict[str, Any], devices: int, kind: str, assumption: dict[str, Any], where: str) -> Split | None:
    """The split of a trial that states ``train.global_tokens``, for the assumed device memory; else None."""
    if config["train"].get("global_tokens") is None:
        return None
    memory_gb = assumption.get("memory_gb", DEFAULT_MEMORY_GB[kind])
    try:
        return split_of(config, devices, None if memory_gb is None else memory_gb * GIB)
    except ConfigError as exc:
        assumed = f" (the dry run plans for {memory_gb:g} GiB a device: cost: {{memory_gb: ...}})" if memory_gb else ""
        raise ConfigError(f"{where}: {exc}{assumed}") from None
