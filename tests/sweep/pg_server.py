"""A real PostgreSQL server for the tests, started in a throwaway folder on 127.0.0.1.

``initdb`` and ``pg_ctl`` come from PATH or from the Debian package's folder (``/usr/lib/postgresql/N/bin``).
As root the server runs as the ``postgres`` user (PostgreSQL refuses to run as root); otherwise as
the current user. Authentication is ``trust`` on 127.0.0.1 only, fsync is off: a test server holds
nothing worth keeping. ``.ci/run`` starts one for the whole run and exports its URL in
``ABLATE_TEST_POSTGRES``; without it each test process starts its own (about 2 s).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

ENV = "ABLATE_TEST_POSTGRES"  # a server URL without a database (postgresql+psycopg://user@host:port)


def bindir() -> Path | None:
    """The folder of initdb and pg_ctl, or None where PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def why_not() -> str | None:
    """Why no test server can start here (None: one can)."""
    if os.environ.get(ENV):
        return None
    if bindir() is None:
        return "PostgreSQL is not installed (no initdb): apt-get install postgresql"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return 'psycopg is not installed: pip install -e ".[postgres]"'
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running test server: ``url`` names no database; :meth:`new_database` makes one."""

    folder: Path
    port: int
    user: str = "ablate"
    max_connections: int = 300
    fsync: bool = False  # a test server holds nothing worth keeping; the store benchmark turns it on

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        tool = str(bindir() / args[0])  # type: ignore[operator]
        return subprocess.run([*as_postgres, tool, *args[1:]], capture_output=True, text=True, timeout=120)

    def start(self) -> Server:
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        data = self.folder / "data"
        if not data.exists():
            done = self._run("initdb", "-D", str(data), "-A", "trust", "-U", self.user, "--no-sync", "-E", "UTF8")
            if done.returncode:
                raise RuntimeError(f"initdb failed: {done.stderr.strip()[-500:]}")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        options += f" -c max_connections={self.max_connections}"
        options += "" if self.fsync else " -c fsync=off"
        log = self.folder / "server.log"
        done = self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(log), "-w", "-t", "60", "start")
        if done.returncode:
            raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()[-500:]}")
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", mode, "-w", "stop")

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


def start_server(max_connections: int = 300, fsync: bool = False) -> Server:
    folder = Path(tempfile.mkdtemp(prefix="ablate-pg-"))
    folder.chmod(0o755)
    return Server(folder, free_port(), max_connections=max_connections, fsync=fsync).start()


def new_database(server_url: str) -> str:
    """Create an empty database on the server and return its URL (one per test: nothing shared)."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    plain = server_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(f"{plain}/postgres", autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server_url}/{name}"


if __name__ == "__main__":  # .ci/run: start one server and print its URL; `stop FOLDER` stops it
    import sys

    if sys.argv[1:2] == ["stop"]:
        Server(Path(sys.argv[2]), 0).remove()
    else:
        server = start_server()
        print(server.url, server.folder)
