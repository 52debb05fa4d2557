"""The paper's optimizer (section 5.3), from experiments/base.yaml through the trainer's own code path:
Adam with beta_1 0.9, beta_2 0.98, epsilon 1e-9, no weight decay, and equation 3's learning rate
(linear warm-up over 4,000 steps to (d_model * 4000)^-0.5, then the inverse square root of the step)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ablate.config import load_config
from ablate.train.run import system_kwargs
from ablate.train.system import TransformerSystem

BASE = Path(__file__).resolve().parents[2] / "experiments" / "base.yaml"


def test_base_yaml_builds_the_papers_adam_and_schedule() -> None:
    cfg = load_config(BASE)
    with torch.device("meta"):  # the base model's shapes, nothing allocated
        system = TransformerSystem(**system_kwargs(cfg, vocab_size=37000))
    setup = system.configure_optimizers()
    opt, sched = setup["optimizer"], setup["lr_scheduler"]["scheduler"]
    assert type(opt) is torch.optim.Adam  # not AdamW: the paper decays no weights
    group = opt.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9 and group["weight_decay"] == 0
    assert setup["lr_scheduler"]["interval"] == "step" and setup["lr_scheduler"]["frequency"] == 1
    d_model, warmup = 512, 4000
    assert int(cfg.model.d_model) == d_model and int(cfg.train.warmup_steps) == warmup

    def lr(update: int) -> float:  # the rate of the update-th optimizer step, as LambdaLR applies it
        return sched.lr_lambdas[0](update - 1) * group["initial_lr"]

    assert lr(1) == pytest.approx(d_model**-0.5 * warmup**-1.5)  # the first update: step 1, never 0
    assert lr(warmup) == pytest.approx((d_model * warmup) ** -0.5)  # the peak, about 7.0e-4
    assert all(lr(s) <= lr(warmup) for s in (*range(1, 3 * warmup, 97), warmup - 1, warmup + 1))
    assert lr(4 * warmup) == pytest.approx(lr(warmup) / 2)  # inverse square root after the peak
    assert lr(warmup // 2) == pytest.approx(lr(warmup) / 2)  # linear before it
