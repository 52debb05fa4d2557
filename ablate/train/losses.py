"""Training and evaluation losses (Vaswani et al. 2017, section 5.4 "Label Smoothing").

The label-smoothed cross-entropy puts ``1 - eps`` on the reference token and spreads ``eps`` uniformly
over the whole vocabulary (the form of ``torch.nn.functional.cross_entropy(label_smoothing=eps)``), so
``eps = 0`` is exactly the negative log-likelihood. Padding positions contribute nothing to either the
sum or the token count. Both functions return *sums* and counts: a mean over a data set must divide the
total sum by the total count, never average per-batch means (batches hold different token counts).

:func:`linear_label_smoothed_loss` is the same loss fused with the pre-softmax projection, for training:
it takes the decoder's hidden states at the real (non-pad) target positions only, and projects, softmaxes
and differentiates them a chunk of rows at a time, so no [B*T, V] logits, log-probabilities or gradient
tensors beyond one chunk exist. Per chunk, ``logp = log_softmax(z)``,
``loss = -(1 - eps) logp_y - eps mean(logp)`` and ``dloss/dz = softmax(z) - (1 - eps) onehot(y) - eps/V``:
the softmax is formed in the forward pass, in place of the log-probabilities (as Liger-Kernel's fused
linear cross-entropy forms its gradient), and the two constant terms are applied after the projection
back, at [c, D] instead of [c, V]. Against the unfused log-softmax / smoothing / backward this saves
several passes over [B*T, V] tensors; ``log_softmax`` (one kernel) replaced ``logsumexp`` (five passes,
8.5 ms against 3.3 ms for 2048 x 4000 on this CPU). Measured with benchmarks/bench_vs_plain.py; chunks of
128-1024 rows were slower than one chunk on this 2-core CPU, so the default chunk only bounds memory.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

CHUNK_ROWS = (
    8192  # rows of logits formed at a time: caps memory on large batches; smaller chunks measured slower on CPU
)


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


def _chunk_loss(z: Tensor, y: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """Per-row label-smoothed CE of fp32 logits z [c,V] and the log-probabilities [c,V] (a new tensor)."""
    logp = torch.log_softmax(z, dim=1)
    loss = -(1.0 - eps) * logp.gather(1, y[:, None]).squeeze(1)
    if eps:
        loss = loss - eps * logp.mean(dim=1)
    return loss, logp


class _LinearCrossEntropy(torch.autograd.Function):
    """sum_i CE_eps(hidden_i @ weight^T, target_i); gradients computed chunk by chunk in forward.

    Only the softmax P is formed at [c, V]; the rest of dloss/dz = P - eps/V - (1 - eps) onehot(y) is
    applied after the projection back, at [c, D]: ``P @ W - eps/V colsum(W) - (1 - eps) W[y]`` for the
    hidden states and ``P^T h - eps/V sum(h) - (1 - eps) scatter_y(h)`` for the weight."""

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, target: Tensor, eps: float, chunk: int) -> Tensor:  # type: ignore[override]
        want_h, want_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_h = torch.empty_like(hidden) if want_h else None
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if want_w else None
        total = torch.zeros((), dtype=torch.float32, device=hidden.device)
        smooth = eps / weight.size(0)
        col_sum = weight.float().sum(0) * smooth if want_h and eps else None  # [D]
        for a in range(0, hidden.size(0), chunk):
            h, y = hidden[a : a + chunk], target[a : a + chunk]
            loss, logp = _chunk_loss(F.linear(h, weight).float(), y, eps)
            total += loss.sum()
            if not (want_h or want_w):
                continue
            p = logp.exp_().to(hidden.dtype)  # softmax, in place of the log-probabilities
            if want_h:
                gh = (p @ weight).float().sub_(weight.index_select(0, y).float(), alpha=1.0 - eps)
                if col_sum is not None:
                    gh.sub_(col_sum)
                grad_h[a : a + chunk] = gh.to(hidden.dtype)
            if want_w:
                hf = h.float()
                grad_w.addmm_(p.t().float(), hf)
                grad_w.index_add_(0, y, hf, alpha=eps - 1.0)
                if eps:
                    grad_w.sub_(hf.sum(0) * smooth)
        ctx.weight_dtype = weight.dtype
        ctx.save_for_backward(grad_h, grad_w)
        return total

    @staticmethod
    def backward(ctx, grad_out: Tensor):  # type: ignore[override]
        grad_h, grad_w = ctx.saved_tensors
        gh = grad_h * grad_out.to(grad_h.dtype) if grad_h is not None else None
        gw = (grad_w * grad_out).to(ctx.weight_dtype) if grad_w is not None else None
        return gh, gw, None, None, None


def linear_label_smoothed_loss(
    hidden: Tensor, weight: Tensor, target: Tensor, eps: float, chunk: int = CHUNK_ROWS
) -> Tensor:
    """Summed label-smoothed CE of ``hidden @ weight.T`` without the full logits.

    hidden [N,D] (real target positions only), weight [V,D] (the pre-softmax projection), target [N].
    Equals ``label_smoothed_loss(F.linear(hidden, weight), target, eps, pad)[0]`` for targets without
    padding, gradients included. Without grad mode it only sums the loss (validation).
    """
    if not torch.is_grad_enabled() or not (hidden.requires_grad or weight.requires_grad):
        total = torch.zeros((), dtype=torch.float32, device=hidden.device)
        for a in range(0, hidden.size(0), chunk):
            total += _chunk_loss(F.linear(hidden[a : a + chunk], weight).float(), target[a : a + chunk], eps)[0].sum()
        return total
    return _LinearCrossEntropy.apply(hidden, weight, target, float(eps), int(chunk))
