"""The built-in model variants without torch: names, constructor keywords and closed-form parameter counts.

The variant classes live in ablate/model/ (positional.py, attention.py, norm.py, ffn.py, residual.py)
and import torch (~2-3 s). Checking a config's variant names and args, and counting a model's
parameters and FLOPs (ablate/config/size.py: config load, ``ablate sweep --dry-run``, ``ablate status``
and ``ablate table``) need only what this module holds for each built-in name: the keywords its
constructor takes, its ``num_params`` and, for a residual, ``norms_per_sublayer`` and ``final_norm``.
The closed forms are defined here once and the classes take them from here (``num_params =
staticmethod(...)``); tests/model/test_model_catalog.py checks the rest against the real registries.

:func:`lookup` answers from the real registry once ``ablate.model`` is imported (a sweep's ``imports:``
plugins register there; training and building import it anyway), else from :data:`BUILTIN`. An unknown
name gets the registry's own one-line error (ablate/registry.py ``unknown_message``).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from ablate.registry import RegistryError, all_registries, unknown_message

MODEL_PACKAGE = "ablate.model"  # importing it fills the real registries (with torch)


# -- closed-form parameter counts (the classes in ablate/model/ use these very functions) -------------
def no_params(**_: object) -> int:
    return 0


def sinusoidal_params(d_model: int, max_positions: int = 1024) -> int:
    return 0


def learned_params(d_model: int, max_positions: int = 1024) -> int:
    return max_positions * d_model


def rope_params(d_k: int, **_: object) -> int:
    if d_k % 2:
        raise ValueError(f"rope rotates pairs of features: it needs an even d_k, got {d_k}")
    return 0


def t5_params(n_heads: int, causal: bool = False, n_buckets: int = 32, max_distance: int = 128) -> int:
    return n_buckets * n_heads


def check_heads(n_heads: int, kv_heads: int) -> None:
    if kv_heads < 1 or n_heads % kv_heads:
        raise ValueError(f"n_heads={n_heads} must be a multiple of the key/value heads ({kv_heads})")


def attention_params(d_model: int, n_heads: int, d_k: int, d_v: int, kv_heads: int) -> int:
    """Fused W_Q|W_K|W_V and W_O (with biases) of h query heads and ``kv_heads`` key/value heads."""
    check_heads(n_heads, kv_heads)
    rows = n_heads * d_k + kv_heads * (d_k + d_v)
    return (d_model + 1) * rows + (n_heads * d_v + 1) * d_model


def default_kv_heads(n_heads: int) -> int:
    return n_heads // 2 if n_heads % 2 == 0 else 1


def mha_params(d_model: int, n_heads: int, d_k: int, d_v: int) -> int:
    return attention_params(d_model, n_heads, d_k, d_v, kv_heads=n_heads)


def gqa_params(d_model: int, n_heads: int, d_k: int, d_v: int, n_kv_heads: int | None = None) -> int:
    kv = default_kv_heads(n_heads) if n_kv_heads is None else n_kv_heads
    return attention_params(d_model, n_heads, d_k, d_v, kv_heads=kv)


def mqa_params(d_model: int, n_heads: int, d_k: int, d_v: int) -> int:
    return attention_params(d_model, n_heads, d_k, d_v, kv_heads=1)


def layernorm_params(d_model: int, eps: float = 1e-5) -> int:
    return 2 * d_model


def rmsnorm_params(d_model: int, eps: float = 1e-6) -> int:
    return d_model


def scalenorm_params(d_model: int, eps: float = 1e-5) -> int:
    return 1


def qknorm_params(d_model: int, n_heads: int, d_k: int, d_v: int, eps: float = 1e-6) -> int:
    """mha's, plus the RMSNorm gains of the queries and of the keys (d_k each, shared by the heads)."""
    return mha_params(d_model, n_heads, d_k, d_v) + 2 * d_k


def talking_heads_params(d_model: int, n_heads: int, d_k: int, d_v: int) -> int:
    """mha's, plus the two h x h mixing matrices (before and after the softmax)."""
    return mha_params(d_model, n_heads, d_k, d_v) + 2 * n_heads * n_heads


