"""Resumable downloads into the cache, with checksums, for the corpora that fetch public files.

A download is written to ``<dest>.part`` and renamed only when complete (and its checksum, when one
is pinned, matches), so an interrupted run leaves no file that looks finished. A later run resumes a
``.part`` file with an HTTP ``Range`` request; a server that ignores the range restarts it.
A file lock per destination lets concurrent sweep trials share one download.
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import hashlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from ablate.data.errors import DataError

if TYPE_CHECKING:
    import urllib.request

CHUNK = 1 << 20
# False inside :func:`no_downloads`: report commands read what is prepared and never fetch a corpus.
_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("ablate_downloads_allowed", default=True)


class NotDownloaded(DataError):
    """A file would have to be downloaded, inside :func:`no_downloads`."""


@contextlib.contextmanager
def no_downloads() -> Iterator[None]:
    """Within it, :func:`fetch` of a file not already there raises :class:`NotDownloaded` instead of
    downloading (``ablate table`` before any trial must not fetch WMT14 to compute a unigram floor)."""
    token = _ALLOWED.set(False)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


# The one function that touches the network; tests monkeypatch it (or use file:// URLs).
def _open(request: urllib.request.Request):  # pragma: no cover - replaced in tests
    import urllib.request

    return urllib.request.urlopen(request, timeout=60)  # noqa: S310 - URLs are ablate's own constants


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def fetch(url: str, dest: Path, sha256: str | None = None, progress: bool = False) -> Path:
    """Download ``url`` to ``dest`` once (resuming a partial download); verify ``sha256`` if given.

    urllib.request is imported here, not at the top: it cost 35 ms of every ``ablate status`` (which
    names corpora but downloads nothing)."""
    import urllib.request

    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock"):
        if dest.exists():
            return dest
        if not _ALLOWED.get():
            raise NotDownloaded(f"{dest.name} is not downloaded yet (the trials' data preparation fetches it)")
        part = dest.with_name(dest.name + ".part")
        have = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"User-Agent": "ablate"})
        if have:
            request.add_header("Range", f"bytes={have}-")
        try:
            with _open(request) as resp:
                status = getattr(resp, "status", None) or getattr(resp, "code", None)
                resumed = have > 0 and status == 206
                total = resp.headers.get("Content-Length") if getattr(resp, "headers", None) else None
                if progress:
                    what = f"resuming at {have >> 20} MiB" if resumed else f"{int(total) >> 20} MiB" if total else ""
                    print(f"downloading {url} {what}".rstrip(), file=sys.stderr)
                with open(part, "ab" if resumed else "wb") as out:
                    shutil.copyfileobj(resp, out, CHUNK)
        except OSError as exc:  # urllib's URLError is an OSError
            reason = getattr(exc, "reason", None) or exc
            raise DataError(
                f"{url}: download failed ({reason}); check the network, or download it yourself and pass "
                f"data.root=<folder with the files> (a partial download resumes on the next run)"
            ) from None
        if sha256 is not None:
            got = sha256_file(part)
            if got != sha256:
                part.unlink()
                raise DataError(
                    f"{url}: checksum mismatch (sha256 {got[:12]}..., expected {sha256[:12]}...); the file was "
                    f"removed: run again, or place a verified copy under data.root"
                )
        os.replace(part, dest)
    return dest


def gunzip(src: Path, dest: Path, sha256: str | None = None) -> Path:
    """Decompress ``src`` to ``dest`` atomically; verify the decompressed file's ``sha256`` if given."""
    with FileLock(str(dest) + ".lock"):
        if dest.exists():
            return dest
        tmp = dest.with_name(dest.name + ".part")
        try:
            with gzip.open(src, "rb") as f, open(tmp, "wb") as out:
                shutil.copyfileobj(f, out, CHUNK)
        except (OSError, EOFError) as exc:
            tmp.unlink(missing_ok=True)
            src.unlink(missing_ok=True)  # a corrupt archive must be downloaded again
            raise DataError(f"{src}: not a valid gzip file ({exc}); it was removed, run again to download it") from None
        if sha256 is not None and (got := sha256_file(tmp)) != sha256:
            tmp.unlink()
            src.unlink(missing_ok=True)
            raise DataError(
                f"{src}: decompressed content has sha256 {got[:12]}..., expected {sha256[:12]}...; the download "
                f"was removed: run again, or place verified files under data.root"
            )
        os.replace(tmp, dest)
    return dest
