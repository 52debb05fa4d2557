"""How a sweep's store is opened: to write, through Optuna's storage with its checks; to read, with SQL.

- **To write** (``ablate sweep``, a retry): Optuna's storage for the URL, which creates its tables
  when they are missing and checks their schema version against the installed Optuna; the study is
  created if needed. A worker's claim and beats use the storage without those checks: the
  controller that started it made and checked the store.
- **To read** (``status``, ``table``, the report, ``--dry-run``'s note of recorded overrides): on a
  SQL store, a cursor alone (Python's sqlite3 for a SQLite file, a SQLAlchemy engine for a server:
  below) and the study's id from its table. Optuna's storage object
  took 0.45 s to build (its schema-version check imports alembic) against 0.1 s for the engine; it is
  made on first use, when a read goes through Optuna's API or something is written (skipping its
  table creation and schema check: the study exists, a write command opens the store to write).

A journal file is always opened through Optuna (it has no tables). Errors become one-line
:class:`~ablate.errors.SweepError`\\ s: a file or a database without Optuna's tables reads as "no study
yet"; a database server that cannot be reached is :class:`~ablate.errors.StoreUnreachable`, within
``CONNECT_TIMEOUT_S`` (a server that accepts a connection and never answers would otherwise hold every
command, the dry run and ``status`` included, for as long as TCP allows), and a statement on PostgreSQL
is cancelled by the server after ``STATEMENT_TIMEOUT_S`` (the store's statements take milliseconds). A
user the server lets in but not write (no right to create Optuna's tables, or to insert into tables
another user made) is refused when the store is opened to write, before the first trial is written.

**Cursors.** Reading a store needs a DB-API cursor and nothing else of SQLAlchemy, whose import took
0.23 s: half of ``ablate status`` on the finished mini sweep, against a budget of 0.5 s for the whole
command (2-core machine). A SQLite file is therefore read through the standard library's ``sqlite3``
(:class:`SqliteCursors`), the driver SQLAlchemy itself uses for it, with the same busy timeout; a server
database through a SQLAlchemy engine (:class:`EngineCursors`), as is a store opened to write (Optuna's
storage owns its engine). Statements carry no bound values: ids are integers written in.

Why this file is long: opening is one contract over three kinds of store (a SQLite file, a journal, a
server) and two purposes (read, write); each answer a store can give (not there, not a store, not
reachable, not writable) is worded where it is caught, so none escapes as a traceback.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from ablate.errors import StoreUnreachable, StoreUnreadable, SweepError, connection_failed, permission_denied
from ablate.sweep.store.location import StoreLocation

BUSY_TIMEOUT_S = 30  # seconds a SQLite read or write waits for another process's lock
CONNECT_TIMEOUT_S = 10  # seconds to connect to a database server (libpq's connect_timeout)
STATEMENT_TIMEOUT_S = 60  # seconds PostgreSQL lets one statement of the store run


class SqliteCursors:
    """Cursors on an existing SQLite file, opened read-write but never created (``mode=rw``)."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def cursor(self) -> Iterator[Any]:
        from urllib.parse import quote

        # mode=rw: a store deleted since it was found is an error here, never a new empty file
        conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            yield conn.cursor()
        finally:
            conn.close()


