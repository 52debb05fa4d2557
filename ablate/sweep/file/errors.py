"""Errors of the sweep part: a bad sweep file or store is user input, reported in one line (exit 2)."""

from ablate.errors import AblateError


class SweepError(AblateError, ValueError):
    """A sweep file, its store or a launcher setting is invalid; one line: what, where, what to do."""


class StoreUnreadable(SweepError):
    """The store's file is there but is not a store (e.g. ``store:`` names the sweep file itself): every
    command says so, rather than reading it as a store with nothing in it yet."""
