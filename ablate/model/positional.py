"""Positional information: the ``positional`` registry (Vaswani et al. 2017, section 3.5; Table 3 row E).

Registered here: ``sinusoidal`` (the paper's fixed sine/cosine encodings), ``learned`` (a trained
position embedding table, row E), ``rope`` (rotary queries/keys), ``alibi`` (linear distance biases),
``t5`` (learned bucketed relative biases) and ``none`` (no position information at all).

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
    (``rope``) is one class overriding this method. Cross-attention never rotates (source and target
    positions are unrelated).
``attn_bias(q_len, k_len, offset)``
    ``None`` or an additive float bias ``[H, Tq, Tk]`` for self-attention scores, queries at positions
    ``offset ..``, keys at ``0 ..`` (``alibi`` and ``t5`` override this). The Transformer builds it once
    per stack and call and merges it with the padding / causal mask.

The encoder and the decoder each get their own instance (two learned tables, as in fairseq).

Constructors take keyword numbers only, from ``d_model, max_positions, n_heads, d_k, causal`` (causal:
True for the decoder's instance) plus the slot's ``args``; each class receives only the names its
signature lists. ``num_params(**same kwargs)`` gives the closed-form parameter count used by
:func:`ablate.model.build.count_parameters` (a class that does not define it in its own body is
counted by building it on the meta device). The built-ins take theirs from ablate/config/variants.py,
where the config check and the dry run count them without importing torch.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ablate.config.variants import learned_params, no_params, rope_params, sinusoidal_params, t5_params
from ablate.registry import Registry

POSITIONAL: Registry[type[nn.Module]] = Registry(
    "positional", "where position information enters the model (embeddings, q/k rotation or attention bias)"
)


class PositionalEncoding(nn.Module):
    """Base class: every hook is a no-op. Subclasses override one or more of them."""

    rotates_qk: bool = False  # True: self-attention calls rotate() on its queries and keys
    # True: positions past max_positions work (computed on the fly, or relative). False: the data's
    # longest dev/test sentence and the decoding length limit are checked against max_positions before
    # training starts (a plugin with a fixed table keeps the default).
    extrapolates: bool = False

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        return x

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        return x

    def attn_bias(self, q_len: int, k_len: int, offset: int = 0) -> Tensor | None:
        return None


def fixed_positions(model: nn.Module) -> list[str]:
    """Names of the positional encodings in ``model`` that cannot go past ``model.max_positions`` (their
    ``extrapolates`` is False): the lengths a model reaches are asked here, by the translator's dev-set
    check, a language model's evaluation lengths and the model contract alike."""
    return sorted(
        {type(m).__name__ for m in model.modules() if isinstance(m, PositionalEncoding) and not m.extrapolates}
    )


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

    extrapolates = True

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

    num_params = staticmethod(sinusoidal_params)


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

    num_params = staticmethod(learned_params)


@POSITIONAL.register("none")
class NoPositional(PositionalEncoding):
    """No position information; the causal decoder can still infer order (Haviv et al. 2022, NoPE)."""

    extrapolates = True

    def __init__(self) -> None:
        super().__init__()

    num_params = staticmethod(no_params)


