"""Where a sweep's store lives, parsed once: its URL, its kind and the local file behind it.

A :class:`StoreLocation` is made once per store (:func:`locate` from a sweep file, :meth:`StoreLocation.parse`
from a URL a worker is handed) and passed on; nothing else parses a store URL. Kinds: ``sqlite`` (a
SQLite file, beside the sweep file by default), ``journal`` (Optuna's journal file) and ``server`` (any
other SQLAlchemy URL: PostgreSQL, MySQL, or SQLite without a file such as ``sqlite:///:memory:``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ablate.errors import SweepError
from ablate.sweep.file.spec import Sweep, SweepFile


@dataclass(frozen=True)
class StoreLocation:
    """A store's URL as Optuna opens it, its kind, and its local file (None on a server)."""

    url: str
    kind: str  # "sqlite" | "journal" | "server"
    file: Path | None

    @classmethod
    def parse(cls, url: str) -> StoreLocation:
        """The one reading of a store URL (``sqlite:///PATH``, ``journal:PATH`` or a server's URL)."""
        path = file_of(url)
        if path is None:
            return cls(server_url(url), "server", None)
        return cls(url, "journal" if url.startswith("journal:") else "sqlite", path)

    @classmethod
    def sqlite(cls, path: Path) -> StoreLocation:
        return cls(f"sqlite:///{path}", "sqlite", path)

    @property
    def shown(self) -> str:
        """The URL to print: a server's password hidden."""
        return shown(self.url)

    @property
    def plain_sqlite(self) -> Path | None:
        """The file of a SQLite URL without options (read with the standard library's sqlite3), else None."""
        if self.kind != "sqlite" or "?" in self.url or "%" in self.url:  # options, or a path SQLAlchemy unquotes
            return None
        return self.file

    def __str__(self) -> str:
        return self.url


def locate(sweep: Sweep | SweepFile) -> StoreLocation:
    """The store of a sweep: ``.ablate/<name>.db`` beside its file, a journal file (relative to the sweep
    file's folder), or a server's URL as given."""
    if sweep.store == "sqlite":
        return StoreLocation.sqlite(sweep.path.parent / ".ablate" / (sweep.name + ".db"))
    if sweep.store.startswith("journal:"):
        path = Path(sweep.store[len("journal:") :])
        path = path if path.is_absolute() else (sweep.path.parent / path).resolve()
        return StoreLocation(f"journal:{path}", "journal", path)
    return StoreLocation.parse(sweep.store)


def server_url(url: str) -> str:
    """``postgresql://`` (and ``postgres://``) through psycopg 3, the driver of the ``postgres`` extra;
    SQLAlchemy's default for them is psycopg2. Another driver is named as ``postgresql+DRIVER://``."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg://{rest}" if sep and scheme in ("postgresql", "postgres") else url


def file_of(url: str) -> Path | None:
    """The local file behind a URL (SQLite or journal), or None for a server database."""
    if url.startswith("journal:"):
        return Path(url[len("journal:") :])
    if url.startswith("sqlite:///"):
        rest = url[len("sqlite:///") :]
        return Path(rest) if rest and rest != ":memory:" else None
    return None


def check_store_url(location: StoreLocation, where: str) -> None:
    """A server database URL must name a database SQLAlchemy knows (checked before anything runs)."""
    if location.file is not None:
        return
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    url = location.url
    try:
        make_url(url).get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        scheme = url.split("://")[0]
        raise SweepError(
            f"{where}: store {url!r}: unknown database {scheme!r} ({type(exc).__name__}); "
            "use sqlite, journal:PATH or an SQLAlchemy URL like postgresql://user@host/db"
        ) from None
    except ImportError as exc:
        extra = "; pip install 'ablate[postgres]'" if url.startswith("postgresql") else ""
        raise SweepError(f"{where}: store {url!r}: its database driver is not installed ({exc}){extra}") from None


def shown(url: str) -> str:
    """A store URL to print: a server URL's password hidden."""
    if "://" not in url or url.startswith("sqlite"):
        return url
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a URL SQLAlchemy cannot parse is reported elsewhere
        return url
