"""Configuration (ablate/config/load.py): layering order, one-line errors naming key and source, and every
experiment file in experiments/ loading, validating and building."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from omegaconf.errors import ReadonlyConfigError

import ablate
from ablate.config import ConfigError, enc_dec_layers, from_dict, head_dims, load_config, to_dict

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_the_papers_base() -> None:
    cfg = load_config()
    m = cfg.model
    assert (m.n_layers, m.d_model, m.d_ff, m.n_heads, m.dropout) == (6, 512, 2048, 8, 0.1)
    assert head_dims(m) == (64, 64) and enc_dec_layers(m) == (6, 6)
    assert cfg.train.label_smoothing == 0.1 and cfg.train.warmup_steps == 4000


def test_layering_order(tmp_path: Path) -> None:
    _write(tmp_path / "parent.yaml", "model: {d_model: 512, d_ff: 1000, n_heads: 4}\ntrain: {max_steps: 7}\n")
    child = _write(tmp_path / "child.yaml", "extends: parent.yaml\nmodel: {d_model: 256, d_ff: 900}\n")
    row = ("sweep row", {"model": {"d_model": 128}})
    cfg = load_config(child, overrides=["model.d_model=64"], layers=[row])
    assert cfg.model.d_model == 64  # command line beats sweep row beats child beats parent
    cfg = load_config(child, layers=[row])
    assert cfg.model.d_model == 128
    cfg = load_config(child)
    assert (cfg.model.d_model, cfg.model.d_ff, cfg.model.n_heads, cfg.train.max_steps) == (256, 900, 4, 7)
    assert cfg.model.n_layers == 6  # untouched keys keep the defaults
    # a dotlist layer works like a mapping layer
    assert load_config(child, layers=[("row", ["model.n_heads=2"])]).model.n_heads == 2


def test_unknown_key_names_the_nearest_and_the_file(tmp_path: Path) -> None:
    bad = _write(tmp_path / "exp.yaml", "model:\n  n_head: 4\n")
    with pytest.raises(ConfigError) as exc:
        load_config(bad)
    msg = str(exc.value)
    assert str(bad) in msg and "'model.n_head'" in msg and "did you mean model.n_heads?" in msg
    assert "\n" not in msg
    with pytest.raises(ConfigError, match=r"command line: unknown key 'model\.dmodel'; did you mean model\.d_model"):
        load_config(overrides=["model.dmodel=4"])
    with pytest.raises(ConfigError, match="unknown key 'modle'"):
        load_config(overrides=["modle.d_model=4"])


def test_wrong_type_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"command line: model\.n_heads: .*abc"):
        load_config(overrides=["model.n_heads=abc"])
    bad = _write(tmp_path / "exp.yaml", "train:\n  max_steps: [1, 2]\n")
    with pytest.raises(ConfigError, match=rf"{bad.name}.*train\.max_steps"):
        load_config(bad)


@pytest.mark.parametrize(
    ("override", "key", "match"),
    [
        ("model.dropout=-0.1", "model.dropout", r"\[0, 1\)"),
        ("model.attention_dropout=1.5", "model.attention_dropout", r"\[0, 1\)"),
        ("model.n_heads=0", "model.n_heads", "positive"),
        ("model.d_model=-8", "model.d_model", "positive"),
        ("model.d_k=0", "model.d_k", "positive"),
        ("model.n_heads=7", "model.d_k", "not divisible by n_heads=7; set model.d_k and model.d_v"),
        ("model.norm_placement=middle", "model.norm_placement", "'post' or 'pre'"),
        ("train.label_smoothing=-0.2", "train.label_smoothing", r"\[0, 1\)"),
    ],
)
def test_impossible_values(override: str, key: str, match: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(overrides=[override])
    msg = str(exc.value)
    assert msg.startswith("command line: ") and f"{key}:" in msg and "\n" not in msg
    assert re.search(match, msg), msg


def test_explicit_head_dims_allow_any_d_model() -> None:
    cfg = load_config(overrides=["model.n_heads=7", "model.d_k=16", "model.d_v=20"])
    assert head_dims(cfg.model) == (16, 20)


def test_unknown_variant_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"model\.positional: unknown positional 'sinusoid'; did you mean 'sinus"):
        load_config(overrides=["model.positional=sinusoid"])
    cfg = load_config(overrides=["model.positional={name: learned, args: {}}"])
    assert cfg.model.positional.name == "learned"


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    bad = _write(tmp_path / "broken.yaml", "model:\n  d_model: 512\n  d_ff: [1, 2\n")
    with pytest.raises(ConfigError, match=rf"{bad.name}:\d+:\d+: invalid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.yaml")


def test_round_trip_through_a_plain_dict() -> None:
    cfg = load_config(overrides=["model.n_heads=4", "model.d_k=32"])
    assert from_dict(to_dict(cfg)) == cfg


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_experiment_loads_validates_and_builds(path: Path) -> None:
    cfg = load_config(path)  # validates values and every registered name (corpus too)
    vocab = cfg.data.vocab_size
    small = cfg.model.d_model <= 256
    with torch.device("cpu" if small else "meta"):  # full-size models on the meta device: no memory
        model = ablate.build_model(cfg.model, vocab_size=vocab)
    assert sum(p.numel() for p in model.parameters()) == ablate.count_parameters(cfg.model, vocab)
    if small:  # the CPU-scale model really runs
        src = torch.randint(4, vocab, (2, 5))
        inputs = (src,) if cfg.model.arch == "decoder" else (src, src)  # a language model reads one stream
        assert model(*inputs).shape == (2, 5, vocab)


def test_experiment_files_exist_and_every_line_is_commented() -> None:
    names = {p.name for p in EXPERIMENTS.glob("*.yaml")}
    assert {"base.yaml", "big.yaml", "mini.yaml"} <= names
    for path in EXPERIMENTS.glob("*.yaml"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            is_field = ":" in line and not line.lstrip().startswith("#") and not line.rstrip().endswith(":")
            if is_field:
                assert "#" in line, f"{path.name}:{n}: field without a comment"


def test_big_extends_base_and_the_issues_python_api_works() -> None:
    big = load_config(EXPERIMENTS / "big.yaml")
    assert (big.model.d_model, big.model.d_ff, big.model.n_heads, big.model.dropout) == (1024, 4096, 16, 0.3)
    assert big.train.max_steps == 300_000 and big.data.corpus == "wmt14_en_de"  # inherited from base
    cfg = ablate.load_config(EXPERIMENTS / "base.yaml", overrides=["model.n_heads=4", "model.d_k=128"])
    with torch.device("meta"):
        model = ablate.build_model(cfg.model, vocab_size=37000)
    attn = model.encoder_layers[0].self_attn
    assert (attn.n_heads, attn.d_k, attn.d_v) == (4, 128, 128)


def test_files_are_read_again_when_rewritten_and_loads_share_nothing(tmp_path: Path) -> None:
    # a file's layers are parsed and merged once per content (a sweep loads one config per trial)
    parent = _write(tmp_path / "parent.yaml", "model: {n_heads: 4}\n")
    child = _write(tmp_path / "child.yaml", "extends: parent.yaml\ntrain: {max_steps: 7}\n")
    first = load_config(child)
    first.train.max_steps = 1  # changes no later load
    with pytest.raises(ReadonlyConfigError):  # the model section is frozen: nothing can change it
        first.model.d_model = 256
    _write(parent, "model: {n_heads: 2}\n")  # the same size, maybe the same mtime
    again = load_config(child, layers=[("row", {"model": {"d_ff": 64}})])
    assert (again.model.n_heads, again.model.d_model, again.model.d_ff, again.train.max_steps) == (2, 512, 64, 7)
    assert load_config(child).model.d_ff == 2048


def test_the_first_wrong_layer_is_the_one_named(tmp_path: Path) -> None:
    exp = _write(tmp_path / "exp.yaml", "model: {n_heads: abc}\n")
    with pytest.raises(ConfigError, match=r"^.*exp\.yaml: model\.n_heads: .*abc"):
        load_config(exp, overrides=["model.dmodel=4"])  # a later layer's unknown key is not the first mistake
    ok = _write(tmp_path / "ok.yaml", "model: {n_heads: 4}\n")
    with pytest.raises(ConfigError, match=r"^row: model\.d_ff: .*x"):
        load_config(ok, layers=[("row", ["model.d_ff=x"])], overrides=["model.dmodel=4"])
    with pytest.raises(ConfigError, match=r"^command line: unknown key 'model\.dmodel'"):
        load_config(ok, layers=[("row", ["model.d_ff=8"])], overrides=["model.dmodel=4"])
