"""The encoder-decoder Transformer of "Attention Is All You Need" (section 3, figure 1).

- Encoder layer: self-attention, then the position-wise FFN; decoder layer: masked self-attention,
  encoder-decoder (cross) attention, FFN (section 3.1).
- Residual connections with dropout on every sub-layer output (section 5.4, "residual dropout"): each
  sub-layer arrives wrapped by a ``residual`` slot module (ablate/model/residual.py: post-norm as in the
  paper, pre-norm, sandwich, DeepNet); a placement that wants a final norm per stack gets one here.
- Embeddings scaled by sqrt(d_model), positional information added, then dropout (sections 3.4, 5.4).
  Source embedding, target embedding and pre-softmax projection share one matrix unless untied.
- Incremental decoding: ``encode`` once, then ``decode`` one step at a time with a :class:`DecoderCache`
  (contract in docs/architecture.md).

Every part arrives built (from build.py); this file never reads a config. Masks are built once per
stack and call here, so attention classes only ever receive ready ``attn_mask`` / ``is_causal``.
Right-padded targets are assumed (the data contract): the causal mask then already keeps real
target tokens from seeing padding, so decoder self-attention needs no padding mask.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ablate.data.special import PAD_ID
from ablate.model.dropout import Dropout


@dataclass
class DecoderCache:
    """Incremental-decoding state: per decoder layer, the self- and cross-attention caches."""

    self_attn: list[dict[str, Tensor]] = field(default_factory=list)
    cross_attn: list[dict[str, Tensor]] = field(default_factory=list)
    length: int = 0  # target positions already decoded (the next token's position)


def _wrap(residuals: Sequence[nn.Module], sublayers: Sequence[nn.Module]) -> None:
    for residual, sublayer in zip(residuals, sublayers, strict=True):
        residual.init_sublayer(sublayer)  # e.g. DeepNet's beta; a no-op for the paper's post-norm


class EncoderLayer(nn.Module):
    """Self-attention and FFN sub-layers, each in a residual wrapper (section 3.1, encoder)."""

    def __init__(self, self_attn: nn.Module, ffn: nn.Module, residuals: Sequence[nn.Module]) -> None:
        super().__init__()
        self.self_attn, self.ffn = self_attn, ffn
        self.res_attn, self.res_ffn = residuals
        _wrap(residuals, (self_attn, ffn))

    def forward(self, x: Tensor, attn_mask: Tensor | None, positional: nn.Module) -> Tensor:
        x = self.res_attn(x, self.self_attn, attn_mask=attn_mask, positional=positional)
        return self.res_ffn(x, self.ffn)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output and FFN (section 3.1, decoder)."""

    def __init__(
        self,
        self_attn: nn.Module,
        cross_attn: nn.Module,
        ffn: nn.Module,
        residuals: Sequence[nn.Module],
    ) -> None:
        super().__init__()
        self.self_attn, self.cross_attn, self.ffn = self_attn, cross_attn, ffn
        self.res_self, self.res_cross, self.res_ffn = residuals
        _wrap(residuals, (self_attn, cross_attn, ffn))

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None,
        self_causal: bool,
        cross_mask: Tensor | None,
        positional: nn.Module,
        offset: int = 0,
        self_cache: dict[str, Tensor] | None = None,
        cross_cache: dict[str, Tensor] | None = None,
    ) -> Tensor:
        x = self.res_self(
            x,
            self.self_attn,
            attn_mask=self_mask,
            is_causal=self_causal,
            cache=self_cache,
            positional=positional,
            offset=offset,
        )
        x = self.res_cross(x, self.cross_attn, memory, attn_mask=cross_mask, cache=cross_cache)
        return self.res_ffn(x, self.ffn)


def _with_bias(allowed: Tensor | None, bias: Tensor | None) -> Tensor | None:
    """Merge a bool mask (True = may attend) with an additive positional bias [H, Tq, Tk]."""
    if bias is None:
        return allowed
    if allowed is None:
        return bias
    return torch.where(allowed, bias, float("-inf"))  # broadcasts to [B, H, Tq, Tk]


def causal_mask(positional: nn.Module, t: int, offset: int, device: torch.device) -> tuple[Tensor | None, bool]:
    """(mask, is_causal) of causal self-attention for queries at offset.. over keys 0..offset+t-1, with the
    positional encoding's bias (ALiBi, T5) merged in; the decoder's and a language model's."""
    bias = positional.attn_bias(t, offset + t, offset)
    if t == 1:  # a single new query may see every cached key
        return bias, False
    if offset == 0 and bias is None:  # let the kernel apply the causal mask itself
        return None, True
    allowed = torch.ones(t, offset + t, dtype=torch.bool, device=device).tril(diagonal=offset)
    return _with_bias(allowed, bias), False


