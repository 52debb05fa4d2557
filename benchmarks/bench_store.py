"""Concurrent workers against each store: how many a SQLite file, a journal file and PostgreSQL hold.

    python benchmarks/bench_store.py [--workers 8 64 256] [--stores sqlite journal postgres] [--beats 3]
                                     [--postgres postgresql+psycopg://user@host:port] [--out FILE.json]

For each store and each N: a sweep of 2N trials (at least 64) is enqueued in a fresh store, then N worker processes
(forked from this one after the imports, so that start-up is not measured) wait at a common start and
each works through its list the way a worker does: ``SweepStore.claim``, ``beat`` x ``--beats``,
``finish`` with metrics of its own. Every trial is on the lists of two workers, as when two controllers
launch the same trial, so each trial is claimed twice at nearly the same time and must be finished once.

Printed per run: the wall time from the start to the last finish, store operations per second, the
p50 / p99 of a claim (won or lost) and of a finish, errors (exceptions a worker caught), and the check:
trials left unfinished (lost), trials finished twice, trials whose metrics are not their winner's. Ratios
are against SQLite at the same N, measured in the same run. PostgreSQL is a server this script starts
with fsync on (``--postgres``: a running one), so that its commits are as durable as SQLite's.
Asserts nothing; a clean run is 0 errors, 0 lost, 0 double.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "sweep"))


def _enqueue(folder: Path, store: str, n_trials: int) -> tuple[str, str, list[int]]:
    """A sweep of one row at ``n_trials`` seeds in a fresh store: (url, study, storage ids)."""
    from sweep_harness import TINY_EXPERIMENT

    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.store.store import SweepStore

    (folder / "exp.yaml").write_text(yaml.safe_dump(TINY_EXPERIMENT))
    spec = {"name": "bench", "experiment": "exp.yaml", "seeds": list(range(1, n_trials + 1)), "store": store}
    spec["rows"] = [{"name": "base", "group": "base"}]
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(spec))
    sweep = load_sweep(path)
    st = SweepStore.for_sweep(sweep)
    st.sync(sweep)
    return st.url, st.study_name, [a.storage_id for a in st.attempts()]


def _worker(url: str, study: str, ids: list[int], me: int, beats: int, go: Any, out: Any) -> None:
    """Claim, beat and finish each trial of ``ids``; put (me, [(op, seconds, ok)], [errors]) on ``out``."""
    from ablate.sweep.store.store import SweepStore

    ops: list[tuple[str, float, bool]] = []
    errors: list[str] = []
    try:
        st = SweepStore(url, study)
        st.attempts()  # connected before the start
    except Exception as exc:  # noqa: BLE001 - reported with the run
        out.put((me, ops, [f"open: {type(exc).__name__}: {exc}"]))
        return
    out.put(("ready", me))
    go.wait()
    for sid in ids:
        try:
            t = time.perf_counter()
            won = st.claim(sid, f"w{me}")
            ops.append(("claim", time.perf_counter() - t, won))
            if not won:
                continue
            for _ in range(beats):
                t = time.perf_counter()
                st.beat(sid)
                ops.append(("beat", time.perf_counter() - t, True))
            t = time.perf_counter()
            st.finish(sid, {"val/ppl": float(sid), "worker": me})
            ops.append(("finish", time.perf_counter() - t, True))
        except Exception as exc:  # noqa: BLE001 - counted: an error is a result of this benchmark
            errors.append(f"trial {sid}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            if len(errors) == 1:
                traceback.print_exc(file=sys.stderr)
    out.put((me, ops, errors))


def _check(url: str, study: str, ids: list[int], ops_by_worker: dict[int, list]) -> dict[str, int]:
    """Lost (not COMPLETE), double (two finishes recorded as done), wrong (metrics not the winner's)."""
    from ablate.sweep.store.store import SweepStore

    st = SweepStore(url, study)
    by_id = {a.storage_id: a for a in st.attempts()}
    lost = sum(1 for sid in ids if by_id[sid].state != "COMPLETE")
    finishes = sum(1 for ops in ops_by_worker.values() for op, _, ok in ops if op == "finish" and ok)
    wrong = sum(
        1
        for sid in ids
        if by_id[sid].state == "COMPLETE" and (by_id[sid].attrs.get("metrics") or {}).get("val/ppl") != float(sid)
    )
    return {"lost": lost, "double": max(0, finishes - (len(ids) - lost)), "wrong": wrong}


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def run_one(kind: str, store: str, n: int, beats: int) -> dict[str, Any]:
    """One store at N workers: enqueue max(2N, 64) trials, start N forked workers at once, measure, check."""
    with tempfile.TemporaryDirectory(prefix="ablate-bench-store-") as tmp:
        url, study, ids = _enqueue(Path(tmp), store, max(2 * n, 64))
        ctx = mp.get_context("fork")
        go, out = ctx.Event(), ctx.Queue()
        lists = [ids[i::n] + ids[(i + 1) % n :: n] for i in range(n)]  # each trial on two lists
        for lst in lists:
            random.Random(len(lst)).shuffle(lst)
        procs = [ctx.Process(target=_worker, args=(url, study, lists[i], i, beats, go, out)) for i in range(n)]
        for p in procs:
            p.start()
        results: dict[int, list] = {}
        errors: list[str] = []
        ready = 0
        while ready < n:
            msg = out.get(timeout=600)
            if msg[0] == "ready":
                ready += 1
            else:  # a worker that could not open the store
                results[msg[0]], errors = msg[1], errors + msg[2]
                ready += 1
        started = time.perf_counter()
        go.set()
        while len(results) < n:
            me, ops, errs = out.get(timeout=1800)
            results[me], errors = ops, errors + errs
        wall = time.perf_counter() - started
        for p in procs:
            p.join()
        every = [op for ops in results.values() for op in ops]
        row = {"store": kind, "workers": n, "trials": len(ids), "wall_s": wall}
        row["ops_per_s"] = len(every) / wall
        row["claim_p50_ms"] = 1e3 * _pct([s for op, s, _ in every if op == "claim"], 0.5)
        row["claim_p99_ms"] = 1e3 * _pct([s for op, s, _ in every if op == "claim"], 0.99)
        row["finish_p50_ms"] = 1e3 * _pct([s for op, s, _ in every if op == "finish"], 0.5)
        row["finish_p99_ms"] = 1e3 * _pct([s for op, s, _ in every if op == "finish"], 0.99)
        row["errors"] = len(errors)
        row["first_error"] = errors[0] if errors else ""
        row.update(_check(url, study, ids, results))
        return row


def _store_spec(kind: str, server: str | None) -> str:
    if kind == "sqlite":
        return "sqlite"
    if kind == "journal":
        return "journal:bench.journal"
    import pg_server

    return pg_server.new_database(server)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "journal", "postgres"])
    parser.add_argument("--beats", type=int, default=3)
    parser.add_argument("--postgres", help="a running server's URL (no database); default: start one here")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import optuna
    import sqlalchemy  # noqa: F401

    import ablate.sweep.store.store  # noqa: F401 - imported once, before the workers fork

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    server = None
    if "postgres" in args.stores and not args.postgres:
        import pg_server

        server = pg_server.start_server(max_connections=2 * max(args.workers) + 50, fsync=True)
    rows = []
    try:
        for n in args.workers:
            for kind in args.stores:
                spec = _store_spec(kind, args.postgres or (server.url if server else None))
                row = run_one(kind, spec, n, args.beats)
                rows.append(row)
                print(_line(row, rows), flush=True)
    finally:
        if server is not None:
            server.remove()
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


def _line(row: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    ref = next((r for r in rows if r["store"] == "sqlite" and r["workers"] == row["workers"]), None)
    ratio = f" ({row['ops_per_s'] / ref['ops_per_s']:.2f}x SQLite's ops/s)" if ref and ref is not row else ""
    return (
        f"{row['store']:>10} N={row['workers']:<4} {row['trials']} trials in {row['wall_s']:.1f} s: "
        f"{row['ops_per_s']:.0f} ops/s{ratio}; claim p50/p99 {row['claim_p50_ms']:.0f}/{row['claim_p99_ms']:.0f} ms, "
        f"finish p50/p99 {row['finish_p50_ms']:.0f}/{row['finish_p99_ms']:.0f} ms; errors {row['errors']}, "
        f"lost {row['lost']}, double {row['double']}, wrong {row['wrong']}"
        + (f"; first error: {row['first_error']}" if row["first_error"] else "")
    )


if __name__ == "__main__":
    main()
