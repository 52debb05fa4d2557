"""The blocks of a sweep file that a policy owns (``search:``, ``seeds: {start, max, until}``, a plugin's).

A sweep file's own keys (name, store, rows, launcher...) are read by :mod:`ablate.sweep.file.spec`. A
*block* is a top-level key that belongs to one policy of the plan room: the policy registers a
:class:`SweepBlock` here under its key, saying how the block is read (one :class:`SweepError` line on a
mistake) and which trials the sweep then has. :func:`~ablate.sweep.file.spec.read_sweep_file` reads
every block the registry knows; a key it does not know is an unknown key, with the nearest one named.

The built-in blocks register themselves in their files (``search_spec``, ``seeds_spec``), imported
with this room. A plugin policy registers its block in its own file, imported through the sweep file's
``imports:`` before the blocks are read (:func:`ablate.sweep.loader.open_sweep`), and its plan in the
same file (:mod:`ablate.sweep.plan.base`): a new policy touches no other file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ablate.registry import Registry

Sweep = Any  # an ablate.sweep.file.spec.Sweep (which imports this module: named here, not imported)


class SweepBlock:
    """How a policy's block of the sweep file is read and what it makes of the sweep's trials."""

    doc: str = ""  # what the block holds, one line (unknown-key hints, the docs)
    rows_optional: bool = False  # ``rows:`` may be left out beside it (a search tunes the experiment as one row)

    @staticmethod
    def claims(value: Any) -> bool:
        """Whether this value of the key is the block (``seeds:`` is a block as a mapping, a list otherwise)."""
        return True

    @staticmethod
    def read(where: str, value: Any) -> Any:
        """The block's value checked and parsed (its spec); a mistake is one :class:`SweepError` line."""
        return value

    @staticmethod
    def seeds(spec: Any) -> tuple[int, ...] | None:
        """The seeds every row starts at when the block sets them (adaptive seeds: 1..start), else None."""
        return None

    @staticmethod
    def build(sweep: Sweep, spec: Any, grid: Callable[[], Sweep]) -> Sweep:
        """The sweep with the trials this block gives it. ``grid()`` is the sweep with every row at every
        seed (built when called; a search does not call it); ``sweep`` has no trials yet. Blocks apply in
        the file's order, each one's ``grid`` being the one before it."""
        return grid()


BLOCKS: Registry[type[SweepBlock]] = Registry("sweep block", "top-level blocks of a sweep file that a policy owns")
