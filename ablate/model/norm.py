"""Normalization: the ``norm`` registry (section 3.1: "LayerNorm(x + Sublayer(x))", Ba et al. 2016).

Registered here: ``layernorm`` (with weight and bias). Where the norm sits (post: the paper's
LayerNorm(x + Dropout(f(x))); pre: x + Dropout(f(Norm(x))) plus a final norm per stack) is
``model.norm_placement`` and is handled by the layers, not by the norm class.

Protocol: a norm class is constructed with ``d_model`` (plus the slot's ``args``), normalizes the last
dimension of ``[..., D]`` and keeps the shape; ``num_params(d_model, ...)`` gives its parameter count.
RMSNorm is one more registered class.
"""

from __future__ import annotations

from torch import nn

from ablate.registry import Registry

NORM: Registry[type[nn.Module]] = Registry("norm", "normalization of the residual stream")


@NORM.register("layernorm")
class LayerNorm(nn.LayerNorm):
    """Layer normalization over d_model with a learned gain and bias (Ba et al., 2016)."""

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__(d_model, eps=eps)

    @staticmethod
    def num_params(d_model: int, eps: float = 1e-5) -> int:
        return 2 * d_model
