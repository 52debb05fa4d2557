"""The one exception family a user sees: bad input, reported as one line and exit code 2; and the one
"did you mean" every such line about an unknown name uses."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def did_you_mean(name: object, valid: Iterable[object]) -> str | None:
    """The valid name closest to ``name`` (difflib's ratio, at least 0.5), or None."""
    close = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=0.5)
    return close[0] if close else None


class AblateError(Exception):
    """Base of every error caused by user input (config, data, sweep file, run directory).

    The CLI prints ``error: <message>`` and exits with status 2; the message must say what is wrong,
    where (file, line, key) and what to do.
    """


class ConfigError(AblateError, ValueError):
    """A configuration is invalid; the message is one line: what, where, what to do."""


class SweepError(AblateError, ValueError):
    """A sweep file, its store or a launcher setting is invalid; one line: what, where, what to do."""


class StoreUnreadable(SweepError):
    """The store's file is there but is not a store (e.g. ``store:`` names the sweep file itself): every
    command says so, rather than reading it as a store with nothing in it yet."""


class StoreUnreachable(StoreUnreadable):
    """The store's database server cannot be reached (refused, silent past the connect timeout, a wrong
    database or user): every command says so, rather than reading it as a sweep not started."""


class TrainingDiverged(AblateError):
    """The training loss became NaN or infinite (a sweep marks the trial failed, kind ``diverged``:
    final, never retried, because the same config and seed diverge again)."""


class ContractError(AssertionError):
    """A registered class (model variant, corpus, launcher) broke one check of the contract its registry
    promises (ablate/model/contract.py, ablate/data/contract.py, ablate/sweep/launch/contract.py); the
    message is one line saying how."""


class Pruned(Exception):
    """A search trial stopped early by its row's Optuna pruner (a result, not a failure)."""

    def __init__(self, step: int, value: float, metric: str) -> None:
        super().__init__(f"pruned at step {step} ({metric} {value:.4g})")
        self.step, self.value, self.metric = step, value, metric


def unknown_key(where: str, key: object, valid: Sequence[str]) -> SweepError:
    """The line for a key a sweep file (or a launcher's options) does not know: the nearest valid key,
    else all of them."""
    close = did_you_mean(key, valid)
    hint = f"; did you mean {close!r}?" if close else f" (valid: {', '.join(valid)})"
    return SweepError(f"{where}: unknown key {key!r}{hint}")


def check_known_keys(where: str, mapping: Mapping[str, Any], valid: Sequence[str]) -> None:
    """Raise :func:`unknown_key`'s error for the first key of ``mapping`` not in ``valid``."""
    for key in mapping:
        if key not in valid:
            raise unknown_key(where, key, valid)


def connection_failed(exc: BaseException) -> bool:
    """A server that refused, timed out or turned the login down: the DB-API's ``OperationalError``, raised
    as it is by a driver's cursor, wrapped by SQLAlchemy (``orig``) or by Optuna (``__cause__``)."""
    return _raised_as(exc, "OperationalError")


def permission_denied(exc: BaseException) -> bool:
    """A server that let the user in but refused what it asked (PostgreSQL's ``InsufficientPrivilege``,
    SQLSTATE 42501: a user that may connect or read, not write), through the same wrappers."""
    return _raised_as(exc, "InsufficientPrivilege")


def _raised_as(exc: BaseException, name: str) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if any(cls.__name__ == name for cls in type(seen).__mro__):
            return True
        seen = getattr(seen, "orig", None) or seen.__cause__
    return False
