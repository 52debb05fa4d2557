"""The fast path on a GPU: TF32 for fp32 matmuls, fused Adam, and a check of the attention kernel.

- ``bf16-mixed`` autocast is chosen by :func:`ablate.train.trainer.resolve_precision`; what still runs in
  fp32 (the optimizer's math, the fp32 parts of the loss) may use TF32 tensor cores:
  ``torch.set_float32_matmul_precision("high")``.
- Adam with ``fused=True`` (one kernel for every parameter) where the parameters are on CUDA
  (:func:`adam_options`).
- ``F.scaled_dot_product_attention`` picks a kernel per call; the flash and memory-efficient ones have
  limits (head sizes, masks, dtypes). :func:`attention_kernel` runs the trial's shapes once and says
  which family serves them, so a row that falls back to the slow math kernel (row B's d_k = 16, row
  A's h = 1 with d_k = 512, ...) is named in one line at the start of the trial instead of training
  slowly without a word. On a CPU it reports "not CUDA".
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.nn.functional as F

from ablate.config import ModelConfig, head_dims, model_section

NOT_CUDA = "not CUDA"


def enable_tf32() -> bool:
    """TF32 for fp32 matmuls on a CUDA device; returns whether it was enabled."""
    if not torch.cuda.is_available():
        return False
    torch.set_float32_matmul_precision("high")
    return True


def adam_options(parameters: list[torch.nn.Parameter]) -> dict[str, Any]:
    """``{"fused": True}`` when every parameter is on CUDA (the fused kernel's requirement), else {}."""
    if parameters and all(p.is_cuda for p in parameters):
        return {"fused": True}
    return {}


def attention_kernel(n_heads: int, d_k: int, d_v: int, device: torch.device, dtype: torch.dtype) -> str:
    """Which SDPA kernel family serves these head shapes with a padding mask, as ablate calls it:
    ``"flash or memory-efficient"``, ``"math (<why>)"``, or :data:`NOT_CUDA`."""
    if device.type != "cuda":
        return NOT_CUDA
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.zeros(2, n_heads, 16, d_k, device=device, dtype=dtype)  # no RNG: the rows' dropout streams stay paired
    k = torch.zeros(2, n_heads, 16, d_k, device=device, dtype=dtype)
    v = torch.zeros(2, n_heads, 16, d_v, device=device, dtype=dtype)
    mask = torch.ones(2, 1, 1, 16, dtype=torch.bool, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return "flash or memory-efficient"
        except RuntimeError as exc:
            reasons = [str(w.message).splitlines()[0] for w in caught] or [str(exc).splitlines()[0]]
            return f"math ({'; '.join(reasons)})"


def check_attention(model_cfg: ModelConfig, device: torch.device, precision: str) -> str:
    """:func:`attention_kernel` for a model section; prints one warning line when it is the math kernel."""

    d_k, d_v = head_dims(model_cfg)
    dtype = torch.bfloat16 if "bf16" in str(precision) else torch.float16 if "16" in str(precision) else torch.float32
    found = attention_kernel(int(model_cfg.n_heads), int(d_k), int(d_v), device, dtype)
    if found.startswith("math"):
        print(
            f"warning: attention with h={model_cfg.n_heads}, d_k={d_k}, d_v={d_v} runs SDPA's slow math kernel: "
            f"{found[6:-1]}",
            flush=True,
        )
    return found


def fast_path(cfg: Any, trainer: Any) -> None:
    """At the start of a trial on a GPU: TF32, and (rank 0) the attention-kernel check of the model.
    Anywhere: one line when ``train.cuda_graphs`` cannot be honoured (not on CUDA)."""
    from ablate.train.graphs import graphs_note

    device_type = trainer.strategy.root_device.type
    note = graphs_note(bool(cfg.train.get("cuda_graphs")), bool(cfg.train.get("compile")), device_type)
    if note and trainer.is_global_zero:
        print(note, flush=True)
    if not enable_tf32() or device_type != "cuda":
        return
    if trainer.is_global_zero:
        check_attention(model_section(cfg.model), trainer.strategy.root_device, str(trainer.precision))
