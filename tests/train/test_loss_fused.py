"""The fused, chunked projection + label-smoothed loss equals the full-logits loss (value and gradients)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ablate.config import model_section
from ablate.model.build import build_model
from ablate.train.losses import label_smoothed_loss, linear_label_smoothed_loss
from ablate.train.system import TransformerSystem

PAD = 0


def padded_batch(seed: int = 0, vocab: int = 32) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src, tgt_in, tgt_out = (torch.randint(4, vocab, (4, 7), generator=g) for _ in range(3))
    for row, n in enumerate((7, 5, 2, 6)):  # right padding of several widths
        src[row, n:] = tgt_in[row, n:] = tgt_out[row, n:] = PAD
    return {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out}


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("chunk", [1, 5, 512])
def test_fused_loss_and_gradients_equal_the_full_logits_loss(eps, chunk):
    torch.manual_seed(0)
    hidden = torch.randn(3, 6, 16, requires_grad=True)
    weight = torch.randn(40, 16, requires_grad=True)
    target = torch.randint(4, 40, (3, 6))
    target[1, 4:], target[2, 1:] = PAD, PAD
    ref, n = label_smoothed_loss(F.linear(hidden, weight), target, eps, PAD)
    ref.backward()
    ref_gh, ref_gw = hidden.grad.clone(), weight.grad.clone()
    hidden.grad = weight.grad = None
    real = target != PAD
    fused = linear_label_smoothed_loss(hidden[real], weight, target[real], eps, chunk)
    (fused * 2.5).backward()  # a non-unit upstream gradient is applied too
    torch.testing.assert_close(fused, ref, rtol=1e-6, atol=1e-5)
    # fp32 rounding: the fused form subtracts (1 - eps) W[y] from P @ W after the projection back, where
    # the reference subtracts before it; unit-scale weights leave differences of a few 1e-6
    torch.testing.assert_close(hidden.grad, 2.5 * ref_gh, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(weight.grad, 2.5 * ref_gw, rtol=1e-5, atol=1e-5)
    assert int(n) == int(real.sum())
    with torch.no_grad():  # validation: the loss alone
        torch.testing.assert_close(linear_label_smoothed_loss(hidden[real], weight, target[real], eps, chunk), ref)


def test_features_project_to_the_forward_logits(tiny_model_cfg):
    torch.manual_seed(0)
    model = build_model(model_section(tiny_model_cfg), vocab_size=32, pad_id=PAD).eval()
    b = padded_batch()
    logits = F.linear(model.features(b["src"], b["tgt_in"]), model.output_weight)
    torch.testing.assert_close(logits, model(b["src"], b["tgt_in"]))


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_training_step_loss_and_gradients_equal_the_full_logits_loss(tiny_model_cfg, eps):
    cfg = {**tiny_model_cfg, "dropout": 0.0}
    system = TransformerSystem(model=cfg, vocab_size=32, label_smoothing=eps)
    system.log = lambda *a, **k: None  # no Trainer attached
    b = padded_batch(1)
    loss = system.training_step(b, 0)
    loss.backward()
    grads = {k: p.grad.clone() for k, p in system.named_parameters()}
    system.zero_grad(set_to_none=True)
    total, n = label_smoothed_loss(system.model(b["src"], b["tgt_in"]), b["tgt_out"], eps, PAD)
    (total / n).backward()
    torch.testing.assert_close(loss, total / n, rtol=1e-6, atol=1e-6)
    for k, p in system.named_parameters():
        torch.testing.assert_close(grads[k], p.grad, rtol=1e-5, atol=1e-6, msg=k)
    assert system.train_tokens == int((b["tgt_out"] != PAD).sum())
