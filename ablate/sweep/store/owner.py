"""Which sweep file owns a sweep's name in its store: the one file that runs under that name.

Two files under one name in one store would share one study and one runs folder (each `ablate table`
overwriting the other's table files), so `ablate sweep` refuses a second file while the first is
there. The store records, at every `ablate sweep`, the file that ran: its absolute path, the machine it
ran on, and, for a file store, its path from the store's folder (found again in a copied project folder,
where the absolute record names the original).

A store on a database server is shared by machines that do not see each other's files. A recorded file
this machine cannot see was removed or renamed, when it ran on this machine (the name is free again),
or it lives on another machine, where it still owns the name: were the second machine's file let in,
its run would record it, and the first file, on its own machine, would find the name taken by a file it
can see there, and be locked out of its own sweep. A file store (SQLite, journal) is read by machines
that see its folder, and a copy of it goes with its folder, so there only what this machine sees counts,
as in a store written before the machine was recorded: a file not seen here does not hold the name.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILE_ATTR = "file"  # study user attribute: the sweep file the last `ablate sweep` ran (absolute path)
FILE_HERE_ATTR = "file_from_store"  # the same file relative to a file store's folder (found again in a copy)
HOST_ATTR = "file_host"  # the machine that file is on (the host name of the last `ablate sweep`)


def this_host() -> str:
    return socket.gethostname()


def file_records(sweep_file: Path, store_file: Path | None) -> dict[str, str]:
    """The study attributes that record ``sweep_file`` as the one that ran (``store_file``: the store's
    own file, for a file store)."""
    out = {FILE_ATTR: str(sweep_file.resolve()), HOST_ATTR: this_host()}
    if store_file is not None:
        out[FILE_HERE_ATTR] = os.path.relpath(sweep_file.resolve(), store_file.resolve().parent)
    return out


@dataclass(frozen=True)
class Owner:
    """The file a store records as the last that ran: where it is, as far as this machine can tell."""

    path: Path  # as recorded, or its copy beside a copied file store
    host: str | None  # None: a store written before the machine was recorded

    @property
    def elsewhere(self) -> bool:
        """On another machine (so not seeing it here says nothing about whether it is still there)."""
        return not self.path.exists() and self.host is not None and self.host != this_host()


def recorded_owner(attrs: Mapping[str, Any], store_file: Path | None) -> Owner | None:
    value = attrs.get(FILE_ATTR)
    if not isinstance(value, str):
        return None
    path, host, here = Path(value), attrs.get(HOST_ATTR), attrs.get(FILE_HERE_ATTR)
    if store_file is not None and isinstance(here, str) and (store_file.parent / here).exists():
        path = (store_file.parent / here).resolve()
    if store_file is not None:  # a file store's machines see its folder, and its copy goes with the folder
        host = None
    return Owner(path, host if isinstance(host, str) else None)


def clash_line(sweep_file: Path, name: str, url: str, owner: Owner, same_store: Callable[[Path], bool]) -> str | None:
    """One line when ``owner`` is another file that holds ``name`` in the store at ``url``, else None.

    ``same_store(path)``: whether the sweep file at ``path`` opens this store (a copied project folder's
    original opens its own; a file that no longer reads as a sweep cannot run under the name)."""
    fix = f"give this file another name: (its finished trials come along with --reuse {name})"
    if owner.elsewhere:
        return (
            f"{sweep_file}: name {name!r} is taken in store {url} by {owner.path} on machine {owner.host}; "
            f"{fix}, or continue that sweep there"
        )
    if not owner.path.exists() or owner.path.samefile(sweep_file) or not same_store(owner.path):
        return None
    return f"{sweep_file}: name {name!r} is taken in store {url} by {owner.path}; {fix}, or run that file"
