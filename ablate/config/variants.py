"""The built-in model variants without torch: names, constructor keywords and closed-form parameter counts.

The variant classes live in ablate/model/ (positional.py, attention.py, norm.py, ffn.py, residual.py)
and import torch (~2-3 s). Checking a config's variant names and args, and counting a model's
parameters and FLOPs (ablate/config/size.py: config load, ``ablate sweep --dry-run``, ``ablate status``
and ``ablate table``) need, for each built-in name, only the keywords its constructor takes, its
``num_params`` and, for a residual, ``norms_per_sublayer`` and ``final_norm``.

Each variant is declared once, as its class: :func:`builtin` reads those facts from the source of
ablate/model/ with ``ast`` (the ``@REGISTRY.register("name")`` decorator, ``__init__``'s parameters
and the class attributes, inherited within the module), which costs a few milliseconds and imports
nothing. The closed forms are functions defined here, torch-free, that the classes name in their body
(``num_params = staticmethod(...)``). tests/model/test_model_catalog.py checks what is read against
the imported registries.

:func:`lookup` answers from the real registry once ``ablate.model`` is imported (a sweep's ``imports:``
plugins register there; training and building import it anyway), else from :func:`builtin`. An unknown
name gets the registry's own one-line error (ablate/registry.py ``unknown_message``).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
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


# The modules of ablate/model/ whose classes fill each slot registry (file name = slot kind).
MODEL_DIR = Path(__file__).resolve().parents[1] / "model"
SLOT_FILES = ("positional", "attention", "norm", "ffn", "residual")


class _Classes:
    """The class definitions of one model module, read with ``ast`` (no torch, no import)."""

    def __init__(self, kind: str) -> None:
        tree = ast.parse((MODEL_DIR / f"{kind}.py").read_text(encoding="utf-8"))
        self.defs = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}

    def chain(self, name: str) -> Iterator[ast.ClassDef]:
        """The class and its bases defined in the same module, nearest first."""
        while name in self.defs:
            node = self.defs[name]
            yield node
            base = node.bases[0] if node.bases else None
            name = base.id if isinstance(base, ast.Name) else ""

    def keywords(self, name: str) -> frozenset[str]:
        for node in self.chain(name):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    a = item.args
                    return frozenset(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs][1:])
        return frozenset()

    def attribute(self, name: str, attr: str) -> ast.expr | None:
        """The expression a class attribute is set to, inherited within the module; None if unset."""
        for node in self.chain(name):
            for item in node.body:
                target = item.target if isinstance(item, ast.AnnAssign) else None
                if isinstance(item, ast.Assign) and len(item.targets) == 1:
                    target = item.targets[0]
                if isinstance(target, ast.Name) and target.id == attr and item.value is not None:
                    return item.value
        return None


def _registered_name(node: ast.ClassDef) -> str | None:
    for dec in node.decorator_list:  # @REGISTRY.register("name")
        if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "register":
            if dec.args and isinstance(dec.args[0], ast.Constant):
                return str(dec.args[0].value)
    return None


def _variant(classes: _Classes, name: str, node: ast.ClassDef) -> Variant:
    closed = classes.attribute(node.name, "num_params")  # num_params = staticmethod(<a function here>)
    if not (isinstance(closed, ast.Call) and closed.args and isinstance(closed.args[0], ast.Name)):
        raise RuntimeError(f"ablate/model: {node.name} has no num_params = staticmethod(<closed form>)")
    literal = ast.literal_eval
    norms = classes.attribute(node.name, "norms_per_sublayer")
    final = classes.attribute(node.name, "final_norm")
    return Variant(
        name,
        classes.keywords(node.name),
        globals()[closed.args[0].id],
        literal(norms) if norms is not None else 1,
        literal(final) if final is not None else False,
    )


@functools.cache
def builtin() -> dict[str, dict[str, Variant]]:
    """Every built-in variant of every slot kind, read from the source of ablate/model/ (see the module
    docstring): the class is the one declaration of its name, keywords and residual attributes."""
    out: dict[str, dict[str, Variant]] = {}
    for kind in SLOT_FILES:
        classes = _Classes(kind)
        named = ((_registered_name(node), node) for node in classes.defs.values())
        out[kind] = {name: _variant(classes, name, node) for name, node in named if name}
    return out


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
        return builtin()[kind][name]
    except (KeyError, TypeError):
        raise RegistryError(unknown_message(kind, name, list(builtin()[kind]))) from None