@POSITIONAL.register("rope")
class Rotary(PositionalEncoding):
    """Rotary position embedding on self-attention queries and keys (Su et al. 2021, RoFormer)."""

    extrapolates = True

    rotates_qk = True

    def __init__(self, d_k: int, max_positions: int = 1024, base: float = 10000.0) -> None:
        super().__init__()
        self.num_params(d_k=d_k)  # refuses an odd d_k
        self.base, self.d_k = base, d_k
        self.register_buffer("cos", torch.empty(0), persistent=False)
        self.register_buffer("sin", torch.empty(0), persistent=False)
        self._angles(max_positions)

    def _angles(self, n: int) -> None:
        inv_freq = self.base ** (-torch.arange(0, self.d_k, 2, dtype=torch.float64) / self.d_k)
        angles = torch.outer(torch.arange(n, dtype=torch.float64), inv_freq)  # [P, K/2]
        self.cos, self.sin = angles.cos().float().to(self.cos.device), angles.sin().float().to(self.sin.device)

    num_params = staticmethod(rope_params)  # refuses an odd d_k

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        t = x.shape[-2]
        if offset + t > self.cos.size(0):  # rotations extrapolate: extend the table
            self._angles(2 * (offset + t))
        cos, sin = self.cos[offset : offset + t].to(x.dtype), self.sin[offset : offset + t].to(x.dtype)
        x1, x2 = x[..., 0::2], x[..., 1::2]  # [B, H, T, K/2] each
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def alibi_slopes(n_heads: int) -> Tensor:
    """Head slopes 2^(-8/n), 2^(-16/n), ...; for n not a power of 2, the closest power's slopes plus
    every other slope of the next power (Press et al. 2022, section 3)."""

    def powers(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    low = 2 ** math.floor(math.log2(n_heads))
    slopes = powers(low) + powers(2 * low)[0::2][: n_heads - low]
    return torch.tensor(slopes, dtype=torch.float32)


def distances(q_len: int, k_len: int, offset: int, device: torch.device | None = None) -> Tensor:
    """[Tq, Tk] signed distance key - query, queries at positions offset.., keys at 0.."""
    q = torch.arange(offset, offset + q_len, device=device)
    return torch.arange(k_len, device=device)[None, :] - q[:, None]


@POSITIONAL.register("alibi")
class ALiBi(PositionalEncoding):
    """Self-attention scores biased by -slope_h * |i - j|, nothing added (Press et al. 2022, ALiBi)."""

    extrapolates = True

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    num_params = staticmethod(no_params)

    def attn_bias(self, q_len: int, k_len: int, offset: int = 0) -> Tensor:
        dist = distances(q_len, k_len, offset, self.slopes.device).abs().to(self.slopes.dtype)
        return -self.slopes[:, None, None] * dist  # [H, Tq, Tk]; symmetric in the encoder


def t5_bucket(rel: Tensor, bidirectional: bool, n_buckets: int, max_distance: int) -> Tensor:
    """T5's bucket of each relative position: exact for small distances, log-spaced up to max_distance."""
    bucket = torch.zeros_like(rel)
    if bidirectional:
        n_buckets //= 2
        bucket = (rel > 0).long() * n_buckets
        rel = rel.abs()
    else:
        rel = (-rel).clamp_min(0)  # only keys at or before the query
    exact = n_buckets // 2
    far = (
        exact
        + (torch.log(rel.float().clamp_min(1) / exact) / math.log(max_distance / exact) * (n_buckets - exact)).long()
    )
    return bucket + torch.where(rel < exact, rel, far.clamp_max(n_buckets - 1))


@POSITIONAL.register("t5")
class T5RelativeBias(PositionalEncoding):
    """A learned per-head bias per bucketed relative distance, shared by a stack's layers (Raffel et al. 2020, T5)."""

    extrapolates = True

    def __init__(self, n_heads: int, causal: bool = False, n_buckets: int = 32, max_distance: int = 128) -> None:
        super().__init__()
        self.bidirectional = not causal  # the decoder spends every bucket on past keys, as in T5
        self.n_buckets, self.max_distance = n_buckets, max_distance
        self.bias = nn.Embedding(n_buckets, n_heads)
        nn.init.normal_(self.bias.weight, std=0.1)

    num_params = staticmethod(t5_params)

    def attn_bias(self, q_len: int, k_len: int, offset: int = 0) -> Tensor:
        rel = distances(q_len, k_len, offset, self.bias.weight.device)
        buckets = t5_bucket(rel, self.bidirectional, self.n_buckets, self.max_distance)
        return self.bias(buckets).permute(2, 0, 1)  # [H, Tq, Tk]
