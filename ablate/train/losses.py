"""Training and evaluation losses (Vaswani et al. 2017, section 5.4 "Label Smoothing").

The label-smoothed cross-entropy puts ``1 - eps`` on the reference token and spreads ``eps`` uniformly
over the whole vocabulary (the form of ``torch.nn.functional.cross_entropy(label_smoothing=eps)``), so
``eps = 0`` is exactly the negative log-likelihood. Padding positions contribute nothing to either the
sum or the token count. Both functions return *sums* and counts: a mean over a data set must divide the
total sum by the total count, never average per-batch means (batches hold different token counts).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def label_smoothed_loss(logits: Tensor, target: Tensor, eps: float, pad_id: int) -> tuple[Tensor, Tensor]:
    """Summed label-smoothed cross-entropy and the number of non-pad target tokens.

    logits [B,T,V] (unnormalized), target [B,T] long. Returns (loss sum, token count), both 0-dim.
    """
    flat = logits.reshape(-1, logits.size(-1))
    if flat.dtype != torch.float32:  # softmax statistics in fp32 even under bf16 autocast
        flat = flat.float()
    tgt = target.reshape(-1)
    # One fused log-softmax + gather + (smoothing) pass; ignore_index drops padding from the sum.
    loss = F.cross_entropy(flat, tgt, ignore_index=pad_id, label_smoothing=eps, reduction="sum")
    return loss, (tgt != pad_id).sum()


def nll_loss(logits: Tensor, target: Tensor, pad_id: int) -> tuple[Tensor, Tensor]:
    """Summed unsmoothed negative log-likelihood (natural log) and the non-pad token count."""
    return label_smoothed_loss(logits, target, 0.0, pad_id)
