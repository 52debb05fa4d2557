"""Positional encodings (section 3.5, Table 3 row E): hand-computed sinusoid values, offsets, limits."""

from __future__ import annotations

import math

import pytest
import torch

from ablate.model.positional import LearnedPositional, SinusoidalPositional, sinusoid_table


def test_sinusoid_values_by_hand() -> None:
    pe = sinusoid_table(4, 16)
    # PE(pos, 2i) = sin(pos / 10000^(2i/16)), PE(pos, 2i+1) = cos(pos / 10000^(2i/16))
    assert pe[0, 0] == 0.0 and pe[0, 1] == 1.0
    assert pe[1, 0].item() == pytest.approx(0.8414710, abs=1e-6)  # sin(1)
    assert pe[1, 1].item() == pytest.approx(0.5403023, abs=1e-6)  # cos(1)
    assert pe[1, 2].item() == pytest.approx(0.3109836, abs=1e-6)  # sin(1 / 10000^(2/16)) = sin(0.3162278)
    assert pe[2, 3].item() == pytest.approx(0.8065784, abs=1e-6)  # cos(2 / 10000^(2/16)) = cos(0.6324555)
    assert pe[3, 14].item() == pytest.approx(math.sin(3 / 10000 ** (14 / 16)), abs=1e-7)
    assert pe[3, 15].item() == pytest.approx(math.cos(3 / 10000 ** (14 / 16)), abs=1e-7)


def test_sinusoidal_adds_the_table_at_an_offset_and_extrapolates() -> None:
    pos = SinusoidalPositional(d_model=8, max_positions=4)
    x = torch.zeros(2, 3, 8)
    torch.testing.assert_close(pos(x, offset=1), sinusoid_table(4, 8)[1:4].expand(2, -1, -1))
    # past the precomputed table the sinusoids are computed on the fly (they extrapolate)
    torch.testing.assert_close(pos(x, offset=5)[0], sinusoid_table(8, 8)[5:8])
    assert sum(p.numel() for p in pos.parameters()) == 0 and "table" not in pos.state_dict()


def test_learned_positions_are_parameters_and_refuse_overflow() -> None:
    pos = LearnedPositional(d_model=8, max_positions=4)
    x = torch.zeros(1, 2, 8)
    torch.testing.assert_close(pos(x, offset=2)[0], pos.embed.weight[2:4])
    with pytest.raises(ValueError, match="past the learned table's 4 rows") as exc:
        pos(torch.zeros(1, 3, 8), offset=2)
    assert "model." not in str(exc.value)  # a forward pass knows no config keys (the loader checks them)
