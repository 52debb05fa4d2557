"""Label-smoothed loss and the Noam schedule."""

from __future__ import annotations

import math

import pytest
import torch

from ablate.train.losses import label_smoothed_loss, nll_loss
from ablate.train.schedule import noam_lr, noam_scheduler

PAD = 0


def test_eps_zero_is_nll_and_matches_a_hand_computation():
    logits = torch.tensor([[[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]])  # [B=1, T=2, V=3]
    target = torch.tensor([[2, 1]])
    loss, n = label_smoothed_loss(logits, target, 0.0, pad_id=PAD)
    by_hand = -(2.0 - math.log(1 + math.e + math.e**2)) - (0.0 - math.log(math.e**3 + 2))
    assert n.item() == 2
    assert loss.item() == pytest.approx(by_hand, rel=1e-6)
    assert nll_loss(logits, target, PAD)[0].item() == pytest.approx(by_hand, rel=1e-6)


def test_label_smoothing_by_hand():
    logits = torch.tensor([[[0.5, -1.0, 2.0, 0.0]]])
    target = torch.tensor([[2]])
    eps = 0.1
    logp = torch.log_softmax(logits[0, 0], -1)
    by_hand = -(1 - eps) * logp[2] - eps / 4 * logp.sum()
    assert label_smoothed_loss(logits, target, eps, PAD)[0].item() == pytest.approx(by_hand.item(), rel=1e-6)


def test_padded_positions_contribute_nothing():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11)
    target = torch.randint(1, 11, (2, 5))
    target[0, 3:] = PAD
    target[1, 4:] = PAD
    full, n = label_smoothed_loss(logits, target, 0.1, PAD)
    noisy = logits.clone()
    noisy[target == PAD] = torch.randn_like(noisy[target == PAD]) * 100  # garbage at padded positions
    assert label_smoothed_loss(noisy, target, 0.1, PAD)[0].item() == pytest.approx(full.item(), rel=1e-6)
    assert n.item() == 7
    trimmed = label_smoothed_loss(logits[:1, :3], target[:1, :3], 0.1, PAD)[0]
    trimmed += label_smoothed_loss(logits[1:, :4], target[1:, :4], 0.1, PAD)[0]
    assert trimmed.item() == pytest.approx(full.item(), rel=1e-6)


def test_noam_peaks_at_warmup_with_the_right_value():
    d_model, warmup, factor = 512, 4000, 2.0
    lrs = [noam_lr(s, d_model, warmup, factor) for s in range(1, 3 * warmup)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == warmup
    assert lrs[warmup - 1] == pytest.approx(factor * (d_model * warmup) ** -0.5)
    assert lrs[0] == pytest.approx(factor * d_model**-0.5 * warmup**-1.5)  # step 1, linear warm-up
    assert noam_lr(4 * warmup, d_model, warmup, factor) == pytest.approx(lrs[warmup - 1] / 2)  # 1/sqrt decay
    with pytest.raises(ValueError):
        noam_lr(0, d_model, warmup)


def test_scheduler_gives_step_one_to_the_first_update():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=123.0)
    sched = noam_scheduler(opt, 16, 10, factor=1.0)
    seen = []
    for _ in range(12):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([noam_lr(s, 16, 10) for s in range(1, 13)])
