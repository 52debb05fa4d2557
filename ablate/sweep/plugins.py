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
            raise
