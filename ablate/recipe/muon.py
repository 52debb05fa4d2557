"""Muon for the hidden matrices and AdamW for the rest, as ONE ``torch.optim.Optimizer`` (Jordan et al. 2024).

torch's own ``torch.optim.Muon`` takes 2-D parameters only, and its authors train the embeddings, the
output layer, norms and biases with AdamW beside it. Lightning's automatic optimization (and with it
gradient accumulation, gradient clipping, checkpoints and DDP) wants one optimizer object, so
:class:`MuonWithAdamW` holds a ``torch.optim.Muon`` and a ``torch.optim.AdamW`` and shows their parameter
groups and state as its own: a schedule setting ``group["lr"]`` sets both, ``state_dict()`` /
``load_state_dict()`` are the base class's over the joined groups, and ``step`` steps both.

Muon's ``adjust_lr_fn="match_rms_adamw"`` scales its update to AdamW's RMS, so one learning rate and one
weight decay serve both halves (torch's documentation of ``Muon``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor


class MuonWithAdamW(torch.optim.Optimizer):
    """``hidden`` (2-D) on Muon; ``tables`` (embeddings, output; decayed) and ``rest`` (not decayed) on AdamW."""

    def __init__(
        self,
        hidden: list[Tensor],
        tables: list[Tensor],
        rest: list[Tensor],
        shared: Any,
        *,
        momentum: float,
        nesterov: bool,
        ns_steps: int,
        adjust_lr: str,
    ) -> None:
        decay = shared.weight_decay
        self.muon = torch.optim.Muon(
            hidden,
            lr=1.0,
            weight_decay=decay,
            momentum=momentum,
            nesterov=nesterov,
            ns_steps=ns_steps,
            adjust_lr_fn=adjust_lr,
        )
        adam_groups = [{"params": tables, "weight_decay": decay}, {"params": rest, "weight_decay": 0.0}]
        adam_groups = [g for g in adam_groups if g["params"]]
        self.adamw = torch.optim.AdamW(adam_groups, lr=1.0, betas=shared.betas, eps=shared.eps)
        # The base class sets up hooks and the state; the groups are then the two optimizers' own dicts.
        super().__init__([p for g in self.muon.param_groups + self.adamw.param_groups for p in g["params"]], {})
        self.param_groups = self.muon.param_groups + self.adamw.param_groups
        self._join()

    def _join(self) -> None:
        """The inner optimizers see the outer's groups (the same dicts) and its one state (parameters are
        disjoint), after ``__init__`` and after ``load_state_dict`` replaced both with new objects."""
        n_muon = len(self.muon.param_groups)
        self.muon.param_groups, self.adamw.param_groups = self.param_groups[:n_muon], self.param_groups[n_muon:]
        self.muon.state = self.adamw.state = self.state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)  # replaces self.param_groups and self.state with new objects
        self._join()

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:  # Lightning's closure runs forward and backward once, before both steps
            with torch.enable_grad():
                loss = closure()
        self.muon.step()
        self.adamw.step()
        return loss
