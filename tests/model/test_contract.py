"""The variant contract (ablate/model/contract.py) over every registered model variant, and the
contract's own ability to catch a broken variant."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch
from torch import Tensor

from ablate.model.attention import ATTENTION, MultiHeadAttention
from ablate.model.contract import CHECKS, ContractError, run_contract, variant_config
from ablate.model.slots import SLOT_REGISTRIES


@pytest.mark.parametrize("check", list(CHECKS))
def test_every_variant_keeps_the_contract(variant_cfg: dict[str, Any], check: str) -> None:
    CHECKS[check](variant_cfg)


def test_at_least_14_variants_beyond_the_paper() -> None:
    paper = {("positional", "sinusoidal"), ("positional", "learned"), ("attention", "mha")}
    paper |= {("norm", "layernorm"), ("ffn", "relu"), ("residual", "post")}
    ours = {(kind, name) for kind, reg in SLOT_REGISTRIES.items() for name in reg.names()}
    assert paper <= ours and len(ours - paper) >= 14


def test_every_variant_has_a_one_line_doc_and_its_own_closed_form() -> None:
    for kind, reg in SLOT_REGISTRIES.items():
        for name, doc in reg.describe():
            assert doc and "\n" not in doc, f"{kind}={name}"
            assert "num_params" in vars(reg.get(name)), f"{kind}={name} has no closed-form num_params"


class _Leaky(MultiHeadAttention):
    """Ignores the causal mask: every query sees the whole target."""

    def attend(self, q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        return super().attend(q, k, v, None, False)


def test_a_leaky_attention_fails_with_a_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ATTENTION._entries, "leaky-test", _Leaky)
    with pytest.raises(ContractError, match="future target tokens leak"):
        CHECKS["causal"](variant_config("attention", "leaky-test"))
    results = {r.check: r for r in run_contract([("attention", "leaky-test")])}
    assert not results["causal"].ok and not results["source_padding"].ok
    assert results["shapes"].ok and results["params"].ok
    assert results["causal"].line().startswith("FAIL  attention=leaky-test")


def test_an_exception_in_a_variant_is_a_failed_check(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(MultiHeadAttention):
        def forward(self, *args: Any, **kwargs: Any) -> Tensor:
            raise RuntimeError("boom")

    monkeypatch.setitem(ATTENTION._entries, "broken-test", Broken)
    result = run_contract([("attention", "broken-test")], checks=["shapes"])[0]
    assert not result.ok and result.message == "RuntimeError: boom"
    assert torch.get_num_threads() >= 1


def test_a_gqa_like_variant_is_under_40_lines() -> None:
    # the Attention base owns projections, cache, rotation and the kernel call: a variant is small
    from ablate.model import attention

    lines = inspect.getsource(attention.GroupedQueryAttention).splitlines()
    lines += inspect.getsource(attention.default_kv_heads).splitlines()
    assert len(lines) < 40
