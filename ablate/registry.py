"""Named registries of swappable parts (positional encodings, attentions, norms, FFNs, corpora, launchers).

A variant is one class (or factory) and one decorator::

    from ablate.model.positional import POSITIONAL

    @POSITIONAL.register("rope")
    class Rotary(nn.Module):
        '''Rotary position embedding (Su et al., 2021).'''

Names are short lowercase strings, stable forever: sweep files and the results store hold them.
A slot in a config is either a bare name (``"rope"``) or ``{name: rope, args: {...}}``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from ablate.errors import AblateError, did_you_mean

T = TypeVar("T")

_NAME_RE = re.compile(r"^[a-z][a-z0-9_\-]*$")

# Every Registry created registers itself here, so `ablate variants` can list them all.
_ALL: dict[str, Registry[Any]] = {}


class RegistryError(AblateError, ValueError):
    """A registry lookup or registration failed; the message is one line a user can act on."""


class Registry(Generic[T]):
    """Maps a stable lowercase name to a class or factory of one slot kind."""

    def __init__(self, kind: str, description: str = "") -> None:
        if kind in _ALL:
            raise RegistryError(f"a registry for {kind!r} already exists")
        self.kind = kind
        self.description = description
        self._entries: dict[str, T] = {}
        self._docs: dict[str, str] = {}
        _ALL[kind] = self

    # -- registration ---------------------------------------------------------------------------
    def register(self, name: str, description: str | None = None) -> Callable[[T], T]:
        """Decorator: register ``obj`` under ``name``. A duplicate name is an error."""
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise RegistryError(
                f"{self.kind} name {name!r} is not valid: use a short lowercase name like 'rope' or 'swiglu'"
            )

        def deco(obj: T) -> T:
            if name in self._entries:
                where = _where(self._entries[name])
                raise RegistryError(f"{self.kind} {name!r} is already registered (by {where}); pick another name")
            self._entries[name] = obj
            self._docs[name] = description or _first_line(obj)
            return obj

        return deco

    # -- lookup ---------------------------------------------------------------------------------
    def get(self, name: str) -> T:
        """The object registered under ``name``; an unknown name lists the valid ones."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise RegistryError(self.unknown_message(name)) from None

    def unknown_message(self, name: object) -> str:
        return unknown_message(self.kind, name, list(self._entries))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def describe(self) -> list[tuple[str, str]]:
        """(name, one-line description) for every entry, sorted by name."""
        return [(n, self._docs[n]) for n in self.names()]


def unknown_message(kind: str, name: object, names: list[str]) -> str:
    """The one line for a name not among ``names``: the closest one if any, and every valid one."""
    valid = ", ".join(sorted(names)) or "(none registered)"
    hint = ""
    close = did_you_mean(name, names) if isinstance(name, str) else None
    if close:
        hint = f"; did you mean {close!r}?"
    return f"unknown {kind} {name!r}{hint} (valid: {valid})"


def parse_slot(spec: Any, kind: str = "slot") -> tuple[str, dict[str, Any]]:
    """``"rope"`` or ``{name: rope, args: {...}}`` -> (name, args)."""
    if isinstance(spec, str):
        return spec, {}
    if isinstance(spec, Mapping):
        extra = set(spec) - {"name", "args"}
        if "name" not in spec or extra:
            raise RegistryError(
                f"a {kind} slot must be a name or {{name: ..., args: {{...}}}}, got keys {sorted(spec)}"
            )
        args = spec.get("args") or {}
        if not isinstance(args, Mapping):
            raise RegistryError(f"{kind} args must be a mapping, got {type(args).__name__}")
        return str(spec["name"]), dict(args)
    raise RegistryError(f"a {kind} slot must be a name or {{name: ..., args: {{...}}}}, got {spec!r}")


def all_registries() -> dict[str, Registry[Any]]:
    """Every registry created so far, by kind (import the modules that define them first)."""
    return dict(_ALL)


# They fill ablate's registries (the recipe's two are torch-free: their classes import torch when they build).
BUILTIN_MODULES = (
    "ablate.model",
    "ablate.data.catalog",
    "ablate.sweep.launch",
    "ablate.recipe",
)


def load_builtin_registries() -> dict[str, Registry[Any]]:
    """Import the modules that fill ablate's own registries (for listings) and return them all."""
    import importlib

    for mod in BUILTIN_MODULES:
        importlib.import_module(mod)
    return all_registries()


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _where(obj: object) -> str:
    mod = getattr(obj, "__module__", "?")
    qual = getattr(obj, "__qualname__", repr(obj))
    return f"{mod}.{qual}"
