"""Incremental decoding (docs/architecture.md, "Model"): cached decoding equals the full decode for
every registered variant, chunked steps continue positions, and reorder_cache selects rows."""

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


def test_token_by_token_equals_full_decode(variant_cfg: dict[str, Any]) -> None:
    model = _model(variant_cfg)
    src, tgt = _padded_source(), _tokens(3, 6, 2)
    with torch.no_grad():
        full = model(src, tgt)
        memory, src_pad = model.encode(src)
        cache = model.new_cache()
        steps = [model.decode(tgt[:, i : i + 1], memory, src_pad, cache=cache) for i in range(6)]
    assert cache.length == 6
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=0)


def test_chunks_of_several_tokens_continue_positions(variant_cfg: dict[str, Any]) -> None:
    model = _model(variant_cfg)
    src, tgt = _padded_source(), _tokens(3, 7, 2)
    with torch.no_grad():
        full = model(src, tgt)
        memory, src_pad = model.encode(src)
        cache = model.new_cache()
        parts = [model.decode(tgt[:, a:b], memory, src_pad, cache=cache) for a, b in ((0, 3), (3, 4), (4, 7))]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-5, rtol=0)


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


def test_reorder_cache_selects_rows(variant_cfg: dict[str, Any]) -> None:
    # Shrinking / permuting the batch mid-decode (include_cross=True) equals decoding that batch from scratch.
    model = _model(variant_cfg)
    src, tgt = _padded_source(), _tokens(3, 5, 2)
    index = torch.tensor([2, 0])
    with torch.no_grad():
        expected = model(src[index], tgt[index])
        memory, src_pad = model.encode(src)
        cache = model.new_cache()
        first = model.decode(tgt[:, :2], memory, src_pad, cache=cache)
        model.reorder_cache(cache, index, include_cross=True)
        rest = model.decode(tgt[index, 2:], memory[index], src_pad[index], cache=cache)
    torch.testing.assert_close(torch.cat([first[index], rest], dim=1), expected, atol=1e-5, rtol=0)


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
