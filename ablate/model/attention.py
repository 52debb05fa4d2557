"""Attention: the ``attention`` registry and the paper's multi-head attention (section 3.2).

Registered here: ``mha``, scaled dot-product attention over h heads with query/key width d_k and
value width d_v chosen independently of d_model / h (Table 3 rows A and B):
W_Q, W_K: d_model -> h*d_k, W_V: d_model -> h*d_v, W_O: h*d_v -> d_model, all with biases.

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

Grouped-query attention is one more registered class with an ``n_kv_heads`` arg and the same forward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ablate.registry import Registry

ATTENTION: Registry[type[nn.Module]] = Registry("attention", "how queries attend to keys and values")


@ATTENTION.register("mha")
class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention with independent d_k and d_v (section 3.2.2)."""

    def __init__(self, d_model: int, n_heads: int, d_k: int, d_v: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_heads, self.d_k, self.d_v, self.dropout = n_heads, d_k, d_v, dropout
        qk, v = n_heads * d_k, n_heads * d_v
        # W_Q, W_K and W_V stacked in one matrix: self-attention projects with a single matmul, and
        # cross-attention uses row slices of it (contiguous views, no copies).
        self.in_proj = nn.Linear(d_model, 2 * qk + v)
        self.out_proj = nn.Linear(v, d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Xavier-uniform per projection (as fairseq / tensor2tensor); the paper does not specify.
        qk = self.n_heads * self.d_k
        w = self.in_proj.weight
        for part in (w[:qk], w[qk : 2 * qk], w[2 * qk :]):
            nn.init.xavier_uniform_(part)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.zeros_(self.in_proj.bias)
        nn.init.zeros_(self.out_proj.bias)

    @staticmethod
    def num_params(d_model: int, n_heads: int, d_k: int, d_v: int) -> int:
        qk, v = n_heads * d_k, n_heads * d_v
        return (d_model + 1) * (2 * qk + v) + (v + 1) * d_model

    def _heads(self, x: Tensor, width: int) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, width).transpose(1, 2)  # [B, H, T, width] (a view)

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
        qk = self.n_heads * self.d_k
        w, bias = self.in_proj.weight, self.in_proj.bias
        if key_value is None:  # self-attention: one fused projection
            q, k, v = F.linear(query, w, bias).split([qk, qk, self.n_heads * self.d_v], dim=-1)
            q, k, v = self._heads(q, self.d_k), self._heads(k, self.d_k), self._heads(v, self.d_v)
            if positional is not None and positional.rotates_qk:
                q, k = positional.rotate(q, offset), positional.rotate(k, offset)
            if cache is not None:
                if "k" in cache:  # append the new positions to the cached ones
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        else:  # cross-attention: K/V of the encoder output, computed once per sentence when cached
            q = self._heads(F.linear(query, w[:qk], bias[:qk]), self.d_k)
            if cache is not None and "k" in cache:
                k, v = cache["k"], cache["v"]
            else:
                k, v = F.linear(key_value, w[qk:], bias[qk:]).split([qk, self.n_heads * self.d_v], dim=-1)
                k, v = self._heads(k, self.d_k), self._heads(v, self.d_v)
                if cache is not None:
                    cache["k"], cache["v"] = k, v
        # fused kernel; scale 1/sqrt(d_k) (section 3.2.1); q and k share d_k, v has d_v
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, dropout_p=self.dropout if self.training else 0.0, is_causal=is_causal
        )
        b, _, t, _ = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(b, t, self.n_heads * self.d_v))
