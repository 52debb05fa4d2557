"""build_model's inputs: DictConfig, dataclass or plain mapping; slot args; one-line errors."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from ablate.config import ConfigError, ModelConfig, load_config
from ablate.model import build_model, count_parameters


def test_accepts_dictconfig_dataclass_and_mapping(tiny_model_cfg: dict[str, Any]) -> None:
    section = load_config(overrides=[f"model.{k}={v}" for k, v in tiny_model_cfg.items()]).model
    counts = {
        count_parameters(section, 32),
        count_parameters(ModelConfig(**tiny_model_cfg), 32),
        count_parameters(tiny_model_cfg, 32),
    }
    assert len(counts) == 1
    assert build_model(section, vocab_size=32).d_model == 16


def test_slot_args_reach_the_module(tiny_model_cfg: dict[str, Any]) -> None:
    model = build_model({**tiny_model_cfg, "norm": {"name": "layernorm", "args": {"eps": 1e-3}}}, vocab_size=32)
    assert model.encoder_layers[0].res_attn.norm.eps == 1e-3


def test_different_encoder_and_decoder_depths(tiny_model_cfg: dict[str, Any]) -> None:
    model = build_model({**tiny_model_cfg, "n_enc_layers": 3, "n_dec_layers": 2}, vocab_size=32)
    assert (len(model.encoder_layers), len(model.decoder_layers)) == (3, 2)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"n_head": 2}, r"unknown key 'model\.n_head'; did you mean model\.n_heads"),
        ({"norm": {"name": "layernorm", "args": {"epsilon": 1}}}, r"model\.norm: 'layernorm' does not take .*epsilon"),
        ({"ffn": "rellu"}, r"model\.ffn: unknown ffn 'rellu'; did you mean 'relu'"),
        ({"attention": {"nme": "mha"}}, r"model\.attention: a attention slot must be a name"),
        ({"n_heads": 3}, r"model\.d_k: d_model=16 is not divisible by n_heads=3"),
        ({"dropout": 2.0}, r"model\.dropout: must be in \[0, 1\)"),
    ],
)
def test_bad_model_configs_are_one_line_config_errors(
    tiny_model_cfg: dict[str, Any], change: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConfigError, match=match) as exc:
        build_model({**tiny_model_cfg, **change}, vocab_size=32)
    assert "\n" not in str(exc.value)


def test_vocab_must_hold_the_pad_id(tiny_model_cfg: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="vocab_size"):
        build_model(tiny_model_cfg, vocab_size=0)


def test_pad_embedding_starts_at_zero(tiny_model_cfg: dict[str, Any]) -> None:
    model = build_model(tiny_model_cfg, vocab_size=32, pad_id=0)
    assert torch.count_nonzero(model.src_embed.weight[0]) == 0
    assert torch.count_nonzero(model.src_embed.weight[1]) > 0
