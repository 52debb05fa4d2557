"""The model's slot kinds and their registries, and how a config slot names a class and its args.

A slot in the ``model`` section is a registered name or ``{name, args}``. :func:`check_slot` is what
the config loader calls once (unknown names, malformed slots, args the class does not take), and then
each closed form of :func:`model_slots` (impossible values); ablate/model/build.py resolves a checked
section with :func:`model_slots` and builds from it.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import torch
from omegaconf import OmegaConf
from torch import nn

from ablate.config_schema import enc_dec_layers, head_dims
from ablate.model.attention import ATTENTION
from ablate.model.ffn import FFN
from ablate.model.norm import NORM
from ablate.model.positional import POSITIONAL
from ablate.model.residual import RESIDUAL
from ablate.registry import Registry, RegistryError, parse_slot

SLOT_REGISTRIES: dict[str, Registry[Any]] = {
    "positional": POSITIONAL,
    "attention": ATTENTION,
    "norm": NORM,
    "ffn": FFN,
    "residual": RESIDUAL,
}


def keywords(fn: Any) -> set[str] | None:
    """Keyword names ``fn`` (a class or function) accepts; None if it takes ``**kwargs`` (anything)."""
    sig = inspect.signature(fn)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {n for n, p in sig.parameters.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL}


def _parse(kind: str, spec: Any) -> tuple[str, dict[str, Any]]:
    plain = OmegaConf.to_container(spec, resolve=True) if OmegaConf.is_config(spec) else spec
    return parse_slot(plain, kind)


def lookup_slot(kind: str, spec: Any) -> tuple[Any, dict[str, Any]]:
    """(registered class, slot args) of a slot ``spec``: a name, ``{name, args}`` or its DictConfig."""
    name, args = _parse(kind, spec)
    return SLOT_REGISTRIES[kind].get(name), args


def check_slot(kind: str, spec: Any) -> None:
    """Raise RegistryError for an unknown name, a malformed slot or an arg the class does not take."""
    name, args = _parse(kind, spec)
    accepted = keywords(SLOT_REGISTRIES[kind].get(name))
    unknown = sorted(set(args) - accepted) if accepted is not None else []
    if unknown:
        raise RegistryError(
            f"{name!r} does not take the argument(s) {', '.join(unknown)} "
            f"(it takes: {', '.join(sorted(accepted or ())) or 'none'})"
        )


@dataclasses.dataclass
class Slot:
    """A resolved slot: the registered class and the keywords it will be called with."""

    cls: Any
    kwargs: dict[str, Any]
    # built children passed at build time (a residual's norms); counting passes parameter-free stand-ins
    stand_ins: dict[str, Any] = dataclasses.field(default_factory=dict)

    def build(self, **children: Any) -> nn.Module:
        return self.cls(**self.kwargs, **children)

    def num_params(self) -> int:
        # only a closed form defined in the class's own body: an inherited one may miss new parameters
        if isinstance(self.cls, type) and "num_params" in vars(self.cls):
            fn = self.cls.num_params  # bound through the descriptor (static or class method)
            accepted = keywords(fn)
            kw = self.kwargs if accepted is None else {k: v for k, v in self.kwargs.items() if k in accepted}
            return int(fn(**kw))
        with torch.device("meta"):  # no closed form: build it without allocating and count
            module = self.build(**self.stand_ins)
        return sum(p.numel() for p in module.parameters())


def _slot(kind: str, spec: Any, context: dict[str, Any]) -> Slot:
    cls, args = lookup_slot(kind, spec)
    accepted = keywords(cls)
    if accepted is not None:
        context = {k: v for k, v in context.items() if k in accepted}
    return Slot(cls, {**context, **args})


def _residual(m: Any, stack: str) -> Slot:
    n_enc, n_dec = enc_dec_layers(m)
    context = dict(dropout=m.dropout, n_enc_layers=n_enc, n_dec_layers=n_dec, stack=stack)
    slot = _slot("residual", m.residual, context)
    slot.stand_ins = {"norms": [nn.Identity() for _ in range(slot.cls.norms_per_sublayer)]}
    return slot


def model_slots(m: Any) -> dict[str, Slot]:
    """Every slot of a checked ``model`` section, resolved with the values its classes receive
    (ablate/model/build.py's docstring lists them); the loader calls each closed form once."""
    d_k, d_v = head_dims(m)
    positional = dict(d_model=m.d_model, max_positions=m.max_positions, n_heads=m.n_heads, d_k=d_k)
    return {
        "src_positional": _slot("positional", m.positional, {**positional, "causal": False}),
        "tgt_positional": _slot("positional", m.positional, {**positional, "causal": True}),
        "enc_residual": _residual(m, "encoder"),
        "dec_residual": _residual(m, "decoder"),
        "attention": _slot(
            "attention",
            m.attention,
            dict(d_model=m.d_model, n_heads=m.n_heads, d_k=d_k, d_v=d_v, dropout=m.attention_dropout),
        ),
        "norm": _slot("norm", m.norm, dict(d_model=m.d_model)),
        "ffn": _slot("ffn", m.ffn, dict(d_model=m.d_model, d_ff=m.d_ff)),
    }
