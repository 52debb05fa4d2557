"""A sweep's ``imports:``: the user modules that register variants, imported explicitly by name.

The controller imports them before the sweep's configs are validated (a row may name a variant they
register), and every worker imports them again before it rebuilds its trial's config. Modules are
looked up beside the sweep file first, then in the working directory, then on ``sys.path``
(:mod:`ablate.plugins`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ablate.errors import SweepError
from ablate.plugins import PluginImportError, import_user_module


def import_plugins(modules: Sequence[str], base: str | Path, where: str) -> None:
    """Import ``modules`` (``imports:`` of the sweep file in ``base``); a missing one is a SweepError."""
    for mod in modules:
        try:
            import_user_module(mod, (base, Path.cwd()))
        except PluginImportError as exc:
            if exc.missing:
                raise SweepError(
                    f"{where}: imports: no module {mod!r} (looked beside the sweep file and on sys.path); "
                    "fix the name or install it"
                ) from None
            raise SweepError(
                f"{where}: imports: module {mod!r} raised {exc.raised()}; fix the module (or remove it from imports:)"
            ) from None
