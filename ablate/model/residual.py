"""Residual connections and where the norm sits: the ``residual`` registry (section 3.1, 5.4).

Registered here: ``post`` (the paper's ``Norm(x + Dropout(f(x)))``), ``pre`` (``x + Dropout(f(Norm(x)))``
plus a final norm per stack), ``sandwich`` (peri-LN: a norm before and after the sub-layer) and
``deepnorm`` (DeepNet's ``Norm(alpha * x + f(x))`` with the sub-layers' init scaled by beta) and
``rezero`` (``x + alpha * f(x)`` with one learned alpha per sub-layer starting at 0, and no norm).

The protocol every residual class follows
-----------------------------------------
Class attributes: ``norms_per_sublayer`` (how many norm modules each wrapper receives) and
``final_norm`` (True: each stack's output gets one more norm). Constructor keywords (each class
receives those its signature names, plus the slot's ``args``): ``norms`` (that many built norm
modules), ``dropout`` (the residual dropout P_drop), ``n_enc_layers``, ``n_dec_layers`` and
``stack`` (``"encoder"`` or ``"decoder"``). ``num_params(**same)`` counts the wrapper's own
parameters, not its norms (build.py counts those from the norm slot).

``forward(x, sublayer, *args, **kwargs) -> [B, T, D]`` runs ``sublayer(x', *args, **kwargs)`` inside
the residual connection. ``init_sublayer(module)`` is called once on every sub-layer the wrapper will
wrap, after the sub-layer initialized itself (DeepNet rescales it; the others leave it).

``model.norm_placement: post | pre`` (the flag this slot replaced) is still read: ablate/config/load.py
maps it to ``model.residual`` when a layer is merged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ablate.config.variants import no_params, one_param
from ablate.model.dropout import Dropout
from ablate.registry import Registry

RESIDUAL: Registry[type[nn.Module]] = Registry("residual", "residual connection and where the norm sits")


class Residual(nn.Module):
    """Base class: holds the norms and the residual dropout; subclasses define ``forward``."""

    norms_per_sublayer: int = 1
    final_norm: bool = False

    def __init__(self, norms: Sequence[nn.Module], dropout: float) -> None:
        super().__init__()
        self.norms = nn.ModuleList(norms)
        self.dropout = Dropout(dropout)

    @property
    def norm(self) -> nn.Module:
        return self.norms[0]

    def init_sublayer(self, module: nn.Module) -> None:
        """Adjust a wrapped sub-layer's initialization (no-op by default)."""

    def forward(self, x: Tensor, sublayer: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
        raise NotImplementedError


@RESIDUAL.register("post")
class PostNorm(Residual):
    """Norm(x + Dropout(f(x))), the paper's placement (Vaswani et al. 2017, section 5.4)."""

    num_params = staticmethod(no_params)  # closed forms: ablate/config/variants.py (no torch)

    def forward(self, x: Tensor, sublayer: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
        return self.norm(x + self.dropout(sublayer(x, *args, **kwargs)))


@RESIDUAL.register("pre")
class PreNorm(Residual):
    """x + Dropout(f(Norm(x))) and a final norm per stack (Wang et al. 2019, "Learning Deep Transformers")."""

    final_norm = True

    num_params = staticmethod(no_params)

    def forward(self, x: Tensor, sublayer: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
        return x + self.dropout(sublayer(self.norm(x), *args, **kwargs))


@RESIDUAL.register("sandwich")
class SandwichNorm(Residual):
    """x + Dropout(Norm2(f(Norm1(x)))), peri-LN / sandwich-LN (Ding et al. 2021 CogView; Kim et al. 2025)."""

    norms_per_sublayer = 2
    final_norm = True

    num_params = staticmethod(no_params)

    def forward(self, x: Tensor, sublayer: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
        return x + self.dropout(self.norms[1](sublayer(self.norms[0](x), *args, **kwargs)))


# DeepNet's (alpha, beta) per stack (Wang et al. 2022, table 1) for an N-layer encoder and M-layer decoder;
# "lm": the one stack of a decoder-only model (its family names it), M layers
_DEEPNET: dict[str, Callable[[int, int], tuple[float, float]]] = {
    "encoder": lambda n, m: (0.81 * (n**4 * m) ** (1 / 16), 0.87 * (n**4 * m) ** (-1 / 16)),
    "decoder": lambda n, m: ((3 * m) ** (1 / 4), (12 * m) ** (-1 / 4)),
    "lm": lambda n, m: ((2 * m) ** (1 / 4), (8 * m) ** (-1 / 4)),
}


def deepnet_constants(n_enc_layers: int, n_dec_layers: int, stack: str) -> tuple[float, float]:
    """(alpha, beta) of DeepNet for an N-layer encoder and M-layer decoder (Wang et al. 2022, table 1);
    ``stack`` "lm": the one stack of a decoder-only model, M layers."""
    return _DEEPNET[stack](n_enc_layers, n_dec_layers)


def scale_init(module: nn.Module, beta: float) -> None:
    """Multiply a sub-layer's init by beta: its own ``scale_residual_init`` if it has one (attention:
    values and output only), else every weight matrix (the FFN's)."""
    hook = getattr(module, "scale_residual_init", None)
    if hook is not None:
        hook(beta)
        return
    with torch.no_grad():
        for p in module.parameters():
            if p.dim() >= 2:
                p.mul_(beta)


@RESIDUAL.register("deepnorm")
class DeepNorm(Residual):
    """Norm(alpha * x + Dropout(f(x))), sub-layer init scaled by beta (Wang et al. 2022, DeepNet)."""

    def __init__(
        self, norms: Sequence[nn.Module], dropout: float, n_enc_layers: int, n_dec_layers: int, stack: str
    ) -> None:
        super().__init__(norms, dropout)
        self.alpha, self.beta = deepnet_constants(n_enc_layers, n_dec_layers, stack)

    num_params = staticmethod(no_params)

    def init_sublayer(self, module: nn.Module) -> None:
        scale_init(module, self.beta)

    def forward(self, x: Tensor, sublayer: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
        return self.norm(self.alpha * x + self.dropout(sublayer(x, *args, **kwargs)))


@RESIDUAL.register("rezero")
class ReZero(Residual):
    """x + alpha * Dropout(f(x)) with a learned alpha that starts at 0, and no norm (Bachlechner et al. 2020).

    "ReZero is All You Need": every layer starts as the identity. The norm slot is not used
    (``norms_per_sublayer = 0``)."""

    norms_per_sublayer = 0

    def __init__(self, norms: Sequence[nn.Module], dropout: float) -> None:
        super().__init__(norms, dropout)
        self.alpha = nn.Parameter(torch.zeros(()))

    num_params = staticmethod(one_param)

    def forward(self, x: Tensor, sublayer: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
        return x + self.alpha * self.dropout(sublayer(x, *args, **kwargs))
