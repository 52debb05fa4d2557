"""Incremental decoding (docs/architecture.md, "Model") beyond the per-variant contract (cached ==
full, chunks, reorder_cache: tests/model/test_contract.py): what the cache holds and beam reorders."""

from __future__ import annotations

from typing import Any

import torch

from ablate.config import model_section
from ablate.model import build_model
from ablate.model.transformer import Transformer

VOCAB = 32


def _model(cfg: dict[str, Any]) -> Transformer:
    torch.manual_seed(0)
    return build_model(model_section(cfg), vocab_size=VOCAB).eval()


def _tokens(b: int, t: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, VOCAB, (b, t), generator=g)


def _padded_source() -> torch.Tensor:
    src = _tokens(3, 7, 1)
    src[0, 4:] = 0  # a shorter sentence: cross-attention must keep ignoring its padding
    return src


def test_cross_attention_keys_are_computed_once(tiny_model_cfg: dict[str, Any]) -> None:
    model = _model(tiny_model_cfg)
    src, tgt = _padded_source(), _tokens(3, 3, 2)
    with torch.no_grad():
        memory, src_pad = model.encode(src)
        cache = model.new_cache()
        model.decode(tgt[:, :1], memory, src_pad, cache=cache)
        cross_k = cache.cross_attn[0]["k"]
        self_k = cache.self_attn[0]["k"]
        model.decode(tgt[:, 1:2], memory, src_pad, cache=cache)
    assert cache.cross_attn[0]["k"] is cross_k  # reused, not recomputed
    assert self_k.shape[2] == 1 and cache.self_attn[0]["k"].shape[2] == 2  # self-attention K/V appended


def test_beam_reorder_keeps_cross_attention_cache(tiny_model_cfg: dict[str, Any]) -> None:
    # Beams of one sentence share the source, so a beam reorder need not touch cross-attention K/V.
    model = _model(tiny_model_cfg)
    src = _tokens(1, 6, 1).expand(3, -1)  # one sentence, 3 beams
    tgt = _tokens(3, 4, 2)
    index = torch.tensor([1, 1, 0])  # beam 1 survives twice, beam 0 once
    with torch.no_grad():
        memory, src_pad = model.encode(src)
        cache = model.new_cache()
        model.decode(tgt[:, :2], memory, src_pad, cache=cache)
        cross_k = cache.cross_attn[0]["k"]
        model.reorder_cache(cache, index)
        last = model.decode(tgt[index, 2:], memory, src_pad, cache=cache)
        expected = model(src, tgt[index])[:, 2:]
    assert cache.cross_attn[0]["k"] is cross_k
    torch.testing.assert_close(last, expected, atol=1e-5, rtol=0)
