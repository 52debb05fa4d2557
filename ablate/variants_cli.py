"""`ablate variants` and `ablate check-variants`: list registered variants, run the model contract on plugins.

ablate/cli.py delegates both subcommands here (:func:`add_variant_commands`). Nothing heavy is imported
until a command runs: ``--help`` stays light.

- ``ablate variants [--imports MODULE ...]``: every registry, per slot, each name with its one-line
  doc; model slots also say whether the class has a closed-form parameter count (``closed``) or is
  counted by building it (``counted``), and which plugin module registered it.
- ``ablate check-variants MODULE ...``: import the modules (a name on the path or a ``.py`` file), run
  the contract of ablate/model/contract.py on every model variant they registered and the one of
  ablate/data/contract.py on every corpus they registered, one PASS/FAIL (or SKIP) line per check;
  exit 1 if any check failed, 2 if a module cannot be imported or registered nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ablate.errors import AblateError
from ablate.plugins import PluginImportError, import_user_module


class VariantsError(AblateError):
    """A plugin module could not be imported, or registered no model variant and no corpus."""


def import_module(spec: str) -> ModuleType:
    """Import ``spec``: a module name (the working directory is searched first) or a path to a .py file."""
    path = Path(spec)
    folder, name = (path.parent, path.stem) if spec.endswith(".py") else (Path.cwd(), spec)
    if spec.endswith(".py") and not path.is_file():
        raise VariantsError(f"{spec}: no such file")
    try:
        return import_user_module(name, (folder,))
    except PluginImportError as exc:
        if exc.missing:
            raise VariantsError(f"no module {name!r} (looked in {folder} and on sys.path); fix the name") from None
        if isinstance(exc.cause, ModuleNotFoundError):
            raise VariantsError(f"module {name!r} raised ModuleNotFoundError: {exc.cause}") from None
        msg = (str(exc.cause).splitlines() or [""])[0][:200]
        raise VariantsError(f"module {name!r} raised {type(exc.cause).__name__}: {msg}") from None


def _origin(obj: Any) -> str:
    mod = getattr(obj, "__module__", "") or ""
    return "" if mod == "ablate" or mod.startswith("ablate.") else mod


def _closed_form(obj: Any) -> bool:
    return isinstance(obj, type) and "num_params" in vars(obj)


PARAMS_LEGEND = "model params: closed = a closed-form num_params; counted = built on the meta device and counted"


def listing(imports: Sequence[str] = ()) -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
    """Every registry after importing ``imports``, sorted by kind: (kind, description, entries), each entry
    (name, params, one-line doc, plugin module); params is closed or counted for a model slot, else ""
    (`ablate variants` prints it; the docs' reference page is made from it)."""
    from ablate.model.slots import SLOT_REGISTRIES
    from ablate.registry import load_builtin_registries

    registries = load_builtin_registries()
    for spec in imports:
        import_module(spec)
    out = []
    for kind, reg in sorted(registries.items()):
        model = kind in SLOT_REGISTRIES
        entries = []
        for name, doc in reg.describe():
            obj = reg.get(name)
            params = ("closed" if _closed_form(obj) else "counted") if model else ""
            entries.append((name, params, doc, _origin(obj)))
        out.append((kind, reg.description, entries))
    return out


def variants(imports: list[str]) -> int:
    """Print every registry's variants (after importing ``imports``)."""
    for kind, description, entries in listing(imports):
        print(f"{kind}: {description}" if description else f"{kind}:")
        for name, params, doc, origin in entries:
            column = f"{params:<7} " if params else ""
            plugin = f"  [plugin: {origin}]" if origin else ""
            print(f"  {name:<18} {column}{doc}{plugin}")
    print(PARAMS_LEGEND)
    return 0


def _from(obj: Any, names: set[str]) -> bool:
    mod = getattr(obj, "__module__", "") or ""
    return mod in names or any(mod.startswith(n + ".") for n in names)


def plugin_variants(modules: list[ModuleType]) -> list[tuple[str, str]]:
    """(slot kind, name) of the model variants whose class lives in one of ``modules``."""
    from ablate.model.slots import SLOT_REGISTRIES

    names = {m.__name__ for m in modules}
    return [
        (kind, name)
        for kind, reg in sorted(SLOT_REGISTRIES.items())
        for name in reg.names()
        if _from(reg.get(name), names)
    ]


def plugin_corpora(modules: list[ModuleType]) -> list[str]:
    """Names of the corpora whose class lives in one of ``modules``."""
    from ablate.data.catalog import CORPORA

    names = {m.__name__ for m in modules}
    return [name for name in CORPORA.names() if _from(CORPORA.get(name), names)]


def check_variants(specs: list[str], checks: list[str] | None = None) -> int:
    """Run the model and corpus contracts on what ``specs`` register; 0 if every check passed, else 1."""
    from ablate.data import contract as corpus_contract
    from ablate.model import contract as model_contract

    unknown = sorted(set(checks or ()) - set(model_contract.CHECKS) - set(corpus_contract.CHECKS))
    if unknown:
        valid = [*model_contract.CHECKS, *corpus_contract.CHECKS]
        raise VariantsError(f"unknown check(s) {', '.join(unknown)} (valid: {', '.join(valid)})")
    modules = [import_module(s) for s in specs]
    found, corpora = plugin_variants(modules), plugin_corpora(modules)
    if not found and not corpora:
        raise VariantsError(
            f"{', '.join(specs)} registered no model variant (positional, attention, norm, ffn, residual) and no corpus"
        )
    results: list[Any] = []
    if found:
        results += model_contract.run_contract(found, _only(checks, model_contract.CHECKS))
    if corpora:
        results += corpus_contract.run_contract(corpora, _only(checks, corpus_contract.CHECKS))
    for result in results:
        print(result.line())
    failed = [r for r in results if not r.ok]
    parts = [f"{len(found)} variant(s)"] if found else []
    parts += [f"{len(corpora)} corpus(es)"] if corpora else []
    skipped = sum(getattr(r, "status", "") == "SKIP" for r in results)
    total = f"{len(results)} checks on {' and '.join(parts)}" + (f" ({skipped} skipped)" if skipped else "")
    print(f"{total}: {len(failed)} failed" if failed else f"{total}: all passed")
    return 1 if failed else 0


def _only(checks: list[str] | None, valid: Any) -> list[str] | None:
    """The ``--check`` names that belong to one contract (None: all of its checks)."""
    return None if checks is None else [c for c in checks if c in valid]


def add_variant_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``variants`` and ``check-variants`` to the ``ablate`` parser (called by ablate/cli.py)."""
    what = "list every registry's variants (with plugins: --imports MODULE); loads torch to read the classes (~3 s)"
    s = sub.add_parser("variants", help=what)
    s.add_argument("--imports", nargs="+", default=[], metavar="MODULE", help="plugin modules to import first")
    s.set_defaults(func=lambda a: variants(a.imports))

    s = sub.add_parser("check-variants", help="run the model variant and corpus contracts on what a plugin registers")
    s.add_argument("modules", nargs="+", metavar="MODULE", help="module name (cwd searched first) or path/to/file.py")
    s.add_argument("--check", action="append", default=None, metavar="NAME", help="run only this check (repeatable)")
    s.set_defaults(func=lambda a: check_variants(a.modules, a.check))
