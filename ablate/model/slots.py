"""The model's slot kinds and their registries, and how a config slot names a class and its args.

A slot in the ``model`` section is a registered name or ``{name, args}``. :func:`check_slot` is what
the config loader calls once (unknown names, malformed slots, args the class does not take);
:func:`lookup_slot` is what ablate/model/build.py calls afterwards, on a checked section.
"""

from __future__ import annotations

import inspect
from typing import Any

from omegaconf import OmegaConf

from ablate.model.attention import ATTENTION
from ablate.model.ffn import FFN
from ablate.model.norm import NORM
from ablate.model.positional import POSITIONAL
from ablate.registry import Registry, RegistryError, parse_slot

SLOT_REGISTRIES: dict[str, Registry[Any]] = {
    "positional": POSITIONAL,
    "attention": ATTENTION,
    "norm": NORM,
    "ffn": FFN,
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