def dyt_params(d_model: int, alpha: float = 0.5) -> int:
    return 2 * d_model + 1  # gain and bias per feature, one alpha


def one_param(**_: object) -> int:
    return 1


def ffn_params(d_model: int, d_ff: int) -> int:
    return (d_model + 1) * d_ff + (d_ff + 1) * d_model


def glu_width(d_ff: int, d_inner: int | None) -> int:
    """Inner width of a gated FFN: 2/3 d_ff by default (three matrices at the relu block's count)."""
    return d_inner if d_inner is not None else max(1, (2 * d_ff) // 3)


def glu_params(d_model: int, d_ff: int, d_inner: int | None = None) -> int:
    h = glu_width(d_ff, d_inner)
    return 2 * (d_model + 1) * h + (h + 1) * d_model


# -- the built-in variants -----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Variant:
    """A built-in variant as checks and counts see it: a stand-in for its class in ablate/model/."""

    name: str
    keywords: frozenset[str]  # the keyword names its constructor takes
    num_params: Callable[..., int]  # the class's closed form
    norms_per_sublayer: int = 1  # residuals: norms each wrapper receives
    final_norm: bool = False  # residuals: each stack's output gets one more norm


def _variants(*entries: tuple[Any, ...]) -> dict[str, Variant]:
    return {e[0]: Variant(e[0], frozenset(e[1].split()), *e[2:]) for e in entries}


_ATTENTION = "d_model n_heads d_k d_v dropout"
BUILTIN: dict[str, dict[str, Variant]] = {
    "positional": _variants(
        ("sinusoidal", "d_model max_positions", sinusoidal_params),
        ("learned", "d_model max_positions", learned_params),
        ("none", "", no_params),
        ("rope", "d_k max_positions base", rope_params),
        ("alibi", "n_heads", no_params),
        ("t5", "n_heads causal n_buckets max_distance", t5_params),
    ),
    "attention": _variants(
        ("mha", _ATTENTION, mha_params),
        ("gqa", f"{_ATTENTION} n_kv_heads", gqa_params),
        ("mqa", _ATTENTION, mqa_params),
        ("qknorm", f"{_ATTENTION} eps", qknorm_params),
        ("talking_heads", _ATTENTION, talking_heads_params),
        ("sigmoid", _ATTENTION, mha_params),
    ),
    "norm": _variants(
        ("layernorm", "d_model eps", layernorm_params),
        ("rmsnorm", "d_model eps", rmsnorm_params),
        ("scalenorm", "d_model eps", scalenorm_params),
        ("dyt", "d_model alpha", dyt_params),
    ),
    "ffn": _variants(
        ("relu", "d_model d_ff", ffn_params),
        ("gelu", "d_model d_ff", ffn_params),
        ("swiglu", "d_model d_ff d_inner", glu_params),
        ("geglu", "d_model d_ff d_inner", glu_params),
        ("relu2", "d_model d_ff", ffn_params),
        ("glu", "d_model d_ff d_inner", glu_params),
        ("reglu", "d_model d_ff d_inner", glu_params),
        ("liglu", "d_model d_ff d_inner", glu_params),
    ),
    "residual": _variants(
        ("post", "norms dropout", no_params, 1, False),
        ("pre", "norms dropout", no_params, 1, True),
        ("sandwich", "norms dropout", no_params, 2, True),
        ("deepnorm", "norms dropout n_enc_layers n_dec_layers stack", no_params, 1, False),
        ("rezero", "norms dropout", one_param, 0, False),
    ),
}


def loaded_registry(kind: str) -> Any:
    """The real registry of slot ``kind`` if ablate.model is imported (plugins may have added to it), else None."""
    if MODEL_PACKAGE not in sys.modules:
        return None
    return all_registries()[kind]


def lookup(kind: str, name: str) -> Any:
    """The class registered as ``name`` (ablate.model imported) or its :class:`Variant`; RegistryError if unknown."""
    registry = loaded_registry(kind)
    if registry is not None:
        return registry.get(name)
    try:
        return BUILTIN[kind][name]
    except (KeyError, TypeError):
        raise RegistryError(unknown_message(kind, name, list(BUILTIN[kind]))) from None
