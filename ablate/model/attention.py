"""Attention: the ``attention`` registry and the paper's multi-head attention (section 3.2).

Registered here: ``mha``, scaled dot-product attention over h heads with query/key width d_k and
value width d_v chosen independently of d_model / h (Table 3 rows A and B); ``gqa`` (grouped-query:
n_kv_heads key/value heads shared by groups of query heads), ``mqa`` (one key/value head), ``qknorm``
(queries and keys RMS-normalized per head before the dot product), ``talking_heads`` (the heads'
logits and weights mixed across heads before and after the softmax) and ``sigmoid`` (an element-wise
sigmoid in place of the softmax).

The protocol every attention class follows
------------------------------------------
Constructor keywords (each class receives those its signature names, plus the slot's ``args``):
``d_model, n_heads, d_k, d_v, dropout`` (the attention-weight dropout). ``num_params(**same)`` gives
the closed-form parameter count.

``forward(query, key_value=None, *, attn_mask=None, is_causal=False, cache=None, positional=None,
offset=0) -> [B, Tq, D]``

- ``key_value is None``: self-attention over ``query``. ``key_value`` given: cross-attention.
- ``attn_mask``: ``None``, a bool mask (True = may attend) or an additive float mask, broadcastable to
  ``[B, H, Tq, Tk]``; ``is_causal`` asks the kernel for the causal mask itself (Tq == Tk, no cache).
  The Transformer builds both once per stack (see transformer.py), so an attention class never does.
- ``cache``: a dict this module owns for one layer's incremental decoding. Self-attention appends
  its new keys/values; cross-attention fills it on first use and reuses it afterwards. Every value
  must be a tensor with the batch on dim 0, so the model can reorder any variant's cache generically
  (beam search) with ``index_select(0, index)``.
- ``positional`` / ``offset``: for self-attention, a positional module whose ``rotate`` is applied to
  the queries and new keys at positions ``offset ..`` when it sets ``rotates_qk`` (rotary encodings).

:class:`Attention` implements all of that once: the self/cross split, the fused projections, the
KV-cache dict, the rotation. A variant subclasses it, passes ``kv_heads`` and overrides what it
changes: the projections (``project_q`` / ``project_kv``) or the scores (``attend``). ``gqa`` is 20 lines.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ablate.config.variants import (
    attention_params,
    check_heads,
    default_kv_heads,
    gqa_params,
    mha_params,
    mqa_params,
    qknorm_params,
    talking_heads_params,
)
from ablate.registry import Registry

ATTENTION: Registry[type[nn.Module]] = Registry("attention", "how queries attend to keys and values")


class Attention(nn.Module):
    """Base: h query heads and ``kv_heads`` key/value heads (h must be a multiple), one fused W_Q|W_K|W_V."""

    def __init__(
        self, d_model: int, n_heads: int, d_k: int, d_v: int, dropout: float = 0.0, *, kv_heads: int | None = None
    ) -> None:
        super().__init__()
        kv_heads = n_heads if kv_heads is None else kv_heads
        check_heads(n_heads, kv_heads)
        self.n_heads, self.kv_heads, self.d_k, self.d_v, self.dropout = n_heads, kv_heads, d_k, d_v, dropout
        self.widths = [n_heads * d_k, kv_heads * d_k, kv_heads * d_v]  # rows of W_Q, W_K, W_V
        # stacked in one matrix: self-attention projects with one matmul, cross-attention uses row slices
        self.in_proj = nn.Linear(d_model, sum(self.widths))
        self.out_proj = nn.Linear(n_heads * d_v, d_model)
        self.reset_parameters()

    # closed-form parameter count of this layout (subclasses call it from their ``num_params``)
    count = staticmethod(attention_params)

    def reset_parameters(self) -> None:
        # Xavier-uniform per projection (as fairseq / tensor2tensor); the paper does not specify.
        for part in self.in_proj.weight.split(self.widths):
            nn.init.xavier_uniform_(part)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.zeros_(self.in_proj.bias)
        nn.init.zeros_(self.out_proj.bias)

    def scale_residual_init(self, beta: float) -> None:
        """DeepNet's init: scale W_V and W_O by beta, leave W_Q and W_K (ablate/model/residual.py)."""
        v = sum(self.widths[:2])
        self.in_proj.weight.data[v:] *= beta
        self.out_proj.weight.data *= beta

    def _heads(self, x: Tensor, width: int) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, -1, width).transpose(1, 2)  # [B, heads, T, width] (a view)

    def project_q(self, x: Tensor) -> Tensor:
        """[B, T, D] -> queries [B, H, T, K]."""
        q = self.widths[0]
        return self._heads(F.linear(x, self.in_proj.weight[:q], self.in_proj.bias[:q]), self.d_k)

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """[B, T, D] -> keys [B, H_kv, T, K], values [B, H_kv, T, V]."""
        q = self.widths[0]
        k, v = F.linear(x, self.in_proj.weight[q:], self.in_proj.bias[q:]).split(self.widths[1:], dim=-1)
        return self._heads(k, self.d_k), self._heads(v, self.d_v)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention: all three projections in one matmul."""
        q, k, v = self.in_proj(x).split(self.widths, dim=-1)
        return self._heads(q, self.d_k), self._heads(k, self.d_k), self._heads(v, self.d_v)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        """Scaled dot-product attention (section 3.2.1, scale 1/sqrt(d_k)) -> [B, H, Tq, V]."""
        p = self.dropout if self.training else 0.0
        gqa = self.kv_heads != self.n_heads  # the kernel shares each K/V head across its query group
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, dropout_p=p, is_causal=is_causal, enable_gqa=gqa
        )

    def forward(
        self,
        query: Tensor,
        key_value: Tensor | None = None,
        *,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        cache: dict[str, Tensor] | None = None,
        positional: nn.Module | None = None,
        offset: int = 0,
    ) -> Tensor:
        if key_value is None:  # self-attention: one fused projection; cache the new keys after rotation
            q, k, v = self.project_qkv(query)
            if positional is not None and positional.rotates_qk:
                q, k = positional.rotate(q, offset), positional.rotate(k, offset)
            if cache is not None:
                if "k" in cache:  # append the new positions to the cached ones
                    k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        else:  # cross-attention: K/V of the encoder output, computed once per sentence when cached
            q = self.project_q(query)
            if cache is not None and "k" in cache:
                k, v = cache["k"], cache["v"]
            else:
                k, v = self.project_kv(key_value)
                if cache is not None:
                    cache["k"], cache["v"] = k, v
        out = self.attend(q, k, v, attn_mask, is_causal)
        b, _, t, _ = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(b, t, self.n_heads * self.d_v))


@ATTENTION.register("mha")
class MultiHeadAttention(Attention):
    """Multi-head scaled dot-product attention with independent d_k and d_v (section 3.2.2)."""

    def __init__(self, d_model: int, n_heads: int, d_k: int, d_v: int, dropout: float = 0.0) -> None:
        super().__init__(d_model, n_heads, d_k, d_v, dropout)

    num_params = staticmethod(mha_params)  # closed forms: ablate/config/variants.py (no torch)


@ATTENTION.register("gqa")
class GroupedQueryAttention(Attention):
    """n_kv_heads key/value heads, each shared by n_heads / n_kv_heads query heads (Ainslie et al. 2023, GQA)."""

    def __init__(
        self, d_model: int, n_heads: int, d_k: int, d_v: int, dropout: float = 0.0, n_kv_heads: int | None = None
    ) -> None:
        kv = default_kv_heads(n_heads) if n_kv_heads is None else n_kv_heads
        super().__init__(d_model, n_heads, d_k, d_v, dropout, kv_heads=kv)

    num_params = staticmethod(gqa_params)


@ATTENTION.register("mqa")
class MultiQueryAttention(Attention):
    """One key/value head shared by every query head (Shazeer 2019, "Fast Transformer Decoding")."""

    def __init__(self, d_model: int, n_heads: int, d_k: int, d_v: int, dropout: float = 0.0) -> None:
        super().__init__(d_model, n_heads, d_k, d_v, dropout, kv_heads=1)

    num_params = staticmethod(mqa_params)


@ATTENTION.register("qknorm")
class QKNormAttention(Attention):
    """Queries and keys RMS-normalized per head before the dot product (QK-norm; Dehghani et al. 2023).

    Each has a learned gain over d_k, shared by the heads; normalizing bounds the logits (ViT-22B's
    fix for diverging attention; Henry et al. 2020 normalize by the L2 norm with a learned scale).
    Rotary positions rotate the normalized vectors."""

    def __init__(self, d_model: int, n_heads: int, d_k: int, d_v: int, dropout: float = 0.0, eps: float = 1e-6) -> None:
        super().__init__(d_model, n_heads, d_k, d_v, dropout)
        self.q_norm, self.k_norm = nn.RMSNorm(d_k, eps=eps), nn.RMSNorm(d_k, eps=eps)

    num_params = staticmethod(qknorm_params)

    def project_q(self, x: Tensor) -> Tensor:
        return self.q_norm(super().project_q(x))

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        k, v = super().project_kv(x)
        return self.k_norm(k), v

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        q, k, v = super().project_qkv(x)
        return self.q_norm(q), self.k_norm(k), v


def _masked_logits(logits: Tensor, attn_mask: Tensor | None, is_causal: bool, fill: float) -> Tensor:
    """Scores with masked positions set to ``fill`` (a bool mask: True = may attend; else additive)."""
    if is_causal:
        t_q, t_k = logits.shape[-2:]
        logits = logits.masked_fill(~torch.ones(t_q, t_k, dtype=torch.bool, device=logits.device).tril(), fill)
    if attn_mask is not None:
        logits = logits.masked_fill(~attn_mask, fill) if attn_mask.dtype == torch.bool else logits + attn_mask
    return logits


@ATTENTION.register("sigmoid")
class SigmoidAttention(Attention):
    """Sigmoid attention: sigmoid(q.k / sqrt(d_k) - log n) in place of the softmax (Ramapuram et al. 2024).

    "Theory, Analysis, and Best Practices for Sigmoid Self-Attention": each weight is squashed on its
    own, no normalization over the keys; the bias -log n (n: the keys' length) starts the weights near
    the softmax's scale. Chosen as the one-class variant users ask about most since 2024: a drop-in
    change that removes the softmax's row normalization."""

    def __init__(self, d_model: int, n_heads: int, d_k: int, d_v: int, dropout: float = 0.0) -> None:
        super().__init__(d_model, n_heads, d_k, d_v, dropout)

    num_params = staticmethod(mha_params)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        # an additive mask (ALiBi, T5 biases) is added; masked keys get -inf and weigh 0 after the sigmoid
        logits = _masked_logits(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), attn_mask, is_causal, float("-inf"))
        n = logits.isfinite().sum(dim=-1, keepdim=True).clamp_min(1)  # keys each query may see, padding not
        return F.dropout(torch.sigmoid(logits - n.log()), self.dropout, self.training) @ v


@ATTENTION.register("talking_heads")
class TalkingHeadsAttention(Attention):
    """Heads' logits and weights mixed by learned h x h maps around the softmax (Shazeer et al. 2020).

    "Talking-Heads Attention": both maps start as the identity, so the layer starts as ``mha``. The
    mixing needs the logits, so the scores are computed here, not by a fused kernel."""

    def __init__(self, d_model: int, n_heads: int, d_k: int, d_v: int, dropout: float = 0.0) -> None:
        super().__init__(d_model, n_heads, d_k, d_v, dropout)
        self.pre_mix = nn.Parameter(torch.eye(n_heads))
        self.post_mix = nn.Parameter(torch.eye(n_heads))

    num_params = staticmethod(talking_heads_params)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        logits = torch.einsum("bhqk,hg->bgqk", q @ k.transpose(-2, -1) / math.sqrt(self.d_k), self.pre_mix)
        lowest = torch.finfo(logits.dtype).min  # not -inf: a fully masked row (padding) stays finite
        logits = _masked_logits(logits, attn_mask, is_causal, lowest)
        weights = torch.einsum("bhqk,hg->bgqk", logits.softmax(dim=-1), self.post_mix)
        weights = F.dropout(weights, self.dropout, self.training)
        return weights @ v
