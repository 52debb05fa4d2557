"""Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Algorithm 2), in torch only.

    update = sign(beta1 * m + (1 - beta1) * g)
    w     <- w - lr * (update + weight_decay * w)
    m     <- beta2 * m + (1 - beta2) * g

One momentum per parameter (half of Adam's state). The authors suggest a learning rate 3-10x smaller
than AdamW's and a weight decay 3-10x larger, since the sign's update is larger in norm. Written here
rather than taken from a package: the algorithm is these three lines, and no dependency is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class LionOptimizer(torch.optim.Optimizer):
    """Lion with decoupled weight decay (the paper's Algorithm 2)."""

    def __init__(
        self, params: Any, lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.99), weight_decay: float = 0.0
    ):
        super().__init__(params, {"lr": lr, "betas": betas, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2), decay = group["lr"], group["betas"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "exp_avg" not in state:
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                m = state["exp_avg"]
                p.mul_(1.0 - lr * decay)
                p.add_(torch.lerp(m, p.grad, 1.0 - beta1).sign_(), alpha=-lr)
                m.lerp_(p.grad, 1.0 - beta2)
        return loss
