"""A PostgreSQL user the server lets in but not write: `ablate sweep` says so in one line, before any trial
is written, whether the user may not create Optuna's tables or may only read the tables another user made;
the error translation is unit-tested too, for machines without a server."""

from __future__ import annotations

import uuid

from sweep_harness import one_line_error

from ablate.cli import main
from ablate.errors import connection_failed, permission_denied

ROWS = [{"name": "base", "group": "base"}]


def test_permission_denied_is_found_through_sqlalchemys_and_optunas_wrappers() -> None:
    InsufficientPrivilege = type("InsufficientPrivilege", (Exception,), {})  # noqa: N806 - the driver's name
    Wrapped = type("ProgrammingError", (Exception,), {})  # noqa: N806
    by_sqlalchemy = Wrapped("permission denied for schema public")
    by_sqlalchemy.orig = InsufficientPrivilege("permission denied for schema public")
    by_optuna = RuntimeError("storage")
    by_optuna.__cause__ = by_sqlalchemy
    assert permission_denied(by_sqlalchemy) and permission_denied(by_optuna)
    assert not connection_failed(by_optuna) and not permission_denied(ValueError("x"))


def _role(db_url: str, *grants: str) -> str:
    """A login role on ``db_url``'s database with ``grants`` (SQL), and the URL that logs in as it."""
    import psycopg

    name = f"r_{uuid.uuid4().hex[:8]}"
    head, _, rest = db_url.partition("://")
    with psycopg.connect(f"postgresql://{rest}", autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        for grant in grants:
            conn.execute(grant.format(role=name))
    return f"{head}://{name}@{rest.split('@', 1)[1]}"


def test_a_user_that_cannot_create_the_tables_is_one_line(write_sweep, fake_trainer, postgres_db, capsys) -> None:
    path = write_sweep(rows=ROWS, store=_role(postgres_db))
    assert main(["sweep", str(path)]) == 2
    err = one_line_error(capsys)
    assert "the database user may not write there (permission denied for schema public)" in err


def test_a_user_that_may_only_read_is_one_line_before_any_trial(write_sweep, fake_trainer, postgres_db, capsys) -> None:
    path = write_sweep(rows=ROWS, store=postgres_db)
    assert main(["sweep", str(path)]) == 0  # the owner made the tables and ran the sweep
    capsys.readouterr()
    reader = _role(postgres_db, "GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    more = write_sweep(rows=[*ROWS, {"name": "wide", "group": "A", "overrides": ["model.d_ff=48"]}], store=reader)
    assert main(["sweep", str(more)]) == 2
    err = one_line_error(capsys)
    assert "the database user may not write there (permission denied to insert into " in err
    assert main(["status", str(more)]) == 0  # reading is all it may do, and it still can
