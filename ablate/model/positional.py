"""Positional information: the ``positional`` registry (Vaswani et al. 2017, section 3.5; Table 3 row E).

Registered here: ``sinusoidal`` (the paper's fixed sine/cosine encodings) and ``learned`` (a trained
position embedding table, row E).

The protocol (what a positional class may do)
---------------------------------------------
A positional encoding can act at three places, and a variant overrides only what it needs; the base
class :class:`PositionalEncoding` makes every hook a no-op, so the layers never test for a variant:

``forward(x, offset)``
    Embeddings ``[B, T, D]`` (already scaled by sqrt(d_model)) at positions ``offset .. offset+T-1``
    -> ``[B, T, D]``. Additive encodings (sinusoidal, learned) add here; rotary / ALiBi return ``x``.
``rotate(x, offset)`` (only called when the class sets ``rotates_qk = True``)
    Per-head queries or keys ``[B, H, T, K]`` at positions ``offset ..`` -> same shape. Self-attention
    calls it on the projected queries and the *new* keys before caching them, so a rotary encoding
    (RoPE) is one class overriding this method. Cross-attention never rotates (source and target
    positions are unrelated).
``attn_bias(q_len, k_len, offset)``
    ``None`` or an additive float bias ``[H, Tq, Tk]`` for self-attention scores, queries at positions
    ``offset ..``, keys at ``0 ..`` (ALiBi is one class overriding this). The Transformer builds it once
    per stack and call and merges it with the padding / causal mask.

The encoder and the decoder each get their own instance (two learned tables, as in fairseq).

Constructors take keyword numbers only, from ``d_model, max_positions, n_heads, d_k`` plus the slot's
``args``; each class receives only the names its signature lists. ``num_params(**same kwargs)``
gives the closed-form parameter count used by :func:`ablate.model.build.count_parameters` (a class
that does not define it in its own body is counted by building it on the meta device).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ablate.registry import Registry

POSITIONAL: Registry[type[nn.Module]] = Registry(
    "positional", "where position information enters the model (embeddings, q/k rotation or attention bias)"
)


class PositionalEncoding(nn.Module):
    """Base class: every hook is a no-op. Subclasses override one or more of them."""

    rotates_qk: bool = False  # True: self-attention calls rotate() on its queries and keys

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        return x

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        return x

    def attn_bias(self, q_len: int, k_len: int, offset: int = 0) -> Tensor | None:
        return None


def sinusoid_table(n_positions: int, d_model: int, offset: int = 0) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...), interleaved as in section 3.5."""
    pos = torch.arange(offset, offset + n_positions, dtype=torch.float64).unsqueeze(1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    angles = pos * inv_freq  # [P, ceil(D/2)]
    table = torch.empty(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    # computed in float64 so large positions keep their precision, then stored as fp32
    return table.to(torch.float32)


@POSITIONAL.register("sinusoidal")
class SinusoidalPositional(PositionalEncoding):
    """Fixed sine/cosine encodings added to the embeddings (section 3.5); no parameters."""

    def __init__(self, d_model: int, max_positions: int = 1024) -> None:
        super().__init__()
        self.d_model = d_model
        # a buffer, not a parameter: not trained; not saved (it is a pure function of the shape)
        self.register_buffer("table", sinusoid_table(max_positions, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        t = x.size(1)
        if offset + t <= self.table.size(0):
            pe = self.table[offset : offset + t]
        else:  # sinusoids extrapolate: compute positions past the precomputed table on the fly
            pe = sinusoid_table(t, self.d_model, offset).to(x.device)
        return x + pe.to(x.dtype)

    @staticmethod
    def num_params(d_model: int, max_positions: int = 1024) -> int:
        return 0


@POSITIONAL.register("learned")
class LearnedPositional(PositionalEncoding):
    """A trained embedding per position added to the embeddings (Table 3 row E, after Gehring et al. 2017)."""

    def __init__(self, d_model: int, max_positions: int = 1024) -> None:
        super().__init__()
        self.embed = nn.Embedding(max_positions, d_model)
        # same scale as the token embeddings (normal, std d_model^-0.5) so neither dominates the sum
        nn.init.normal_(self.embed.weight, mean=0.0, std=d_model**-0.5)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        t = x.size(1)
        limit = self.embed.num_embeddings
        if offset + t > limit:  # the config loader keeps max_positions above every length it allows
            raise ValueError(f"positions {offset}..{offset + t - 1} are past the learned table's {limit} rows")
        positions = torch.arange(offset, offset + t, device=x.device)
        return x + self.embed(positions).to(x.dtype)

    @staticmethod
    def num_params(d_model: int, max_positions: int = 1024) -> int:
        return max_positions * d_model