class Transformer(nn.Module):
    """Encoder-decoder Transformer for translation over a shared source-target vocabulary."""

    def __init__(
        self,
        *,
        src_embed: nn.Embedding,
        tgt_embed: nn.Embedding,
        out_proj: nn.Linear | None,
        src_positional: nn.Module,
        tgt_positional: nn.Module,
        encoder_layers: Sequence[EncoderLayer],
        decoder_layers: Sequence[DecoderLayer],
        encoder_norm: nn.Module | None,
        decoder_norm: nn.Module | None,
        d_model: int,
        dropout: float,
        scale_embeddings: bool = True,
        pad_id: int = PAD_ID,
    ) -> None:
        super().__init__()
        self.src_embed, self.tgt_embed, self.out_proj = src_embed, tgt_embed, out_proj
        self.src_positional, self.tgt_positional = src_positional, tgt_positional
        self.encoder_layers = nn.ModuleList(encoder_layers)
        self.decoder_layers = nn.ModuleList(decoder_layers)
        self.encoder_norm, self.decoder_norm = encoder_norm, decoder_norm
        self.embed_dropout = Dropout(dropout)
        self.d_model = d_model
        self.vocab_size = src_embed.num_embeddings
        self.pad_id = pad_id
        self.embed_scale = math.sqrt(d_model) if scale_embeddings else 1.0

    @property
    def output_weight(self) -> Tensor:
        """The pre-softmax projection [V, D] (the shared embedding matrix when tied)."""
        return self.tgt_embed.weight if self.out_proj is None else self.out_proj.weight

    def _embed(self, tokens: Tensor, embed: nn.Embedding, positional: nn.Module, offset: int = 0) -> Tensor:
        x = embed(tokens) * self.embed_scale
        return self.embed_dropout(positional(x, offset))

    # -- encoder -------------------------------------------------------------------------------------
    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """[B, S] token ids -> (memory [B, S, D], src_pad [B, S] bool, True = padding)."""
        src_pad = src.eq(self.pad_id)
        s = src.size(1)
        allowed = ~src_pad[:, None, None, :]  # [B, 1, 1, S]
        mask = _with_bias(allowed, self.src_positional.attn_bias(s, s, 0))
        x = self._embed(src, self.src_embed, self.src_positional)
        for layer in self.encoder_layers:
            x = layer(x, mask, self.src_positional)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return x, src_pad

    # -- decoder -------------------------------------------------------------------------------------
    def new_cache(self) -> DecoderCache:
        """An empty incremental-decoding state for :meth:`decode`."""
        n = len(self.decoder_layers)
        return DecoderCache(self_attn=[{} for _ in range(n)], cross_attn=[{} for _ in range(n)])

    def _self_mask(self, t: int, offset: int, device: torch.device) -> tuple[Tensor | None, bool]:
        return causal_mask(self.tgt_positional, t, offset, device)

    def decode(self, tgt: Tensor, memory: Tensor, src_pad: Tensor, cache: DecoderCache | None = None) -> Tensor:
        """Target tokens -> logits [B, T, V].

        Without a cache ``tgt`` is the whole prefix [B, T]. With one, ``tgt`` holds only the new
        tokens; their positions continue after the cached ones, the cache is updated in place.
        """
        offset = cache.length if cache is not None else 0
        t = tgt.size(1)
        self_mask, causal = self._self_mask(t, offset, tgt.device)
        cross_mask = ~src_pad[:, None, None, :]
        x = self._embed(tgt, self.tgt_embed, self.tgt_positional, offset)
        for i, layer in enumerate(self.decoder_layers):
            x = layer(
                x,
                memory,
                self_mask,
                causal,
                cross_mask,
                self.tgt_positional,
                offset,
                cache.self_attn[i] if cache is not None else None,
                cache.cross_attn[i] if cache is not None else None,
            )
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        if cache is not None:
            cache.length = offset + t
        return F.linear(x, self.output_weight)

    def reorder_cache(self, cache: DecoderCache, index: Tensor, include_cross: bool = False) -> DecoderCache:
        """Select rows ``index`` [B'] of every cached tensor (beam reorder, or shrinking finished rows).

        Cross-attention K/V depend only on the source sentence, identical across its beams, so a beam
        reorder leaves them; pass ``include_cross=True`` when the set of sentences changes.
        """
        groups = cache.self_attn + (cache.cross_attn if include_cross else [])
        for entry in groups:
            for key, value in entry.items():
                entry[key] = value.index_select(0, index)
        return cache

    @staticmethod
    def batch_inputs(batch: Mapping[str, Tensor]) -> tuple[Tensor, ...]:
        """The arguments of ``forward`` / ``features`` in a batch: source and shifted target."""
        return (batch["src"], batch["tgt_in"])

    def features(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """[B, S], [B, T] token ids -> decoder output before the pre-softmax projection [B, T, D]
        (teacher forcing): ``forward == F.linear(features, output_weight)``. Training projects only the
        real target positions (ablate/train/losses.py)."""
        memory, src_pad = self.encode(src)
        self_mask, causal = self._self_mask(tgt_in.size(1), 0, tgt_in.device)
        cross_mask = ~src_pad[:, None, None, :]
        x = self._embed(tgt_in, self.tgt_embed, self.tgt_positional)
        for layer in self.decoder_layers:
            x = layer(x, memory, self_mask, causal, cross_mask, self.tgt_positional)
        return x if self.decoder_norm is None else self.decoder_norm(x)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """[B, S], [B, T] token ids -> unnormalized logits [B, T, V] (teacher forcing)."""
        memory, src_pad = self.encode(src)
        return self.decode(tgt_in, memory, src_pad)
