"""The decoder-only language model: one causal stack of the Transformer's own parts (GPT-style).

Each layer is masked self-attention and the FFN, each in its residual wrapper (the same slot modules
as the translator's: every attention, positional, norm, FFN and residual variant runs in both); no
encoder, no cross-attention. Tokens are embedded (scaled by sqrt(d_model) unless
``scale_embeddings`` is off), positions added or applied in attention, and the output projection is
the embedding matrix (tied) unless ``tie_embeddings`` is off. Every part arrives built (build.py).

Training blocks have no padding (fixed-length blocks of one token stream, documents separated by EOS:
ablate/data/lm_blocks.py), so the only mask is the causal one. ``features`` / ``output_weight`` are the
interface the training step uses, as for the translator.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch.nn.functional as F
from torch import Tensor, nn

from ablate.model.dropout import Dropout
from ablate.model.transformer import _wrap, causal_mask


class CausalLayer(nn.Module):
    """Masked self-attention and FFN sub-layers, each in a residual wrapper."""

    def __init__(self, self_attn: nn.Module, ffn: nn.Module, residuals: Sequence[nn.Module]) -> None:
        super().__init__()
        self.self_attn, self.ffn = self_attn, ffn
        self.res_attn, self.res_ffn = residuals
        _wrap(residuals, (self_attn, ffn))

    def forward(self, x: Tensor, mask: Tensor | None, causal: bool, positional: nn.Module) -> Tensor:
        x = self.res_attn(x, self.self_attn, attn_mask=mask, is_causal=causal, positional=positional, offset=0)
        return self.res_ffn(x, self.ffn)


class LanguageModel(nn.Module):
    """Next-token prediction over one vocabulary: [B, T] token ids -> logits [B, T, V]."""

    def __init__(
        self,
        *,
        embed: nn.Embedding,
        out_proj: nn.Linear | None,
        positional: nn.Module,
        layers: Sequence[CausalLayer],
        norm: nn.Module | None,
        d_model: int,
        dropout: float,
        scale_embeddings: bool = True,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        self.embed, self.out_proj, self.positional = embed, out_proj, positional
        self.layers = nn.ModuleList(layers)
        self.norm = norm
        self.embed_dropout = Dropout(dropout)
        self.d_model = d_model
        self.vocab_size = embed.num_embeddings
        self.pad_id = pad_id
        self.embed_scale = math.sqrt(d_model) if scale_embeddings else 1.0

    @property
    def output_weight(self) -> Tensor:
        """The pre-softmax projection [V, D] (the embedding matrix when tied)."""
        return self.embed.weight if self.out_proj is None else self.out_proj.weight

    @staticmethod
    def batch_inputs(batch: Mapping[str, Tensor]) -> tuple[Tensor, ...]:
        """The arguments of ``forward`` / ``features`` in a batch: its tokens (a language model's batches
        have no source)."""
        return (batch["tgt_in"],)

    def features(self, tokens: Tensor) -> Tensor:
        """[B, T] token ids -> the last layer's output before the projection [B, T, D]."""
        mask, causal = causal_mask(self.positional, tokens.size(1), 0, tokens.device)
        x = self.embed_dropout(self.positional(self.embed(tokens) * self.embed_scale, 0))
        for layer in self.layers:
            x = layer(x, mask, causal, self.positional)
        return x if self.norm is None else self.norm(x)

    def forward(self, tokens: Tensor) -> Tensor:
        """[B, T] token ids -> unnormalized next-token logits [B, T, V]."""
        return F.linear(self.features(tokens), self.output_weight)
