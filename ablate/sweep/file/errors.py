"""Errors of the sweep part: a bad sweep file or store is user input, reported in one line (exit 2)."""

from ablate.errors import AblateError


class SweepError(AblateError, ValueError):
    """A sweep file, its store or a launcher setting is invalid; one line: what, where, what to do."""
