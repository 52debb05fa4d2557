"""sweeps/revisited*.yaml run every built-in variant beyond the paper, one row each, plus the recipe row."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ablate.model.slots import SLOT_REGISTRIES

SWEEPS = Path(__file__).resolve().parents[2] / "sweeps"
PAPER = {"positional": {"sinusoidal", "learned"}, "attention": {"mha"}, "norm": {"layernorm"}}
PAPER |= {"ffn": {"relu"}, "residual": {"post"}}


@pytest.mark.parametrize("name", ["revisited-mini.yaml", "revisited.yaml"])
def test_one_row_per_variant_beyond_the_paper(name: str) -> None:
    data = yaml.safe_load((SWEEPS / name).read_text(encoding="utf-8"))
    rows = {row["name"]: row.get("overrides", []) for row in data["rows"]}
    assert all("paper" not in row for row in data["rows"]) and rows["base"] == []
    # a row's last override is the variant it is about (dyt is run in its paper's pre-norm placement)
    single = sorted(tuple(o[-1].removeprefix("model.").split("=")) for o in rows.values() if len(o) in (1, 2))
    expected = sorted((k, n) for k, reg in SLOT_REGISTRIES.items() for n in reg.names() if n not in PAPER[k])
    assert single == expected
    recipe = ["model.residual=pre", "model.norm=rmsnorm", "model.positional=rope", "model.ffn=swiglu"]
    assert rows["2023 recipe"] == recipe
