"""A sweep's ``imports:``: the user modules that register variants, imported explicitly by name.

The controller imports them before the sweep's configs are validated (a row may name a variant they
register), and every worker imports them again before it rebuilds its trial's config. Modules are
looked up beside the sweep file first, then in the working directory, then on ``sys.path``: the
sweep file's folder and the working directory are put at the front of ``sys.path`` for that (the one
place in ablate that edits it).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from ablate.sweep.errors import SweepError


def import_plugins(modules: Sequence[str], base: str | Path, where: str) -> None:
    """Import ``modules`` (``imports:`` of the sweep file in ``base``); a missing one is a SweepError."""
    if not modules:
        return
    for entry in (str(base), str(Path.cwd())):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    for mod in modules:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name and mod.startswith(exc.name):
                raise SweepError(
                    f"{where}: imports: no module {mod!r} (looked beside the sweep file and on sys.path); "
                    "fix the name or install it"
                ) from None
            raise SweepError(_import_failure(where, mod, exc)) from None
        except Exception as exc:  # noqa: BLE001 - user code may raise anything; one line names it
            raise SweepError(_import_failure(where, mod, exc)) from None


def _import_failure(where: str, mod: str, exc: BaseException) -> str:
    """One line: the module, its error and the line of user code that raised it."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename]
    at = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    if isinstance(exc, SyntaxError) and exc.filename:  # raised by the parser: no frame of the module
        at = f" at {exc.filename}:{exc.lineno}"
    msg = (str(exc).splitlines() or [""])[0][:200]
    return (
        f"{where}: imports: module {mod!r} raised {type(exc).__name__}: {msg}{at}; "
        "fix the module (or remove it from imports:)"
    )
