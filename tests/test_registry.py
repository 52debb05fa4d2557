"""The registry (ablate/registry.py): registration, lookup errors, slot parsing, the built-in registries."""

from __future__ import annotations

import itertools

import pytest

from ablate.registry import Registry, RegistryError, all_registries, load_builtin_registries, parse_slot

_ids = itertools.count()


def _registry() -> Registry[type]:
    # every Registry is global (listed by `ablate variants`): a fresh kind per test avoids clashes
    return Registry(f"testkind{next(_ids)}", "a registry made by a test")


def _filled() -> Registry[type]:
    reg = _registry()

    @reg.register("rope")
    class Rope:
        """Rotary positions."""

        def __init__(self, d_model: int, base: float = 10000.0) -> None:
            self.d_model, self.base = d_model, base

    @reg.register("alibi", description="linear biases")
    class Alibi:
        pass

    return reg


def test_register_and_get() -> None:
    reg = _filled()
    assert reg.get("rope").__name__ == "Rope"
    assert reg.names() == ["alibi", "rope"] and list(reg) == ["alibi", "rope"] and len(reg) == 2
    assert "rope" in reg and "nope" not in reg
    assert reg.describe() == [("alibi", "linear biases"), ("rope", "Rotary positions.")]
    assert reg.kind in all_registries()


def test_duplicate_name_is_an_error() -> None:
    reg = _filled()
    with pytest.raises(RegistryError, match=r"'rope' is already registered \(by .*Rope\); pick another name"):

        @reg.register("rope")
        class Other:
            pass


def test_duplicate_registry_kind_is_an_error() -> None:
    reg = _registry()
    with pytest.raises(RegistryError, match="already exists"):
        Registry(reg.kind)


@pytest.mark.parametrize("bad", ["Rope", "my.module.Rope", "", "1x", "with space"])
def test_invalid_names_are_refused(bad: str) -> None:
    with pytest.raises(RegistryError, match="not valid"):
        _registry().register(bad)


def test_unknown_name_lists_names_and_suggests_the_closest() -> None:
    reg = _filled()
    with pytest.raises(RegistryError) as exc:
        reg.get("rop")
    msg = str(exc.value)
    assert "unknown" in msg and "'rop'" in msg
    assert "did you mean 'rope'?" in msg and "(valid: alibi, rope)" in msg
    assert "\n" not in msg
    with pytest.raises(RegistryError) as far:
        reg.get("zzzzzz")
    assert "did you mean" not in str(far.value) and "valid: alibi, rope" in str(far.value)


def test_parse_slot_forms() -> None:
    assert parse_slot("rope") == ("rope", {})
    assert parse_slot({"name": "rope", "args": {"base": 500}}) == ("rope", {"base": 500})
    assert parse_slot({"name": "rope"}) == ("rope", {})
    assert parse_slot({"name": "rope", "args": None}) == ("rope", {})


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"args": {}}, "must be a name or"),
        ({"name": "rope", "arg": {}}, "got keys"),
        ({"name": "rope", "args": [1, 2]}, "args must be a mapping"),
        (3, "must be a name or"),
    ],
)
def test_bad_slots_are_errors(spec: object, match: str) -> None:
    with pytest.raises(RegistryError, match=match):
        parse_slot(spec, "positional")


def test_builtin_model_registries_hold_the_papers_choices() -> None:
    regs = load_builtin_registries()
    assert set(regs["positional"].names()) >= {"sinusoidal", "learned"}
    assert "mha" in regs["attention"] and "layernorm" in regs["norm"] and "relu" in regs["ffn"]
    for kind in ("positional", "attention", "norm", "ffn"):
        assert regs[kind].description, f"the {kind} registry has no description"
        assert all(doc for _, doc in regs[kind].describe()), f"a {kind} entry has no one-line description"
    assert {"builtin", "textfiles", "multi30k", "wmt14_en_de"} <= set(regs["corpus"].names())
    assert all(doc for _, doc in regs["corpus"].describe())
