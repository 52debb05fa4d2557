"""Behaviour of the paper's Transformer beyond the per-variant contract (tests/model/test_contract.py):
the independence of d_k / d_v from d_model / h (Table 3 rows A and B), the attention scale, embeddings,
and what each residual placement does."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from ablate.model import PositionalEncoding
from ablate.model.contract import VOCAB, _model, _tokens


@pytest.mark.parametrize(
    ("heads", "d_k", "d_v"),
    [(2, 4, 8), (2, 3, 16), (4, 16, 2), (1, 16, 16)],  # d_k != d_v, and neither equal to d_model / h
)
def test_head_dims_are_independent_of_d_model(tiny_model_cfg: dict[str, Any], heads: int, d_k: int, d_v: int) -> None:
    model = _model({**tiny_model_cfg, "n_heads": heads, "d_k": d_k, "d_v": d_v})
    attn = model.encoder_layers[0].self_attn
    assert attn.in_proj.weight.shape == (heads * (2 * d_k + d_v), 16)  # W_Q, W_K: h*d_k rows; W_V: h*d_v
    assert attn.out_proj.weight.shape == (16, heads * d_v)  # W_O: h*d_v -> d_model
    assert model(_tokens(2, 5, 1), _tokens(2, 4, 2)).shape == (2, 4, VOCAB)


def test_attention_scale_is_one_over_sqrt_d_k(tiny_model_cfg: dict[str, Any]) -> None:
    # Recompute one cross-attention by hand (section 3.2.1) and compare with the module.
    model = _model({**tiny_model_cfg, "d_k": 3, "d_v": 5}).eval()
    attn = model.decoder_layers[0].cross_attn
    q_in, kv_in = torch.randn(2, 4, 16), torch.randn(2, 6, 16)
    w, b = attn.in_proj.weight, attn.in_proj.bias
    q = (q_in @ w[:6].T + b[:6]).view(2, 4, 2, 3).transpose(1, 2)
    k = (kv_in @ w[6:12].T + b[6:12]).view(2, 6, 2, 3).transpose(1, 2)
    v = (kv_in @ w[12:].T + b[12:]).view(2, 6, 2, 5).transpose(1, 2)
    weights = torch.softmax(q @ k.transpose(-1, -2) / 3**0.5, dim=-1)
    expected = attn.out_proj((weights @ v).transpose(1, 2).reshape(2, 4, 10))
    with torch.no_grad():
        torch.testing.assert_close(attn(q_in, kv_in), expected, atol=1e-5, rtol=1e-5)


def test_tied_embeddings_are_one_tensor(tiny_model_cfg: dict[str, Any]) -> None:
    model = _model(tiny_model_cfg)
    assert model.src_embed.weight is model.tgt_embed.weight is model.output_weight
    assert model.out_proj is None
    # the tensor really is shared: editing the embedding of token 5 moves the logit of token 5
    src, tgt = _tokens(1, 4, 1), _tokens(1, 3, 2)
    model.eval()
    with torch.no_grad():
        before = model(src, tgt)
        model.src_embed.weight[5] += torch.linspace(-1.0, 1.0, 16)
        after = model(src, tgt)
    assert not torch.allclose(before[..., 5], after[..., 5])
    params = list(model.parameters())
    assert sum(p is model.src_embed.weight for p in params) == 1


def test_untied_embeddings_are_three_tensors(tiny_model_cfg: dict[str, Any]) -> None:
    model = _model({**tiny_model_cfg, "tie_embeddings": False})
    tensors = [model.src_embed.weight, model.tgt_embed.weight, model.output_weight]
    assert len({t.data_ptr() for t in tensors}) == 3
    assert all(t.shape == (VOCAB, 16) for t in tensors)


def test_embeddings_are_scaled_by_sqrt_d_model(tiny_model_cfg: dict[str, Any]) -> None:
    cfg = {**tiny_model_cfg, "dropout": 0.0}
    scaled, plain = _model(cfg), _model({**cfg, "scale_embeddings": False})
    tokens = _tokens(1, 3, 1)
    no_positions = PositionalEncoding()  # the protocol's no-op base class
    x_scaled = scaled._embed(tokens, scaled.src_embed, no_positions)
    x_plain = plain._embed(tokens, plain.src_embed, no_positions)
    torch.testing.assert_close(x_scaled, x_plain * 4.0)  # sqrt(16)


def test_post_norm_ends_each_sublayer_with_the_norm(tiny_model_cfg: dict[str, Any]) -> None:
    # post-norm: every encoder output position is normalized (mean 0, var 1 with the initial gain/bias)
    post = _model({**tiny_model_cfg, "dropout": 0.0}).eval()
    memory, _ = post.encode(_tokens(2, 5, 1))
    torch.testing.assert_close(memory.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
    assert post.encoder_norm is None and post.decoder_norm is None
    pre = _model({**tiny_model_cfg, "residual": "pre"})
    assert pre.encoder_norm is not None and pre.decoder_norm is not None
    old = _model({**tiny_model_cfg, "norm_placement": "pre"})  # the replaced flag still loads
    assert type(old.encoder_layers[0].res_attn) is type(pre.encoder_layers[0].res_attn)
