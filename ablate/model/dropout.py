"""Dropout that generates its mask from uniform noise on CPU: about 2x faster than ``nn.Dropout`` there.

``nn.Dropout`` on CPU draws its mask with ``bernoulli_``, which measured 3.0 ms for a [4096, 128] fp32
tensor against 1.5 ms for ``rand_like`` on this 2-core CPU; with the scaling and the backward, the
module below costs 1.9 ms against 3.8 ms per call (17 calls per training step of the mini model,
about 6% of the step; benchmarks/bench_vs_plain.py). The semantics are ``nn.Dropout``'s: each element
is zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)``, in training mode only, with
the global CPU generator (so seeding and the RNG state saved in checkpoints cover it). On other devices
it is ``F.dropout`` (one fused kernel on CUDA).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _MaskedScale(torch.autograd.Function):
    """x * mask, mask = (u >= p) / (1 - p) with u ~ U[0, 1); the mask is kept for the backward."""

    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:  # type: ignore[override]
        mask = torch.rand_like(x, dtype=torch.float32).ge_(p).mul_(1.0 / (1.0 - p)).to(x.dtype)
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        (mask,) = ctx.saved_tensors
        return grad * mask, None


class Dropout(nn.Module):
    """Drop-in for ``nn.Dropout(p)`` (no in-place mode)."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = float(p)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0 or x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)
        return _MaskedScale.apply(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"
