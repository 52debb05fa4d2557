"""Fixtures for the model tests: one case per registered name of every model registry.

A variant registered in positional / attention / norm / ffn is picked up here, so every test that
takes ``variant_cfg`` covers it with no new test code. Both norm placements (post, pre) are cases too.
"""

from __future__ import annotations

from typing import Any

import pytest

from ablate.model import ATTENTION, FFN, NORM, POSITIONAL

VOCAB = 32

MODEL_REGISTRIES = {"positional": POSITIONAL, "attention": ATTENTION, "norm": NORM, "ffn": FFN}
CASES = [(kind, name) for kind, reg in MODEL_REGISTRIES.items() for name in reg.names()]
CASES += [("norm_placement", "post"), ("norm_placement", "pre")]


@pytest.fixture(params=CASES, ids=[f"{kind}={name}" for kind, name in CASES])
def variant_cfg(request: pytest.FixtureRequest, tiny_model_cfg: dict[str, Any]) -> dict[str, Any]:
    """tiny_model_cfg with one slot set to one registered name (2+2 layers, so stacking is exercised)."""
    kind, name = request.param
    return {**tiny_model_cfg, "n_layers": 2, kind: name}