class EngineCursors:
    """Cursors of a SQLAlchemy engine (a server database, or a store opened to write)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        import sqlalchemy.exc

        return (sqlalchemy.exc.SQLAlchemyError, self.engine.dialect.loaded_dbapi.Error)

    @contextlib.contextmanager
    def cursor(self) -> Iterator[Any]:
        with self.engine.connect() as conn:
            yield conn.connection.cursor()  # the driver's own cursor: no result objects


Cursors = SqliteCursors | EngineCursors


def rows(cursors: Cursors, statement: str) -> list[Any]:
    with cursors.cursor() as cursor:
        cursor.execute(statement)
        return list(cursor.fetchall())


def study_ids(cursors: Cursors) -> dict[str, int]:
    """Study name -> id of every study in the store (a few per store: no bound name needed)."""
    return {str(name): int(sid) for sid, name in rows(cursors, "SELECT study_id, study_name FROM studies")}


def studies_in(location: StoreLocation) -> list[str]:
    """The studies of a store, looked up without keeping anything open or making anything: [] for a file
    not there yet or a database without Optuna's tables; a file that is not a store or a server that cannot
    be reached raise their one line. SQL stores are read with SQL (Optuna's own listing makes its tables in
    any .db file it is pointed at); a journal through Optuna, which reads it without a lock."""
    if location.file is not None and not location.file.exists():
        return []
    url, sqlite = location.url, location.plain_sqlite
    if sqlite is not None:
        try:
            return list(study_ids(SqliteCursors(sqlite)))
        except sqlite3.Error as exc:
            return _no_tables(exc, location)
    if location.kind == "journal":
        try:
            return [s.study_name for s in optuna_storage(location, create=False).get_all_studies()]
        except (ValueError, OSError) as exc:  # other lines (e.g. the sweep file itself), a folder, unreadable
            _not_a_journal(location, exc)
    import sqlalchemy
    import sqlalchemy.exc

    try:
        engine = sqlalchemy.create_engine(url, **_engine_kwargs(url))
    except (ImportError, sqlalchemy.exc.ArgumentError) as exc:
        raise SweepError(f"store {url}: cannot open ({exc}); check the store: key of the sweep file") from None
    cursors = EngineCursors(engine)
    try:
        return list(study_ids(cursors))
    except (sqlalchemy.exc.DBAPIError, engine.dialect.loaded_dbapi.Error) as exc:
        if location.file is None and connection_failed(exc):
            _unreachable(location, exc)
        return _no_tables(exc, location)
    finally:
        engine.dispose()


def study_names(location: StoreLocation) -> list[str]:
    """The studies of a store, [] for anything that is not one (other sweeps' stores, looked for beside
    this one: none of ours to complain about)."""
    try:
        return studies_in(location)
    except SweepError:
        return []


_STUDY_ATTRS = "SELECT key, value_json FROM study_user_attributes WHERE study_id = {study:d}"


@dataclass
class Opened:
    study_id: int
    engine: Cursors | None  # cursors on a SQL store (None: a journal file)
    storage: Any  # Optuna's storage (None until needed, on a store opened to read)
    checked: bool  # opened to write: Optuna created its tables and checked their schema


def open_store(location: StoreLocation, study_name: str, create: bool) -> Opened:
    """Open (with ``create``: make) the study of a sweep in the store at ``location``. Reading a SQLite
    file needs the standard library only, a server database SQLAlchemy: Optuna (0.19 s to import) loads
    to write or to read a journal."""
    url, path = location.url, location.file
    read = not create and location.kind != "journal"
    if path is not None and not create and not path.exists():
        raise SweepError(f"store {path}: does not exist yet; run `ablate sweep` first")
    if path is not None and create:
        path.parent.mkdir(parents=True, exist_ok=True)
    if read and (sqlite := location.plain_sqlite) is not None:
        try:
            return _open_to_read(SqliteCursors(sqlite), study_name)
        except sqlite3.Error as exc:
            _unreadable(exc, url, path, study_name)
        except KeyError:  # a store that holds other sweeps' studies (a shared store), not this one
            raise SweepError(f"store {url}: no study {study_name!r} yet; run `ablate sweep` first") from None
    import sqlalchemy.exc

    db_errors: tuple[type[BaseException], ...] = (sqlalchemy.exc.DBAPIError,)
    if not read:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        db_errors += (optuna.exceptions.StorageInternalError,)
    try:
        if read:
            cursors = EngineCursors(sqlalchemy.create_engine(url, **_engine_kwargs(url)))
            # Read through the driver's own cursor: its errors are the DB-API's, not SQLAlchemy's
            # (the except clause below reads db_errors when an error is raised, so this one counts).
            db_errors += (cursors.engine.dialect.loaded_dbapi.Error,)
            return _open_to_read(cursors, study_name)
        storage = optuna_storage(location, create)  # on a server made under the store's advisory lock
        study_id = storage.get_study_id_from_name(study_name)
        if create:
            _check_writes(location, storage)
        return Opened(study_id, _cursors_of(storage), storage, True)
    except ValueError as exc:
        if location.kind == "journal":  # a file of other lines (e.g. the sweep file itself): never a store
            _not_a_journal(location, exc)
        raise SweepError(f"store {url}: cannot open ({exc}); check the store: key of the sweep file") from None
    except (ImportError, OSError, sqlalchemy.exc.ArgumentError) as exc:  # no driver, a bad URL
        raise SweepError(f"store {url}: cannot open ({exc}); check the store: key of the sweep file") from None
    except db_errors as exc:
        if path is None and connection_failed(exc):
            _unreachable(location, exc)
        if path is None and permission_denied(exc):  # e.g. no right to create Optuna's tables
            _not_writable(location, exc)
        if create and not _not_a_database(exc):
            raise
        _unreadable(exc, url, path, study_name)
    except KeyError:
        if not create:
            raise SweepError(f"store {url}: no study {study_name!r} yet; run `ablate sweep` first") from None
        return _create_study(location, storage, study_name)


def _create_study(location: StoreLocation, storage: Any, study_name: str) -> Opened:
    import optuna

    try:
        study = optuna.create_study(study_name=study_name, storage=storage, load_if_exists=True)
    except Exception as exc:
        if permission_denied(exc):  # tables there, made by another user, but not this one's to write
            _not_writable(location, exc)
        raise
    study_id = storage.get_study_id_from_name(study.study_name)
    return Opened(study_id, _cursors_of(storage), storage, True)


@contextlib.contextmanager
def server_lock(location: StoreLocation, name: str) -> Iterator[None]:
    """Hold PostgreSQL's advisory lock named after the sweep while the block runs: what the file lock
    does beside a file store (two controllers starting at once on one database each enqueued the same
    trial: seen 1 run in 12 of the store tests). Other servers run the block unlocked: the claim's
    check for a lower-numbered twin is their guard. The lock is the session's, on a connection of its
    own, so it is released when that connection closes, even by a process killed mid-block."""
    url = location.url
    if not url.startswith("postgresql"):
        yield
        return
    import hashlib

    import sqlalchemy
    from sqlalchemy.pool import NullPool

    key = int.from_bytes(hashlib.blake2b(f"ablate:{name}".encode(), digest_size=8).digest(), "big", signed=True)
    engine = sqlalchemy.create_engine(url, poolclass=NullPool, **_engine_kwargs(url))
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_advisory_lock({key:d})")
            try:
                yield
            finally:
                conn.exec_driver_sql(f"SELECT pg_advisory_unlock({key:d})")
    finally:
        engine.dispose()


def _unreachable(location: StoreLocation, exc: BaseException) -> NoReturn:
    raise StoreUnreachable(
        f"store {location.shown}: cannot reach the database server ({_first_line(exc)}); check that it runs "
        "and accepts this URL (the store: key of the sweep file)"
    ) from None


# Optuna's tables a user that cannot insert into is refused (PostgreSQL): the first write would be a traceback
_UNWRITABLE = (
    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
    "AND table_name <> 'alembic_version' "
    "AND NOT has_table_privilege(quote_ident(table_schema) || '.' || quote_ident(table_name), 'INSERT, UPDATE')"
)


def _check_writes(location: StoreLocation, storage: Any) -> None:
    """A PostgreSQL user that may read a study's tables (another user made them) but not write them is
    refused when the store is opened to write, before the first trial is, in one line."""
    if not location.url.startswith("postgresql"):
        return
    import sqlalchemy

    with storage.engine.connect() as conn:
        tables = [row[0] for row in conn.execute(sqlalchemy.text(_UNWRITABLE))]
    if tables:
        _not_writable(location, f"permission denied to insert into {', '.join(sorted(tables))}")


def _not_writable(location: StoreLocation, exc: BaseException | str) -> NoReturn:
    raise SweepError(
        f"store {location.shown}: the database user may not write there ({_first_line(exc)}); grant it the right "
        "to create and write tables in that database (or use a user that has it)"
    ) from None


def _first_line(exc: BaseException | str) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _unreadable(exc: BaseException, url: str, path: Path | None, study_name: str) -> NoReturn:
    """One line for a store that cannot be read: not a database, or no study (yet)."""
    if _not_a_database(exc):  # e.g. store: sqlite:///sweep.yaml - the same on every try: one line, now
        raise StoreUnreadable(
            f"store {url}: {path or 'the file'} is not a SQLite database; point the sweep file's store: at a "
            "new or existing .db file (or leave store: sqlite for one beside the sweep file)"
        ) from None
    # Opened to read: a file without Optuna's tables (yet), e.g. while the first sweep makes them.
    why = str(getattr(exc, "orig", None) or exc).splitlines()[0]
    raise SweepError(f"store {url}: no study {study_name!r} yet ({why}); run `ablate sweep` first") from None


def _no_tables(exc: BaseException, location: StoreLocation) -> list[str]:
    """A database without Optuna's tables (yet) holds no study; a file that is not a database is one line."""
    if _not_a_database(exc):
        _unreadable(exc, location.url, location.file, "")
    return []


