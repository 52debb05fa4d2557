"""The error a user sees when corpus files, corpus options or tokenizer settings are wrong."""

from __future__ import annotations

from ablate.errors import AblateError


class DataError(AblateError, ValueError):
    """Bad data input; the message is one line: what, where (file:line or config key), what to do."""
