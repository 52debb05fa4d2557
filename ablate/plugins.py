"""Importing a user's module (variants, corpora): the one place in ablate that edits ``sys.path``.

A sweep's ``imports:`` (:mod:`ablate.sweep.file.plugins`) and ``ablate variants`` / ``check-variants``
(:mod:`ablate.variants_cli`) both import modules a user wrote, looked up in given folders first (the
sweep file's, the working directory) and then on ``sys.path``. Each caller words its own one-line
error from :class:`PluginImportError`: which module, whether it is missing or raised, and where.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType


class PluginImportError(Exception):
    """A user module that is not there (``missing``) or that raised while importing (``cause``)."""

    def __init__(self, name: str, missing: bool, cause: BaseException) -> None:
        super().__init__(name)
        self.name, self.missing, self.cause = name, missing, cause

    def raised(self) -> str:
        """``"ValueError: bad width at plugins/mine.py:12"``: the error and the line of user code."""
        exc = self.cause
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename]
        at = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        if isinstance(exc, SyntaxError) and exc.filename:  # raised by the parser: no frame of the module
            at = f" at {exc.filename}:{exc.lineno}"
        return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}{at}"


def import_user_module(name: str, folders: Sequence[str | Path]) -> ModuleType:
    """Import module ``name``, looking in ``folders`` (put at the front of ``sys.path``) first."""
    for folder in reversed([str(Path(f).resolve()) for f in folders]):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise PluginImportError(name, bool(exc.name and name.startswith(exc.name)), exc) from None
    except Exception as exc:  # noqa: BLE001 - user code may raise anything; the caller words one line
        raise PluginImportError(name, False, exc) from None
