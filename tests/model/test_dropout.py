"""ablate's CPU dropout keeps nn.Dropout's semantics: rate, scaling, gradient, eval identity, seeding."""

from __future__ import annotations

import pytest
import torch

from ablate.model.dropout import Dropout


def test_drops_at_rate_p_and_scales_the_rest():
    torch.manual_seed(0)
    x = torch.ones(400, 500)
    y = Dropout(0.1).train()(x)
    dropped = (y == 0).float().mean().item()
    assert dropped == pytest.approx(0.1, abs=0.005)
    assert torch.allclose(y[y != 0], torch.full_like(y[y != 0], 1 / 0.9))
    assert y.mean().item() == pytest.approx(1.0, abs=0.01)  # unbiased


def test_gradient_is_the_mask():
    torch.manual_seed(1)
    x = torch.randn(64, 32, requires_grad=True)
    y = Dropout(0.3).train()(x)
    y.backward(torch.ones_like(y))
    mask = torch.where(y != 0, 1 / 0.7, 0.0)
    torch.testing.assert_close(x.grad, mask)


def test_eval_zero_and_one():
    x = torch.randn(8, 8)
    assert Dropout(0.5).eval()(x) is x
    assert Dropout(0.0).train()(x) is x
    assert torch.count_nonzero(Dropout(1.0).train()(x)) == 0
    with pytest.raises(ValueError, match="between 0 and 1"):
        Dropout(1.5)


def test_seeded_like_the_global_generator():
    d = Dropout(0.2).train()
    x = torch.ones(16, 16)
    torch.manual_seed(5)
    a = d(x)
    torch.manual_seed(5)
    assert torch.equal(a, d(x))
    assert not torch.equal(a, d(x))
