"""How a sweep's store is opened: to write, through Optuna's storage with its checks; to read, with SQL.

- **To write** (``ablate sweep``, a retry): Optuna's storage for the URL, which creates its tables
  when they are missing and checks their schema version against the installed Optuna; the study is
  created if needed. A worker's claim and beats use the storage without those checks: the
  controller that started it made and checked the store.
- **To read** (``status``, ``table``, the report, ``--dry-run``'s note of recorded overrides): on a
  SQL store, a SQLAlchemy engine alone and the study's id from its table. Optuna's storage object
  took 0.45 s to build (its schema-version check imports alembic) against 0.1 s for the engine; it is
  made on first use, when a read goes through Optuna's API or something is written (skipping its
  table creation and schema check: the study exists, a write command opens the store to write).

A journal file is always opened through Optuna (it has no tables). Errors become one-line
:class:`~ablate.sweep.file.errors.SweepError`\\ s: a file without Optuna's tables reads as "no study yet".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ablate.sweep.file.errors import StoreUnreadable, SweepError
from ablate.sweep.store.location import file_of

_STUDY_ID = "SELECT study_id FROM studies WHERE study_name = :name"
_STUDY_ATTRS = "SELECT key, value_json FROM study_user_attributes WHERE study_id = :study"


@dataclass
class Opened:
    study_id: int
    engine: Any  # SQLAlchemy engine of a SQL store (None: a journal file)
    storage: Any  # Optuna's storage (None until needed, on a store opened to read)
    checked: bool  # opened to write: Optuna created its tables and checked their schema


def open_store(url: str, study_name: str, create: bool) -> Opened:
    """Open (with ``create``: make) the study of a sweep in the store at ``url``. Reading a SQL store
    needs SQLAlchemy only: Optuna (0.19 s to import) loads to write or to read a journal."""
    import sqlalchemy.exc

    read = not create and not url.startswith("journal:")
    db_errors: tuple[type[BaseException], ...] = (sqlalchemy.exc.DBAPIError,)
    if not read:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        db_errors += (optuna.exceptions.StorageInternalError,)
    path = file_of(url)
    if path is not None and not create and not path.exists():
        raise SweepError(f"store {path}: does not exist yet; run `ablate sweep` first")
    if path is not None and create:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if read:
            return _open_to_read(url, study_name)
        storage = optuna_storage(url, create)
        study_id = storage.get_study_id_from_name(study_name)
        return Opened(study_id, getattr(storage, "engine", None), storage, True)
    except (ImportError, ValueError, OSError, sqlalchemy.exc.ArgumentError) as exc:  # no driver, a bad URL
        raise SweepError(f"store {url}: cannot open ({exc}); check the store: key of the sweep file") from None
    except db_errors as exc:
        if _not_a_database(exc):  # e.g. store: sqlite:///sweep.yaml - the same on every try: one line, now
            raise StoreUnreadable(
                f"store {url}: {path or 'the file'} is not a SQLite database; point the sweep file's store: at a "
                "new or existing .db file (or leave store: sqlite for one beside the sweep file)"
            ) from None
        if create:
            raise
        # Opened to read: a file without Optuna's tables (yet), e.g. while the first sweep makes them.
        why = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise SweepError(f"store {url}: no study {study_name!r} yet ({why}); run `ablate sweep` first") from None
    except KeyError:
        if not create:
            raise SweepError(f"store {url}: no study {study_name!r} yet; run `ablate sweep` first") from None
        import optuna

        study = optuna.create_study(study_name=study_name, storage=storage, load_if_exists=True)
        study_id = storage.get_study_id_from_name(study.study_name)
        return Opened(study_id, getattr(storage, "engine", None), storage, True)


def _not_a_database(exc: BaseException) -> bool:
    """SQLite's answer when the store's file holds something else (a YAML file, a journal, text)."""
    return "file is not a database" in str(getattr(exc, "orig", None) or exc)


def _open_to_read(url: str, study_name: str) -> Opened:
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, **_engine_kwargs(url))
    with engine.connect() as conn:
        found = conn.execute(sqlalchemy.text(_STUDY_ID), {"name": study_name}).scalar()
    if found is None:
        raise KeyError(study_name)
    return Opened(int(found), engine, None, False)


def optuna_storage(url: str, create: bool) -> Any:
    """Optuna's storage for ``url``; without ``create`` its table creation and schema check are skipped."""
    import optuna

    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        return JournalStorage(JournalFileBackend(str(file_of(url))))
    return optuna.storages.RDBStorage(
        url, engine_kwargs=_engine_kwargs(url), skip_compatibility_check=not create, skip_table_creation=not create
    )


def read_study_attrs(engine: Any, study_id: int) -> dict[str, Any]:
    """The study's user attributes, read with SQL (what ``get_study_user_attrs`` gives)."""
    import json

    import sqlalchemy

    with engine.connect() as conn:
        rows = conn.execute(sqlalchemy.text(_STUDY_ATTRS), {"study": study_id}).all()
    return {key: json.loads(value) for key, value in rows}


def _engine_kwargs(url: str) -> dict[str, Any]:
    return {"connect_args": {"timeout": 30}} if url.startswith("sqlite") else {}