def _not_a_journal(location: StoreLocation, exc: BaseException) -> NoReturn:
    raise StoreUnreadable(
        f"store {location.url}: {location.file} is not an Optuna journal file ({exc}); point the sweep file's "
        "store: at a new or existing journal file"
    ) from None


def _not_a_database(exc: BaseException) -> bool:
    """SQLite's answer when the store's file holds something else (a YAML file, a journal, text)."""
    return "file is not a database" in str(getattr(exc, "orig", None) or exc)


def _open_to_read(cursors: Cursors, study_name: str) -> Opened:
    found = study_ids(cursors).get(study_name)
    if found is None:
        raise KeyError(study_name)
    return Opened(found, cursors, None, False)


def _cursors_of(storage: Any) -> Cursors | None:
    engine = getattr(storage, "engine", None)
    return EngineCursors(engine) if engine is not None else None


def optuna_storage(location: StoreLocation, create: bool) -> Any:
    """Optuna's storage for ``location``; without ``create`` its table creation and schema check are skipped."""
    import optuna

    if location.kind == "journal":
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        return JournalStorage(JournalFileBackend(str(location.file)))
    url = location.url
    return optuna.storages.RDBStorage(
        url, engine_kwargs=_engine_kwargs(url), skip_compatibility_check=not create, skip_table_creation=not create
    )


def read_study_attrs(engine: Cursors, study_id: int) -> dict[str, Any]:
    """The study's user attributes, read with SQL (what ``get_study_user_attrs`` gives)."""
    import json

    return {key: json.loads(value) for key, value in rows(engine, _STUDY_ATTRS.format(study=int(study_id)))}


def _engine_kwargs(url: str) -> dict[str, Any]:
    """SQLite: wait out another process's lock. PostgreSQL: give up connecting after CONNECT_TIMEOUT_S,
    let the server cancel a statement after STATEMENT_TIMEOUT_S, and test a pooled connection before
    use (a server restarted mid-sweep leaves every pooled connection dead)."""
    if url.startswith("sqlite"):
        return {"connect_args": {"timeout": BUSY_TIMEOUT_S}}
    if url.startswith("postgresql"):
        options = f"-c statement_timeout={STATEMENT_TIMEOUT_S * 1000}"
        return {"connect_args": {"connect_timeout": CONNECT_TIMEOUT_S, "options": options}, "pool_pre_ping": True}
    return {}
