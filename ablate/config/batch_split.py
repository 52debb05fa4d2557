"""The global batch is the recipe; how it is split over devices, batches and accumulation is ablate's choice.

A recipe states ``train.global_tokens``: the tokens a side in one optimizer step (the paper: about
25,000). A trial runs on ``trainer.devices`` devices; :func:`choose_split` picks the fewest
accumulated batches a step whose batch fits one device's memory, and sets ``data.max_tokens`` (a
device's batch) and ``train.accumulate_grad_batches`` from it. Fewer, larger batches are what a GPU
wants: the base model at 6,250 tokens a side is bound by kernel launches on an H200 (30 ms a step,
8% MFU), so one GPU holding the whole 25,000 does the same step in fewer launches than four GPUs or
four accumulated batches. The split does not change the experiment: trial ids and config hashes
leave ``data.max_tokens``, ``train.accumulate_grad_batches`` and ``trainer.devices`` out when
``train.global_tokens`` is set (:func:`ablate.config.schema.hash_view`), so the same recipe run on
one H200 or four A100s is the same trial; another global batch is another trial.

The memory model (:func:`peak_bytes`) is fitted, not probed: a probe step would need the GPU at
planning time, and the dry run plans on a laptop. Peak = 16 bytes a parameter (fp32 weights and
gradients, Adam's two moments; 8 + 4 x the floats of state ``train.optimizer`` declares for another)
+ a device's tokens a side x the bytes one token keeps for the backward pass: per encoder layer
10 d_model + 2 d_ff values, per decoder layer 16 d_model + 2 d_ff
(its cross-attention), and 3 x the vocabulary for the logits (bf16 logits, fp32 log-probabilities),
2 bytes each (bf16 autocast), times ``ACTIVATION_SCALE``. The scale was fitted to one measurement
and checked against a second, both on one H200 with bf16 autocast, eager, 6,250 tokens a side
(``benchmarks/bench_gpu.py``): base 4.8 GiB measured (fitted: 4.80), big 9.0 GiB measured (predicted
9.1, 1% over). Only ``MEMORY_USE`` of a device is planned for (allocator fragmentation, cuDNN
workspaces, the decode at validation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ablate.config.schema import enc_dec_layers
from ablate.errors import ConfigError

ACTIVATION_SCALE = 1.381  # fitted: base at 6,250 tokens a side peaked at 4.8 GiB on an H200 (bf16, eager)
BYTES_PER_PARAM = 16  # fp32 weight + gradient + Adam's exp_avg and exp_avg_sq
MEMORY_USE = 0.8  # the share of a device's memory a split may plan for
GIB = 2**30


@dataclass(frozen=True)
class Split:
    """One way to run a global batch: ``devices`` x ``max_tokens`` a side x ``accumulate`` batches."""

    devices: int
    max_tokens: int
    accumulate: int
    peak_bytes: float  # predicted peak memory of one device
    memory_bytes: float | None  # the device memory it was planned for (None: not limited)

    def text(self) -> str:
        """``1x25,000x1``: devices x tokens a side per batch x accumulated batches."""
        return f"{self.devices}x{self.max_tokens:,}x{self.accumulate}"

    def line(self, global_tokens: int) -> str:
        memory = f" of {self.memory_bytes / GIB:.0f} GiB" if self.memory_bytes else ""
        return (
            f"batch split: {self.devices} device(s) x {self.max_tokens:,} tokens a side x {self.accumulate} "
            f"accumulated = {global_tokens:,} a step (train.global_tokens); predicted peak "
            f"{self.peak_bytes / GIB:.1f} GiB{memory} a device"
        )


def activation_bytes_per_token(model: Any, vocab_size: int) -> float:
    """Bytes one token a side keeps for the backward pass under bf16 autocast (the fitted model above)."""
    n_enc, n_dec = enc_dec_layers(model)
    d, d_ff = model.d_model, model.d_ff
    values = n_enc * (10 * d + 2 * d_ff) + n_dec * (16 * d + 2 * d_ff) + 3 * vocab_size
    return ACTIVATION_SCALE * 2.0 * values


def peak_bytes(
    model: Any, vocab_size: int, params: int, tokens_per_side: int, bytes_per_param: float = BYTES_PER_PARAM
) -> float:
    """Predicted peak memory of one device training a batch of ``tokens_per_side`` tokens a side."""
    return bytes_per_param * params + tokens_per_side * activation_bytes_per_token(model, vocab_size)


def optimizer_bytes_per_param(train: Mapping[str, Any]) -> float:
    """fp32 weight and gradient + the state the ``train.optimizer`` keeps (Adam: 2 floats, 16 bytes in all)."""
    from ablate.recipe import optimizer_of

    return 8.0 + 4.0 * optimizer_of(train.get("optimizer", "adam")).state_floats_per_param


def choose_split(
    model: Any,
    vocab_size: int,
    params: int,
    global_tokens: int,
    devices: int,
    memory_bytes: float | None,
    min_batch: int = 1,
    bytes_per_param: float = BYTES_PER_PARAM,
) -> Split:
    """The fewest accumulated batches whose batch fits ``MEMORY_USE`` of ``memory_bytes`` (None: one batch).

    ``min_batch``: the smallest batch that holds one training pair (``data.max_len`` + 2); a device
    whose memory cannot hold even that is refused in one line (ConfigError).
    """
    per_device = math.ceil(global_tokens / devices)
    if per_device < min_batch:
        raise ConfigError(
            f"train.global_tokens: {global_tokens:,} over {devices} device(s) is {per_device:,} tokens a side a "
            f"device, less than one training pair may need ({min_batch:,}: data.max_len + 2); use fewer devices"
        )
    budget = None if memory_bytes is None else MEMORY_USE * memory_bytes
    accumulate = 1
    if budget is not None:
        per_token = activation_bytes_per_token(model, vocab_size)
        room = budget - bytes_per_param * params
        fits = int(room // per_token) if room > 0 else 0  # tokens a side one batch may hold
        if fits < min_batch:
            raise ConfigError(
                f"train.global_tokens: a batch of {min_batch:,} tokens a side needs about "
                f"{peak_bytes(model, vocab_size, params, min_batch, bytes_per_param) / GIB:.1f} GiB, more than "
                f"{MEMORY_USE:.0%} of the device's {memory_bytes / GIB:.0f} GiB; use a device with "
                "more memory or a smaller model"
            )
        accumulate = math.ceil(per_device / fits)
    max_tokens = max(math.ceil(per_device / accumulate), min_batch)
    peak = peak_bytes(model, vocab_size, params, max_tokens, bytes_per_param)
    return Split(devices, max_tokens, accumulate, peak, memory_bytes)


def split_of(config: Mapping[str, Any], devices: int, memory_bytes: float | None) -> Split:
    """The split of a resolved config's ``train.global_tokens`` over ``devices`` devices of ``memory_bytes``."""
    from ablate.config import model_section
    from ablate.config.size import count_parameters

    model, vocab = model_section(config["model"]), int(config["data"]["vocab_size"])
    return choose_split(
        model,
        vocab,
        count_parameters(model, vocab),
        int(config["train"]["global_tokens"]),
        devices,
        memory_bytes,
        min_batch=int(config["data"]["max_len"]) + 2,
        bytes_per_param=optimizer_bytes_per_param(config["train"]),
    )
