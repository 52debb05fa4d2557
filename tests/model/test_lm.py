"""The decoder-only language model (model.arch: decoder): one causal stack of the translator's own parts.
Every variant's causality, gradients and counts in it are the model contract's ``lm_*`` checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from ablate.config import ConfigError, load_config, model_section
from ablate.config.size import count_parameters, train_flops
from ablate.model.build import build_model
from ablate.model.lm import LanguageModel

LM = {"arch": "decoder", "n_layers": 2, "d_model": 32, "d_ff": 64, "n_heads": 4, "max_positions": 64}


def test_the_parameter_count_is_the_hand_count() -> None:
    """V=100, d=32, d_ff=64, 2 layers, post-norm LayerNorm, tied: the embedding once; per layer Q, K, V, O
    (weights and biases), the FFN's two linear maps, two LayerNorms; no encoder, no cross-attention."""
    v, d, f, n = 100, 32, 64, 2
    per_layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * (2 * d)
    model = build_model(model_section(LM), v)
    assert isinstance(model, LanguageModel)
    assert count_parameters(model_section(LM), v) == sum(p.numel() for p in model.parameters()) == v * d + n * per_layer


def test_the_output_projection_is_the_embedding() -> None:
    model = build_model(model_section(LM), 100)
    assert model.output_weight is model.embed.weight
    tokens = torch.randint(4, 100, (2, 8))
    model(tokens)[:, :, 7].sum().backward()  # only the output side touches token 7's row (it is not an input)
    assert bool((model.embed.weight.grad[7] != 0).any())


def test_closed_form_flops_match_counting() -> None:
    """The dry run's training FLOPs of a language model: torch's counter over forward and backward counts
    every matmul (here it does not count the attention kernel), so it must equal the closed form less the
    causal attention scores, which the closed form adds at (T + 1) / 2 keys a query."""
    m = model_section({**LM, "d_model": 64, "d_ff": 256, "dropout": 0.0, "max_positions": 256})
    b, t, v, h, d_head = 4, 128, 500, 4, 16
    model = build_model(m, v)
    tokens = torch.randint(4, v, (b, t))
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.cross_entropy(model(tokens).reshape(-1, v), tokens.reshape(-1)).backward()
    scores = 3.0 * b * t * m.n_layers * 2 * h * (2 * d_head) * (t + 1) / 2
    counted = counter.get_total_flops()
    assert train_flops(m, v, 0, b * t, tgt_len=t) - scores == pytest.approx(counted, rel=0.02)


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["model.arch=decoder", "model.n_enc_layers=2"], "model.n_enc_layers: means nothing for model.arch=decoder"),
        (["model.arch=decoder", "data.block_size=1"], "data.block_size: must be an integer >= 2"),
        (["model.arch=encoder"], "model.arch: must be one of decoder, encdec"),
        (["data.block_size=128"], "data.block_size: means nothing for model.arch=encdec"),
        (["eval.lengths=[64,128]"], "eval.lengths: means nothing for model.arch=encdec"),
    ],
)
def test_a_knob_of_the_other_architecture_is_one_line(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as exc:
        load_config(Path(__file__).resolve().parents[2] / "experiments" / "mini.yaml", overrides)
    assert "\n" not in str(exc.value)
