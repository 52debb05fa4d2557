"""Fixtures of the sweep tests: a tiny experiment, sweep files in tmp dirs, a fake trainer.

Workers are real subprocesses; the ``fake_trainer`` fixture sets every launcher's ``trial_fn`` to
``fake_trainer.py:train``, which follows the train() contract in milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from sweep_harness import TINY_EXPERIMENT, use_fake_trainer


@pytest.fixture
def fake_trainer(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process controllers (`ablate sweep` through cli.main) start workers that use the fake trainer."""
    use_fake_trainer(monkeypatch.setattr)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("WANDB_SILENT", "true")


@pytest.fixture
def write_sweep(tmp_path: Path) -> Callable[..., Path]:
    """write_sweep(rows=[...], fake={row: {mode, step_s, crash_once}}, **top_level_keys) -> path of a
    sweep file beside a tiny experiment (``fake`` goes to fake.json, read by the fake trainer)."""
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(TINY_EXPERIMENT))

    def write(
        rows: list[dict[str, Any]] | None = None,
        filename: str = "sweep.yaml",
        fake: dict[str, dict[str, Any]] | None = None,
        **keys: Any,
    ) -> Path:
        if fake is not None:
            (tmp_path / "fake.json").write_text(json.dumps(fake))
        data: dict[str, Any] = {
            "name": "t",
            "experiment": "exp.yaml",
            "seeds": [1],
            "launcher": {"name": "local", "slots": 2, "poll_s": 0.2},
            "heartbeat": {"interval_s": 1, "grace_s": 6},
            "wandb": {"mode": "disabled"},
            "max_retries": 2,
        }
        data.update(keys)
        data["rows"] = rows if rows is not None else [{"name": "base", "group": "base", "paper": "base"}]
        path = tmp_path / filename
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """Skip unless SLURM's client tools are here and a controller answers (the shared local cluster)."""
    import shutil
    import subprocess

    if shutil.which("sbatch") is None:
        pytest.skip("sbatch is not on PATH: no SLURM client tools here")
    probe = subprocess.run(["sinfo", "-h"], capture_output=True, text=True)
    if probe.returncode != 0 or not probe.stdout.strip():
        pytest.skip(f"sinfo failed ({probe.stderr.strip()[:120]}): no reachable slurmctld; export SLURM_CONF")


@pytest.fixture(scope="session")
def ray_cluster() -> Any:
    """A real local Ray cluster (``ray start --head``, 4 logical CPUs, no GPU), stopped after the tests;
    one already running here (``address: auto`` finds it) is used as it is. Skipped without Ray."""
    import shutil
    import subprocess
    import sys

    pytest.importorskip("ray.job_submission", reason='Ray is not installed: pip install -e ".[ray]"')
    from ablate.errors import SweepError
    from ablate.sweep.launch.ray_jobs import job_client

    try:
        job_client("auto", "test")
        yield "auto"
        return
    except SweepError:
        pass
    ray = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    cmd = [ray, "start", "--head", "--num-cpus", "4", "--num-gpus", "0", "--disable-usage-stats"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.skip(f"ray start failed: {(done.stderr.strip().splitlines() or ['no output'])[-1][:160]}")
    try:
        yield "auto"
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def postgres_server() -> Any:
    """The URL (no database) of a real PostgreSQL server: the one ``.ci/run`` started (``$ABLATE_TEST_POSTGRES``)
    or one started for this test process in a throwaway folder, removed after it. Skipped with the reason
    where PostgreSQL or psycopg is missing."""
    import os

    import pg_server

    why = pg_server.why_not()
    if why:
        pytest.skip(why)
    if os.environ.get(pg_server.ENV):
        yield os.environ[pg_server.ENV]
        return
    server = pg_server.start_server()
    try:
        yield server.url
    finally:
        server.remove()


@pytest.fixture
def postgres_db(postgres_server: str) -> str:
    """The URL of a new, empty database on the test server (one per test)."""
    import pg_server

    return pg_server.new_database(postgres_server)


@pytest.fixture
def store_for(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """store_for(kind) -> the sweep file's ``store:`` for a parametrized kind; ``"postgres"`` becomes a
    new database on the test server."""
    return lambda kind: request.getfixturevalue("postgres_db") if kind == "postgres" else kind
