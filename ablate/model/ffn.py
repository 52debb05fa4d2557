"""Position-wise feed-forward networks: the ``ffn`` registry (section 3.3).

Registered here: ``relu``, FFN(x) = max(0, x W1 + b1) W2 + b2 with inner width d_ff.

Protocol: a class is constructed with ``d_model, d_ff`` (plus the slot's ``args``), maps ``[..., D]``
to ``[..., D]``, and ``num_params(d_model, d_ff, ...)`` gives its parameter count. A gated variant
(SwiGLU) is one more registered class.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ablate.registry import Registry

FFN: Registry[type[nn.Module]] = Registry("ffn", "position-wise feed-forward network inside every layer")


@FFN.register("relu")
class ReluFFN(nn.Module):
    """Two linear maps with a ReLU between them, d_model -> d_ff -> d_model (section 3.3)."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)
        for lin in (self.w1, self.w2):  # Xavier-uniform as in fairseq / tensor2tensor
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    @staticmethod
    def num_params(d_model: int, d_ff: int) -> int:
        return (d_model + 1) * d_ff + (d_ff + 1) * d_model

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.relu(self.w1(x)))
