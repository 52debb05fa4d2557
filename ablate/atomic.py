"""Files that appear whole or not at all: a fsynced sibling temp file, then ``os.replace``.

Used for checkpoints, ``progress.json``, ``metrics.json`` and everything else a crash must not tear.
The temporary file is a sibling of the target (``.NAME.tmp-PID``) so the rename never crosses file
systems (``/tmp`` -> a cluster's shared disk would be a copy, not a rename).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

TMP_MARK = ".tmp-"


def folder_problem(path: Path) -> str | None:
    """Create ``path`` (and its parents) where needed; None when files can be written in it, else why not,
    in a few words for an error line (a file of that name, a missing mount, a read-only disk)."""
    if path.exists() and not path.is_dir():
        return "a file, not a folder"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None if os.access(path, os.W_OK) else "not writable"


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file that appears at ``path`` whole or not at all: a fsynced sibling temp + os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path) as f:
        f.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n").encode())


def remove_stale_temps(folder: str | Path) -> list[Path]:
    """Delete temp files left by killed writers (``.NAME.tmp-PID``) in ``folder``; returns what was removed."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    removed = []
    for p in folder.glob(f".*{TMP_MARK}*"):
        with contextlib.suppress(OSError):
            p.unlink()
            removed.append(p)
    return removed
