"""What each built-in variant beyond the paper does, by hand (the contract in test_contract.py checks
that they all keep the model's invariants)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from ablate.config import ConfigError, load_config, model_section
from ablate.model import build_model, count_parameters
from ablate.model.ffn import ReluFFN, SwiGLU
from ablate.model.norm import RMSNorm, ScaleNorm
from ablate.model.positional import ALiBi, Rotary, T5RelativeBias, alibi_slopes
from ablate.model.residual import deepnet_constants


def test_rope_scores_depend_on_relative_positions_only() -> None:
    enc = Rotary(d_k=8, max_positions=16)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    s1 = (enc.rotate(q, offset=5) * enc.rotate(k, offset=2)).sum()
    s2 = (enc.rotate(q, offset=40) * enc.rotate(k, offset=37)).sum()  # past the table: extended on the fly
    s3 = (enc.rotate(q, offset=20) * enc.rotate(k, offset=2)).sum()
    assert torch.allclose(s1, s2, atol=1e-4) and not torch.allclose(s1, s3, atol=1e-3)


def test_alibi_slopes_and_bias() -> None:
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0 ** -(i + 1) for i in range(8)]))
    assert alibi_slopes(6).shape == (6,) and alibi_slopes(6)[:4].tolist() == alibi_slopes(4).tolist()
    bias = ALiBi(n_heads=2).attn_bias(2, 4, offset=2)  # queries at 2, 3 over keys 0..3
    assert bias.shape == (2, 2, 4)
    assert bias[0, 0].tolist() == pytest.approx([-0.125, -0.0625, 0.0, -0.0625])  # head 0: slope 2^(-8/2) = 1/16


def test_t5_buckets_are_bidirectional_in_the_encoder_only() -> None:
    enc, dec = T5RelativeBias(n_heads=2, causal=False), T5RelativeBias(n_heads=2, causal=True)
    with torch.no_grad():
        enc.bias.weight.copy_(torch.arange(64.0).view(32, 2))
        dec.bias.weight.copy_(torch.arange(64.0).view(32, 2))
    e, d = enc.attn_bias(1, 5, offset=2)[0, 0], dec.attn_bias(1, 3, offset=2)[0, 0]
    assert len(set(e.tolist())) == 5  # keys before and after the query: distinct buckets
    assert d.tolist() == [4.0, 2.0, 0.0]  # distances 2, 1, 0 -> buckets 2, 1, 0 (head 0 = even rows)
    assert sum(p.numel() for p in enc.parameters()) == T5RelativeBias.num_params(n_heads=2) == 64


def test_deepnet_constants_and_init() -> None:
    alpha, beta = deepnet_constants(6, 6, "encoder")
    assert alpha == pytest.approx(0.81 * (6**5) ** (1 / 16)) and beta == pytest.approx(0.87 * (6**5) ** (-1 / 16))
    assert deepnet_constants(6, 6, "decoder") == pytest.approx((18 ** (1 / 4), 72 ** (-1 / 4)))
    cfg = {"n_layers": 2, "d_model": 16, "d_ff": 32, "n_heads": 2, "max_positions": 64}
    torch.manual_seed(0)
    post = build_model(model_section(cfg), vocab_size=32)
    torch.manual_seed(0)
    deep = build_model(model_section({**cfg, "residual": "deepnorm"}), vocab_size=32)
    a, b = post.decoder_layers[0].self_attn, deep.decoder_layers[0].self_attn
    _, beta = deepnet_constants(2, 2, "decoder")
    torch.testing.assert_close(b.in_proj.weight[:32], a.in_proj.weight[:32])  # W_Q, W_K untouched
    torch.testing.assert_close(b.in_proj.weight[32:], beta * a.in_proj.weight[32:])  # W_V scaled
    torch.testing.assert_close(deep.decoder_layers[0].ffn.w1.weight, beta * post.decoder_layers[0].ffn.w1.weight)


@pytest.mark.parametrize(("d_model", "d_ff"), [(512, 2048), (64, 256), (1024, 4096)])
def test_glu_blocks_match_the_relu_parameter_count(d_model: int, d_ff: int) -> None:
    relu, glu = ReluFFN.num_params(d_model, d_ff), SwiGLU.num_params(d_model, d_ff)
    assert abs(glu - relu) / relu < 0.002
    assert SwiGLU(16, 32, d_inner=7).w_up.out_features == 7


def test_rmsnorm_and_scalenorm_by_hand() -> None:
    x = torch.tensor([[3.0, 4.0]])
    torch.testing.assert_close(RMSNorm(2)(x), x / math.sqrt(12.5), atol=1e-5, rtol=0)
    torch.testing.assert_close(ScaleNorm(2)(x), math.sqrt(2) * x / 5.0)


def test_gqa_and_mqa_cache_fewer_heads(tiny_model_cfg: dict[str, Any]) -> None:
    cfg = {**tiny_model_cfg, "n_heads": 4, "d_k": 4, "d_v": 4}
    for attention, kv_heads in (("mha", 4), ({"name": "gqa", "args": {"n_kv_heads": 2}}, 2), ("mqa", 1)):
        model = build_model(model_section({**cfg, "attention": attention}), vocab_size=32).eval()
        memory, src_pad = model.encode(torch.randint(4, 32, (2, 5)))
        cache = model.new_cache()
        model.decode(torch.randint(4, 32, (2, 3)), memory, src_pad, cache=cache)
        assert cache.self_attn[0]["k"].shape == (2, kv_heads, 3, 4), attention
        assert cache.cross_attn[0]["v"].shape == (2, kv_heads, 5, 4), attention
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        count_parameters(model_section({**cfg, "attention": {"name": "gqa", "args": {"n_kv_heads": 3}}}), 32)
    bad = {"model": {**cfg, "attention": {"name": "gqa", "args": {"n_kv_heads": 3}}}, "data": {"max_len": 8}}
    with pytest.raises(ConfigError, match=r"^test: model: n_heads=4 must be a multiple of the key/value heads \(3\)"):
        load_config(layers=[("test", bad)])


def test_residual_placements_hold_their_norms(tiny_model_cfg: dict[str, Any]) -> None:
    norms = {}
    for residual in ("post", "pre", "sandwich", "deepnorm"):
        model = build_model(model_section({**tiny_model_cfg, "residual": residual}), vocab_size=32)
        layer = model.encoder_layers[0].res_attn
        norms[residual] = (len(layer.norms), model.encoder_norm is not None)
    assert norms == {"post": (1, False), "pre": (1, True), "sandwich": (2, True), "deepnorm": (1, False)}
