"""Fixtures for the model tests: one case per registered name of every model registry.

A variant registered in positional / attention / norm / ffn / residual is picked up here (through
ablate.model.contract.registered_variants), so test_contract.py and every test that takes
``variant_cfg`` cover it with no new test code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch

from ablate.model.contract import registered_variants, variant_config

VOCAB = 32
CASES = registered_variants()


@pytest.fixture(scope="session", autouse=True)
def _one_thread() -> Iterator[None]:
    # tiny tensors: one intra-op thread is faster than several on shared cores
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(params=CASES, ids=[f"{kind}={name}" for kind, name in CASES])
def variant_cfg(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The contract's tiny model (2+2 layers) with one slot set to one registered name."""
    kind, name = request.param
    return variant_config(kind, name)
