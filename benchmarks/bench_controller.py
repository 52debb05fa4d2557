"""The controller at scale: one pass, status, table and dry run on stores of 100, 1,000 and 10,000 trials.

    python benchmarks/bench_controller.py [--sizes 100 1000 10000] [--repeats 5] [--keep DIR] [--share-s 60]

For each size it writes a sweep of one row at that many seeds over the sweep tests' tiny experiment,
enqueues it in a real SQLite store and sets the attempts as a long sweep has them: 60% finished with
metrics, 10% failed (and retried once: a second attempt waiting), 10% running with a fresh heartbeat,
the rest waiting. Then, in this process and the same store:

- **one controller pass** (poll, reap, retry, start, the progress view; ``start`` claims nothing here)
  with the store read as ablate now does (finished attempts kept, one read per pass:
  ``ablate.sweep.store.reads``) against the previous way, every call reading every attempt (the same code
  with the cache switched off: the reference, measured in the same run); the median of ``--repeats``
  passes after the first;
- ``ablate status``, ``ablate table --format json`` and ``ablate sweep --dry-run`` as a user runs them
  (fresh processes, imports included; median of ``--repeats``).

First, the controller's CPU share over ``--share-s`` seconds of a real ``ablate sweep`` whose 2 trials
(stand-ins) are running. Prints measured times and the ratios of the pass; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "sweep"))


class _EveryCallReads:
    """The reference: every read reads every attempt (what the controller did before the reader)."""

    full_reads = 0

    def __init__(self, reader) -> None:
        self._reader = reader

    def read(self, storage, study_id, engine=None):
        self.full_reads += 1
        return self._reader._read_all(storage() if callable(storage) else storage, study_id)

    def memo(self, key, owner, build):
        return build()  # nothing kept: every trial view built again, as before

    def invalidate(self) -> None:
        pass

    def pass_snapshot(self):
        import contextlib

        return contextlib.nullcontext()


def build_store(folder: Path, n: int, rows: bool = False) -> Path:
    """A store of ``n`` trials: one row at ``n`` seeds, or (``rows``) a base row and a grid of ``n // 2 - 1``
    rows over model.d_ff, at 2 seeds each (the table's work grows with its rows)."""
    from sweep_harness import TINY_EXPERIMENT

    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.store.store import SweepStore

    (folder / "exp.yaml").write_text(yaml.safe_dump(TINY_EXPERIMENT))
    name = f"r{n}" if rows else f"n{n}"
    spec = {"name": name, "experiment": "exp.yaml", "seeds": list(range(1, n + 1)), "wandb": {"mode": "disabled"}}
    spec["rows"] = [{"name": "base", "group": "base", "paper": "base"}]
    if rows:
        spec["seeds"] = [1, 2]
        spec["rows"].append({"name": "ff", "group": "ff", "grid": {"model.d_ff": list(range(40, 40 + n // 2 - 1))}})
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    store.sync(_Empty(sweep))  # opens the store; the trials are created below, without an fsync each
    _no_fsync(store.storage.engine)
    store.sync(sweep)
    _set_states(store, store.attempts())
    return path


class _Empty:
    """The sweep with no trials: ``sync`` then only creates the study and records its attributes."""

    def __init__(self, sweep) -> None:
        self._sweep = sweep
        self.trials = []

    def __getattr__(self, name):
        return getattr(self._sweep, name)


def _no_fsync(engine) -> None:
    """SQLite without fsync while the synthetic store is written (10,000 trials x 8 commits took 25
    minutes under load with it; nothing here needs to survive a power cut). Reads are unchanged."""
    import sqlalchemy

    sqlalchemy.event.listen(engine, "connect", lambda conn, _: conn.execute("PRAGMA synchronous=OFF"))
    engine.dispose()  # pooled connections were opened without it


def _set_states(store, attempts) -> None:
    """Straight through Optuna's storage (the store's own claim reads the store to check for twins: fine
    once, hours for 8,000 claims of a 10,000-trial store)."""
    from optuna.trial import TrialState

    from ablate.sweep.store.state import IDENTITY_ATTRS

    st, now = store.storage, time.time()
    for i, a in enumerate(attempts):
        share = i / len(attempts)
        if share >= 0.8:
            continue  # waiting
        for key, value in {"heartbeat": now, "token": f"bench:{i}", "host": "bench", "pid": 1}.items():
            st.set_trial_user_attr(a.storage_id, key, value)
        st.set_trial_state_values(a.storage_id, TrialState.RUNNING)
        if share < 0.6:
            metrics = {"val/ppl": 5.0 + i % 7, "val/bleu": 20.0, "params": 1000, "step": 6}
            st.set_trial_user_attr(a.storage_id, "metrics", metrics)
            st.set_trial_state_values(a.storage_id, TrialState.COMPLETE, values=[metrics["val/ppl"]])
        elif share < 0.7:
            st.set_trial_user_attr(a.storage_id, "failure", "RuntimeError: stand-in failure")
            st.set_trial_user_attr(a.storage_id, "failure_kind", "crashed")
            st.set_trial_state_values(a.storage_id, TrialState.FAIL)
            store._create({k: v for k, v in a.attrs.items() if k in IDENTITY_ATTRS}, attempt=1)  # its retry


def pass_times(path: Path, repeats: int, cached: bool) -> tuple[float, int]:
    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.launch import LAUNCHERS
    from ablate.sweep.launch.progress import ProgressView
    from ablate.sweep.store.store import SweepStore

    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    if not cached:
        store.reader = _EveryCallReads(store.reader)
    launcher = LAUNCHERS.get("local")(sweep, store)
    launcher.start = lambda waiting: None  # nothing is launched: the pass's reading and deciding is measured
    launcher.alive = lambda attempt: True  # the stand-in running attempts count as alive
    view = ProgressView(sweep, live=False)
    stop = type("Stop", (), {"check": lambda self: None})()
    times = []
    for _ in range(repeats + 1):
        t = time.perf_counter()
        with store.reader.pass_snapshot(), contextlib.redirect_stdout(io.StringIO()):  # the view's lines
            launcher._pass(view, stop)
        times.append(time.perf_counter() - t)
    reads = store.reader.full_reads
    return statistics.median(times[1:]), reads


def command_time(args: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ablate", *args], capture_output=True, check=False)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def controller_share(folder: Path, seconds: float) -> float:
    """The CPU share of one core that ``ablate sweep`` (piped output, as under nohup or CI) takes over
    ``seconds`` while its 2 stand-in trials run (the sweep tests' fake trainer, sleeping through its
    steps): CPU time from /proc, after 15 s of start-up."""
    from sweep_harness import TINY_EXPERIMENT, ablate_cmd, fake_env

    (folder / "exp.yaml").write_text(yaml.safe_dump(TINY_EXPERIMENT))
    rows = [{"name": "a", "group": "A"}, {"name": "b", "group": "A", "overrides": ["model.d_ff=48"]}]
    spec = {"name": "share", "experiment": "exp.yaml", "seeds": [1], "wandb": {"mode": "disabled"}, "rows": rows}
    spec["launcher"] = {"name": "local", "slots": 2}
    path = folder / "share.yaml"
    path.write_text(yaml.safe_dump(spec))
    steps = TINY_EXPERIMENT["train"]["max_steps"]
    (folder / "fake.json").write_text(json.dumps({"*": {"step_s": (seconds + 45) / steps}}))
    cmd = ablate_cmd("sweep", str(path))
    proc = subprocess.Popen(cmd, env=fake_env(), cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(15)
        start = _cpu_s(proc.pid)
        time.sleep(seconds)
        return (_cpu_s(proc.pid) - start) / seconds
    finally:
        proc.send_signal(signal.SIGINT)  # the trials are stopped, resumable; nothing else to keep
        proc.wait(timeout=120)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc/<pid>/stat (fields 14 and 15, in ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--keep", default="", help="keep the stores in this folder and reuse them in later runs")
    p.add_argument("--reference-up-to", type=int, default=1000, help="the every-call reference up to this size")
    p.add_argument("--share-s", type=float, default=60.0, help="seconds of the CPU-share measurement (0: skip)")
    args = p.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    if args.share_s:
        with tempfile.TemporaryDirectory() as tmp:
            share = controller_share(Path(tmp), args.share_s)
        print(f"controller CPU over {args.share_s:.0f} s, 2 stand-in trials running: {share:.2%} of a core", flush=True)
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            folder = Path(args.keep) / str(n) if args.keep else Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"n{n}.yaml"
            if not (folder / ".ablate" / f"n{n}.db").exists():
                path = build_store(folder, n)
            built = time.perf_counter() - t0
            new, new_reads = pass_times(path, args.repeats, cached=True)
            old, old_reads = pass_times(path, args.repeats, cached=False) if n <= args.reference_up_to else (0, 0)
            status = command_time(["status", str(path)], args.repeats)
            table = command_time(["table", str(path), "--format", "json"], args.repeats)
            dry = command_time(["sweep", str(path), "--dry-run", "--max-trials", str(n)], args.repeats)
            print(
                f"{n:>6} trials (store built in {built:.0f} s): pass {new * 1e3:.1f} ms"
                + (f", every call reading everything {old * 1e3:.1f} ms ({old / new:.1f}x)" if old else "")
                + f" (full reads {new_reads} vs {old_reads}); "
                f"status {status:.2f} s, table json {table:.2f} s, dry run {dry:.2f} s; "
                f"load {os.getloadavg()[0]:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
