"""Riding out a database server that stops answering mid-sweep (a restart, a failover).

Every read and write of a sweep's store on a server database goes through :func:`patient`: an error
that says the connection failed (the DB-API's ``OperationalError``, however SQLAlchemy or Optuna wrap
it) is retried with backoff (0.5 s, doubling to 10 s) for up to ``PATIENCE_S``; one line on stderr says
the store is being waited for. The controller, its workers and their heartbeats then go on where they
were when the server answers again, and no attempt fails for it (a worker's beats resume within the
heartbeat's grace period). Past ``PATIENCE_S`` the error is :class:`~ablate.errors.StoreUnreachable`,
one line. Opening a store is not patient: a server down when a command starts is one line at once.

A write whose commit reached the server before the connection broke is retried too: the store's writes
are checks-then-sets (a claim of an attempt that is no longer WAITING returns False, a sync re-reads
what exists), so a second try finds the first one's effect. File stores are not retried here: SQLite
waits out another process's lock itself (its busy timeout) and a journal appends under its own lock.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ablate.errors import StoreUnreachable, connection_failed

PATIENCE_S = 180.0  # how long a sweep waits for its database server before giving up
FIRST_WAIT_S, LONGEST_WAIT_S = 0.5, 10.0

F = TypeVar("F", bound=Callable[..., Any])


def patient(method: F) -> F:
    """A store method that waits out a database server that stopped answering (see the module doc)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.location.file is not None:
            return method(self, *args, **kwargs)
        deadline: float | None = None
        wait = FIRST_WAIT_S
        while True:
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - only a failed connection is waited for; the rest is raised
                if not connection_failed(exc):
                    raise
                now = time.monotonic()
                if deadline is None:
                    deadline = now + PATIENCE_S
                    print(
                        f"store {self.location.shown}: the database server is not answering ({method.__name__}); "
                        f"waiting up to {PATIENCE_S:.0f} s",
                        file=sys.stderr,
                    )
                if now >= deadline:
                    raise StoreUnreachable(
                        f"store {self.location.shown}: the database server has not answered for {PATIENCE_S:.0f} s "
                        f"({method.__name__}); start it, then run the command again (nothing is lost)"
                    ) from None
                time.sleep(min(wait, deadline - now))
                wait = min(2 * wait, LONGEST_WAIT_S)

    return wrapper  # type: ignore[return-value]


def patient_methods(*names: str) -> Callable[[type], type]:
    """A class decorator: the methods ``names`` of the class made :func:`patient`."""

    def apply(cls: type) -> type:
        for name in names:
            setattr(cls, name, patient(getattr(cls, name)))
        return cls

    return apply
