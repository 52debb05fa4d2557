"""The report's user-input error: a sweep or row the table cannot be built from."""

from __future__ import annotations

from ablate.errors import AblateError


class ReportError(AblateError, ValueError):
    """The table cannot be built (no results, unknown paper row, bad format); the message is one line."""
