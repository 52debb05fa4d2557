"""build_model's one input shape (a frozen ModelConfig), slot args, and model mistakes refused at load."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf

import ablate
import ablate.config.check
import ablate.model.slots
from ablate.config import ConfigError, ModelConfig, from_dict, load_config, model_section, to_dict
from ablate.model import build_model, count_parameters, train_flops


def _load(model: dict[str, Any]) -> Any:
    """A full load (every check) of a tiny model with data lengths its 64 positions cover."""
    return load_config(layers=[("test", {"model": model, "data": {"max_len": 8}})])


def test_the_section_from_load_from_dict_and_model_section_is_one_shape(tiny_model_cfg: dict[str, Any]) -> None:
    cfg = _load(tiny_model_cfg)
    inputs = [cfg.model, from_dict(to_dict(cfg)).model, tiny_model_cfg, OmegaConf.create(tiny_model_cfg)]
    sections = [model_section(x) for x in inputs]
    assert all(type(s) is ModelConfig for s in sections) and len(set(map(repr, sections))) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        sections[0].d_model = 32  # type: ignore[misc]
    assert len({ablate.count_parameters(s, 32) for s in [*inputs, *sections]}) == 1  # the public door converts
    assert all(build_model(s, vocab_size=32).d_model == 16 for s in sections)


def test_the_builder_takes_one_shape(tiny_model_cfg: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="takes a ModelConfig"):
        build_model(tiny_model_cfg, vocab_size=32)  # type: ignore[arg-type]
    assert ablate.build_model(tiny_model_cfg, vocab_size=32).d_model == 16


@pytest.mark.parametrize("shape", ["namespace", "unknown key"])
def test_other_shapes_are_refused(tiny_model_cfg: dict[str, Any], shape: str) -> None:
    other = SimpleNamespace(**tiny_model_cfg) if shape == "namespace" else {**tiny_model_cfg, "d_modl": 4}
    error, match = (TypeError, "expected a model section") if shape == "namespace" else (ConfigError, "'d_modl'")
    for call in (lambda: ablate.build_model(other, 32), lambda: ablate.count_parameters(other, 32)):
        with pytest.raises(error, match=match):
            call()


def test_builders_do_not_check_again(tiny_model_cfg: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    section = model_section(_load(tiny_model_cfg).model)

    def checked_again(*_: Any, **__: Any) -> None:
        raise AssertionError("the model section was checked a second time")

    monkeypatch.setattr(ablate.config.check, "validate_config", checked_again)
    monkeypatch.setattr(ablate.config.check._Checker, "fail", checked_again)
    monkeypatch.setattr(ablate.model.slots, "check_slot", checked_again)
    model = build_model(section, vocab_size=32)
    assert count_parameters(section, 32) == sum(p.numel() for p in model.parameters())
    assert train_flops(section, 32, src_tokens=100, tgt_tokens=100) > 0


def test_slot_args_reach_the_module(tiny_model_cfg: dict[str, Any]) -> None:
    cfg = _load({**tiny_model_cfg, "norm": {"name": "layernorm", "args": {"eps": 1e-3}}})
    model = build_model(model_section(cfg.model), vocab_size=32)
    assert model.encoder_layers[0].res_attn.norm.eps == 1e-3


def test_different_encoder_and_decoder_depths(tiny_model_cfg: dict[str, Any]) -> None:
    model = build_model(
        model_section(_load({**tiny_model_cfg, "n_enc_layers": 3, "n_dec_layers": 2}).model), vocab_size=32
    )
    assert (len(model.encoder_layers), len(model.decoder_layers)) == (3, 2)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"n_head": 2}, r"test: unknown key 'model\.n_head'; did you mean model\.n_heads"),
        ({"norm": {"name": "layernorm", "args": {"epsilon": 1}}}, r"model\.norm: 'layernorm' does not take .*epsilon"),
        ({"ffn": "rellu"}, r"model\.ffn: unknown ffn 'rellu'; did you mean 'relu'"),
        ({"attention": {"nme": "mha"}}, r"model\.attention: a attention slot must be a name"),
        ({"n_heads": 3}, r"model\.d_k: d_model=16 is not divisible by n_heads=3"),
        ({"dropout": 2.0}, r"model\.dropout: must be in \[0, 1\)"),
    ],
)
def test_bad_model_configs_are_one_line_config_errors_at_load(
    tiny_model_cfg: dict[str, Any], change: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConfigError, match=match) as exc:
        _load({**tiny_model_cfg, **change})
    assert "\n" not in str(exc.value) and str(exc.value).startswith("test: ")


def test_vocab_must_hold_the_pad_id(tiny_model_cfg: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="vocab_size"):
        build_model(model_section(tiny_model_cfg), vocab_size=0)


def test_pad_embedding_starts_at_zero(tiny_model_cfg: dict[str, Any]) -> None:
    model = build_model(model_section(tiny_model_cfg), vocab_size=32, pad_id=0)
    assert torch.count_nonzero(model.src_embed.weight[0]) == 0
    assert torch.count_nonzero(model.src_embed.weight[1]) > 0


def test_the_replaced_norm_placement_flag_maps_to_the_residual_slot(tiny_model_cfg: dict[str, Any]) -> None:
    old = {"model": {**tiny_model_cfg, "norm_placement": "pre"}, "data": {"max_len": 8}}
    assert load_config(layers=[("old file", old)]).model.residual == "pre"
    later = load_config(layers=[("exp", {"model": {"residual": "sandwich"}})], overrides=["model.norm_placement=post"])
    assert later.model.residual == "post"  # the layer order still decides
    assert "norm_placement" not in to_dict(later)["model"]
    with pytest.raises(ConfigError, match=r"^both: model\.norm_placement: set model\.residual only"):
        load_config(layers=[("both", {"model": {"residual": "sandwich", "norm_placement": "pre"}})])


def _seeded_build(seed: int, *overrides: str) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The initial weights of a small model at ``seed`` and the next draws of the global stream (dropout's)."""
    from ablate.config import load_config

    torch.manual_seed(seed)
    base = ["model.n_layers=2", "model.d_model=32", "model.d_ff=64", "model.n_heads=4", *overrides]
    model = build_model(model_section(load_config(None, base).model), 50)
    return model.state_dict(), torch.rand(4)


def test_rows_at_one_seed_start_from_the_same_weights_wherever_shapes_agree():
    base, base_next = _seeded_build(7)
    for row in (["model.d_ff=128"], ["model.n_heads=1", "model.d_k=32", "model.d_v=32"], ["model.n_layers=3"]):
        weights, after = _seeded_build(7, *row)
        shared = [k for k in base if k in weights and base[k].shape == weights[k].shape]
        assert len(shared) >= 30 and all(torch.equal(base[k], weights[k]) for k in shared), row
        assert torch.equal(after, base_next), row  # the dropout stream does not move with the init's draws
    wide, _ = _seeded_build(7, "model.d_ff=128")
    assert wide["encoder_layers.0.ffn.w1.weight"].shape != base["encoder_layers.0.ffn.w1.weight"].shape
    other, other_next = _seeded_build(8)
    assert not torch.equal(
        other["encoder_layers.0.self_attn.in_proj.weight"], base["encoder_layers.0.self_attn.in_proj.weight"]
    )
    assert not torch.equal(other_next, base_next)
