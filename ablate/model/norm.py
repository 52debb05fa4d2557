"""Normalization: the ``norm`` registry (section 3.1: "LayerNorm(x + Sublayer(x))", Ba et al. 2016).

Registered here: ``layernorm`` (with weight and bias), ``rmsnorm`` (Zhang & Sennrich 2019: no mean,
no bias), ``scalenorm`` (Nguyen & Salazar 2019: one learned scale for the whole vector) and ``dyt``
(Zhu et al. 2025, "Transformers without Normalization": an element-wise tanh in place of a norm). Where
the norm sits is the ``residual`` slot (ablate/model/residual.py), not the norm class.

Protocol: a norm class is constructed with ``d_model`` (plus the slot's ``args``), normalizes the last
dimension of ``[..., D]`` and keeps the shape; ``num_params(d_model, ...)`` gives its parameter count.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ablate.config.variants import dyt_params, layernorm_params, rmsnorm_params, scalenorm_params
from ablate.registry import Registry

NORM: Registry[type[nn.Module]] = Registry("norm", "normalization of the residual stream")


@NORM.register("layernorm")
class LayerNorm(nn.LayerNorm):
    """Layer normalization over d_model with a learned gain and bias (Ba et al., 2016)."""

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__(d_model, eps=eps)

    num_params = staticmethod(layernorm_params)  # closed forms: ablate/config/variants.py (no torch)


@NORM.register("rmsnorm")
class RMSNorm(nn.RMSNorm):
    """x / RMS(x) * g with a learned gain and no bias or mean (Zhang & Sennrich, 2019)."""

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__(d_model, eps=eps)

    num_params = staticmethod(rmsnorm_params)


@NORM.register("scalenorm")
class ScaleNorm(nn.Module):
    """g * x / ||x|| with one learned scalar g, initialized to sqrt(d_model) (Nguyen & Salazar, 2019)."""

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.tensor(math.sqrt(d_model)))

    num_params = staticmethod(scalenorm_params)

    def forward(self, x: Tensor) -> Tensor:
        return self.scale * x / x.norm(dim=-1, keepdim=True).clamp_min(self.eps)


@NORM.register("dyt")
class DynamicTanh(nn.Module):
    """g * tanh(alpha * x) + b: Dynamic Tanh, a norm-free layer (Zhu et al. 2025, "Transformers without Normalization").

    One learned scalar alpha (initialized to ``alpha``, the paper's alpha_0 = 0.5) and a gain and bias
    per feature."""

    def __init__(self, d_model: int, alpha: float = 0.5) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(float(alpha)))
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    num_params = staticmethod(dyt_params)

    def forward(self, x: Tensor) -> Tensor:
        return self.weight * torch.tanh(self.alpha * x) + self.bias
