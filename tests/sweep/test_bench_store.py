"""benchmarks/bench_store.py in a small form: 4 workers on each store claim every trial twice at once and
finish each once with its winner's metrics (the check the benchmark prints at 8, 64 and 256 workers)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_store.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_store", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", ["sqlite", "journal", "postgres"])
def test_racing_workers_finish_every_trial_once_on_each_store(kind, request) -> None:
    bench = _bench()
    server = request.getfixturevalue("postgres_server") if kind == "postgres" else None
    row = bench.run_one(kind, bench._store_spec(kind, server), n=4, beats=1)
    assert row["trials"] == 64 and row["errors"] == 0, row["first_error"]
    assert (row["lost"], row["double"], row["wrong"]) == (0, 0, 0), row
