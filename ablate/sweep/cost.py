"""The dry-run cost model: parameters, training FLOPs and device-hours of a trial from its config.

``ablate sweep --dry-run`` prints it, and the launchers use the FLOPs to start the most expensive
waiting trials first. Throughput is an assumption (``cost:`` of the sweep file, else the defaults
below); GPU or CPU is decided by :func:`ablate.devices.device_kind`, like everywhere else.
"""

from __future__ import annotations

from typing import Any

from ablate.devices import device_kind
from ablate.sweep.spec import Sweep, Trial, describe_trial

# Throughput assumptions of the dry-run cost estimate, unless the sweep file's `cost:` says otherwise.
# CPU: the fp32 matmul peak of a 2-core AVX2 machine (~120 GFLOP/s), of which training reached ~50%.
# GPU: an A100's dense bf16 peak (312 TFLOP/s) at a typical 35% model-FLOPs utilisation.
DEFAULT_COST = {
    "cpu": {"flops_per_second": 1.2e11, "mfu": 0.5},
    "gpu": {"flops_per_second": 3.12e14, "mfu": 0.35},
}


def devices_of(trainer: dict[str, Any]) -> int:
    """Devices one trial trains on: trainer.devices (a count or a list) x trainer.num_nodes."""
    d = trainer.get("devices", 1)
    n = len(d) if isinstance(d, list) else (int(d) if isinstance(d, int) or str(d).isdigit() else 1)
    return n * int(trainer.get("num_nodes", 1) or 1)


def estimate(sweep: Sweep, t: Trial) -> dict[str, Any]:
    """Parameters, training FLOPs and device-hours of one trial, from its config alone."""
    from ablate.config.size import count_parameters, plain_section, train_flops  # closed forms: no torch

    c = t.config
    model, vocab_size = plain_section(c["model"]), c["data"]["vocab_size"]
    devices = devices_of(c["trainer"])
    per_step = c["data"]["max_tokens"] * devices * c["train"]["accumulate_grad_batches"]
    tokens = float(per_step) * c["train"]["max_steps"]
    kind = device_kind(c["trainer"].get("accelerator"))
    assumption = {**DEFAULT_COST[kind], **sweep.cost}
    flops = train_flops(model, vocab_size, tokens, tokens)
    device_s = flops / (assumption["flops_per_second"] * assumption["mfu"])
    return {
        **describe_trial(t),
        "params": int(count_parameters(model, vocab_size)),
        "tokens_per_step": per_step,
        "steps": c["train"]["max_steps"],
        "devices": devices,
        "flops": flops,
        "device_hours": device_s / 3600.0,
        "wall_hours": device_s / 3600.0 / devices,
        "assumption": {"device": kind, **assumption, "source": "sweep file cost:" if sweep.cost else "default"},
    }
