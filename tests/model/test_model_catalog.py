"""ablate/config/variants.py, the torch-free stand-ins of the built-in variants, against the real registries:
same names, constructor keywords, closed forms and residual attributes, so they cannot drift; and the
same checks, errors, parameter counts and FLOPs whichever of the two a lookup answers from."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import ablate.config.variants
from ablate.config import ConfigError, load_config, model_section
from ablate.config.size import check_slot, count_parameters, keywords, train_flops
from ablate.config.variants import Variant, builtin, lookup
from ablate.model.contract import variant_config
from ablate.model.slots import SLOT_REGISTRIES
from ablate.registry import RegistryError

ROOT = Path(__file__).resolve().parents[2]
BUILTIN_CASES = [(kind, name) for kind, variants in builtin().items() for name in variants]


def _builtins(kind: str) -> list[str]:
    """The names ablate itself registers (tests and plugins may have added others to the registry)."""
    reg = SLOT_REGISTRIES[kind]
    return [n for n in reg.names() if getattr(reg.get(n), "__module__", "").startswith("ablate.model.")]


@pytest.fixture
def catalogue_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookups answer from the catalogue, as in a process that never imported ablate.model."""
    monkeypatch.setattr(ablate.config.variants, "loaded_registry", lambda kind: None)


def test_the_catalogue_lists_every_built_in_variant_and_no_other() -> None:
    assert set(builtin()) == set(SLOT_REGISTRIES)
    for kind, variants in builtin().items():
        assert sorted(variants) == _builtins(kind), kind


@pytest.mark.parametrize(("kind", "name"), BUILTIN_CASES, ids=[f"{k}={n}" for k, n in BUILTIN_CASES])
def test_a_stand_in_matches_its_class(kind: str, name: str) -> None:
    cls, variant = SLOT_REGISTRIES[kind].get(name), builtin()[kind][name]
    assert lookup(kind, name) is cls  # ablate.model is imported here: the real class
    assert keywords(cls) == set(variant.keywords) == keywords(variant)
    closed = vars(cls)["num_params"]  # in the class's own body, and the catalogue's very function
    assert isinstance(closed, staticmethod) and closed.__func__ is variant.num_params
    if kind == "residual":
        assert (cls.norms_per_sublayer, cls.final_norm) == (variant.norms_per_sublayer, variant.final_norm)


def test_without_ablate_model_a_lookup_answers_from_the_catalogue(catalogue_only: None) -> None:
    assert isinstance(lookup("ffn", "swiglu"), Variant)
    with pytest.raises(RegistryError) as light:
        lookup("attention", "mah")
    assert str(light.value) == SLOT_REGISTRIES["attention"].unknown_message("mah")
    valid = "gqa, mha, mqa, qknorm, sigmoid, talking_heads"
    assert str(light.value) == f"unknown attention 'mah'; did you mean 'mqa'? (valid: {valid})"


SLOTS: list[tuple[str, Any]] = [
    ("norm", "layer_norm"),
    ("positional", "Rope"),
    ("ffn", {"name": "swiglu", "args": {"d_inner": 8, "width": 3}}),
    ("residual", {"name": "deepnorm", "args": {"alpha": 1.0}}),
    ("positional", {"name": "t5", "args": {"n_buckets": 8}}),
    ("attention", {"name": "gqa", "args": {"n_kv_heads": 1}}),
    ("norm", {"nam": "layernorm"}),
]


def _check(kind: str, spec: Any) -> str:
    try:
        check_slot(kind, spec)
    except RegistryError as exc:
        return str(exc)
    return "ok"


@pytest.mark.parametrize(("kind", "spec"), SLOTS)
def test_slot_checks_say_the_same_from_either(kind: str, spec: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _check(kind, spec)
    monkeypatch.setattr(ablate.config.variants, "loaded_registry", lambda kind: None)
    assert _check(kind, spec) == real


MODELS = [variant_config(kind, name) for kind, name in BUILTIN_CASES] + [
    {**variant_config("attention", {"name": "gqa", "args": {"n_kv_heads": 1}}), "tie_embeddings": False},
    {**variant_config("ffn", {"name": "geglu", "args": {"d_inner": 40}}), "n_enc_layers": 3, "d_k": 4},
    {**variant_config("positional", {"name": "t5", "args": {"n_buckets": 8}}), "residual": "sandwich"},
    {},  # the paper's base model
]


@pytest.mark.parametrize("model", MODELS)
def test_counts_and_flops_are_the_same_from_either(model: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    section = model_section(model)
    real = (count_parameters(section, 100), train_flops(section, 100, 1e4, 2e4, 20, 30))
    monkeypatch.setattr(ablate.config.variants, "loaded_registry", lambda kind: None)
    assert (count_parameters(section, 100), train_flops(section, 100, 1e4, 2e4, 20, 30)) == real


@pytest.mark.parametrize(
    "model",
    [{"positional": "rope", "d_k": 3}, {"attention": {"name": "gqa", "args": {"n_kv_heads": 3}}}, {"ffn": "relu "}],
)
def test_impossible_models_are_refused_alike(model: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    layers = [("test", {"model": {"d_model": 64, "n_heads": 4, **model}, "data": {"max_len": 8}})]
    with pytest.raises(ConfigError) as real:
        load_config(layers=layers)
    monkeypatch.setattr(ablate.config.variants, "loaded_registry", lambda kind: None)
    with pytest.raises(ConfigError) as light:
        load_config(layers=layers)
    assert str(light.value) == str(real.value)


def _imports(path: Path, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names = {a.name for n in nodes if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module for n in nodes if isinstance(n, ast.ImportFrom) and n.module}


def test_the_catalogue_and_the_counting_import_no_torch_and_no_model_code() -> None:
    config = ROOT / "ablate" / "config"
    for name in ("variants.py", "size.py"):
        every = _imports(config / name, top_level_only=False)
        assert not {m for m in every if m == "ablate.model" or m.startswith("ablate.model.")}, name
        assert not {m for m in _imports(config / name, top_level_only=True) if m.startswith("torch")}, name
    # size.py imports torch only to count a class without a closed form (a plugin's: torch is loaded)
    assert not {m for m in _imports(config / "variants.py", False) if m.startswith("torch")}
