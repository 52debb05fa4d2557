"""Where a sweep's store lives: its URL (a SQLite file beside the sweep file by default, a journal file,
or any SQLAlchemy URL), the local file behind it, and the check of a server URL before anything runs."""

from __future__ import annotations

from pathlib import Path

from ablate.errors import SweepError
from ablate.sweep.file.spec import Sweep, SweepFile


def store_url(sweep: Sweep | SweepFile) -> str:
    """The store of a sweep as a URL a worker can reopen: sqlite:///abs, journal:/abs or as given."""
    if sweep.store == "sqlite":
        return f"sqlite:///{sweep.path.parent / '.ablate' / (sweep.name + '.db')}"
    if sweep.store.startswith("journal:"):
        path = Path(sweep.store[len("journal:") :])
        return f"journal:{path if path.is_absolute() else (sweep.path.parent / path).resolve()}"
    return server_url(sweep.store)


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


def check_store_url(url: str, where: str) -> None:
    """A server database URL must name a database SQLAlchemy knows (checked before anything runs)."""
    if url.startswith(("sqlite:///", "journal:")):
        return
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

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
