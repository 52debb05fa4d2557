"""Position-wise feed-forward networks: the ``ffn`` registry (section 3.3).

Registered here: ``relu`` (the paper's FFN(x) = max(0, x W1 + b1) W2 + b2, inner width d_ff),
``gelu`` (the same block with GELU), ``relu2`` (squared ReLU, So et al. 2021, "Primer"), and the
gated linear units of Shazeer (2020), "GLU Variants Improve Transformer": ``glu`` (sigmoid gate, the
original of Dauphin et al. 2017), ``reglu``, ``geglu``, ``swiglu`` and ``liglu`` (no non-linearity:
the bilinear layer). A gated block has three matrices, so by default its inner width is 2/3 d_ff, which keeps its
parameter count at the relu block's (up to rounding); ``args: {d_inner: N}`` sets the width directly.

Protocol: a class is constructed with ``d_model, d_ff`` (plus the slot's ``args``), maps ``[..., D]``
to ``[..., D]``, and ``num_params(d_model, d_ff, ...)`` gives its parameter count.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ablate.config.variants import ffn_params, glu_params, glu_width
from ablate.registry import Registry

FFN: Registry[type[nn.Module]] = Registry("ffn", "position-wise feed-forward network inside every layer")


def _linear(d_in: int, d_out: int) -> nn.Linear:
    lin = nn.Linear(d_in, d_out)
    nn.init.xavier_uniform_(lin.weight)  # Xavier-uniform as in fairseq / tensor2tensor
    nn.init.zeros_(lin.bias)
    return lin


@FFN.register("relu")
class ReluFFN(nn.Module):
    """Two linear maps with a ReLU between them, d_model -> d_ff -> d_model (section 3.3)."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = _linear(d_model, d_ff)
        self.w2 = _linear(d_ff, d_model)

    num_params = staticmethod(ffn_params)  # closed forms: ablate/config/variants.py (no torch)

    def activation(self, h: Tensor) -> Tensor:
        return F.relu(h)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(self.activation(self.w1(x)))


@FFN.register("gelu")
class GeluFFN(ReluFFN):
    """The paper's FFN with GELU instead of ReLU (Hendrycks & Gimpel 2016; as in BERT and GPT-2)."""

    num_params = staticmethod(ffn_params)  # in its own body: an inherited closed form is not trusted

    def activation(self, h: Tensor) -> Tensor:
        return F.gelu(h)


@FFN.register("swiglu")
class SwiGLU(nn.Module):
    """(Swish(x W) * x V) W2, inner width 2/3 d_ff by default so params match relu (Shazeer 2020)."""

    def __init__(self, d_model: int, d_ff: int, d_inner: int | None = None) -> None:
        super().__init__()
        h = glu_width(d_ff, d_inner)
        self.w_gate, self.w_up, self.w_down = _linear(d_model, h), _linear(d_model, h), _linear(h, d_model)

    num_params = staticmethod(glu_params)

    def gate(self, g: Tensor) -> Tensor:
        return F.silu(g)

    def forward(self, x: Tensor) -> Tensor:
        return self.w_down(self.gate(self.w_gate(x)) * self.w_up(x))


@FFN.register("geglu")
class GeGLU(SwiGLU):
    """(GELU(x W) * x V) W2, inner width 2/3 d_ff by default so params match relu (Shazeer 2020)."""

    num_params = staticmethod(glu_params)

    def gate(self, g: Tensor) -> Tensor:
        return F.gelu(g)


@FFN.register("relu2")
class ReluSquaredFFN(ReluFFN):
    """The paper's FFN with the ReLU squared, max(0, x W1 + b1)^2 (So et al. 2021, "Primer")."""

    num_params = staticmethod(ffn_params)

    def activation(self, h: Tensor) -> Tensor:
        return F.relu(h).square()


@FFN.register("glu")
class GLU(SwiGLU):
    """(sigmoid(x W) * x V) W2: the original gated linear unit (Dauphin et al. 2017; Shazeer 2020)."""

    num_params = staticmethod(glu_params)

    def gate(self, g: Tensor) -> Tensor:
        return torch.sigmoid(g)


@FFN.register("reglu")
class ReGLU(SwiGLU):
    """(ReLU(x W) * x V) W2 (Shazeer 2020)."""

    num_params = staticmethod(glu_params)

    def gate(self, g: Tensor) -> Tensor:
        return F.relu(g)


@FFN.register("liglu")
class LiGLU(SwiGLU):
    """(x W * x V) W2: the bilinear layer, a gate with no non-linearity (Shazeer 2020's "Bilinear")."""

    num_params = staticmethod(glu_params)

    def gate(self, g: Tensor) -> Tensor:
        return g
