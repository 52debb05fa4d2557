"""The controller at scale: one pass, status, table and dry run on stores of 100, 1,000 and 10,000 trials.

    python benchmarks/bench_controller.py [--sizes 100 1000 10000] [--repeats 5]

For each size it writes a sweep of one row at that many seeds over the sweep tests' tiny experiment,
enqueues it in a real SQLite store and sets the attempts as a long sweep has them: 60% finished with
metrics, 10% failed (and retried once: a second attempt waiting), 10% running with a fresh heartbeat,
the rest waiting. Then, in this process and the same store:

- **one controller pass** (poll, reap, retry, start, the progress view; ``start`` claims nothing here)
  with the store read as ablate now does (finished attempts kept, one read per pass:
  ``ablate.sweep.reads``) against the previous way, every call reading every attempt (the same code
  with the cache switched off: the reference, measured in the same run); the median of ``--repeats``
  passes after the first;
- ``ablate status``, ``ablate table --format json`` and ``ablate sweep --dry-run`` as a user runs them
  (fresh processes, imports included; median of ``--repeats``).

Prints measured times and the ratios of the pass; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
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

    def read(self, storage, study_id):
        self.full_reads += 1
        return self._reader._read_all(storage, study_id)

    def invalidate(self) -> None:
        pass

    def pass_snapshot(self):
        import contextlib

        return contextlib.nullcontext()


def build_store(folder: Path, n: int) -> Path:
    from sweep_harness import TINY_EXPERIMENT

    from ablate.sweep.spec import load_sweep
    from ablate.sweep.store import SweepStore

    (folder / "exp.yaml").write_text(yaml.safe_dump(TINY_EXPERIMENT))
    spec = {"name": f"n{n}", "experiment": "exp.yaml", "seeds": list(range(1, n + 1)), "wandb": {"mode": "disabled"}}
    spec["rows"] = [{"name": "base", "group": "base", "paper": "base"}]
    path = folder / f"n{n}.yaml"
    path.write_text(yaml.safe_dump(spec))
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    _set_states(store, store.attempts())
    return path


def _set_states(store, attempts) -> None:
    """Straight through Optuna's storage (the store's own claim reads the store to check for twins: fine
    once, hours for 8,000 claims of a 10,000-trial store)."""
    from optuna.trial import TrialState

    from ablate.sweep.store import _IDENTITY_ATTRS

    st, now = store.storage, time.time()
    for i, a in enumerate(attempts):
        share = i / len(attempts)
        if share >= 0.9:
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
            store._create({k: v for k, v in a.attrs.items() if k in _IDENTITY_ATTRS}, attempt=1)  # its retry


def pass_times(path: Path, repeats: int, cached: bool) -> tuple[float, int]:
    from ablate.sweep.launch import LAUNCHERS
    from ablate.sweep.progress import ProgressView
    from ablate.sweep.spec import load_sweep
    from ablate.sweep.store import SweepStore

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            path = build_store(Path(tmp), n)
            built = time.perf_counter() - t0
            new, new_reads = pass_times(path, args.repeats, cached=True)
            old, old_reads = pass_times(path, args.repeats, cached=False)
            status = command_time(["status", str(path)], args.repeats)
            table = command_time(["table", str(path), "--format", "json"], args.repeats)
            dry = command_time(["sweep", str(path), "--dry-run", "--max-trials", str(n)], args.repeats)
            print(
                f"{n:>6} trials (store built in {built:.0f} s): pass {new * 1e3:.1f} ms, every call reading "
                f"everything {old * 1e3:.1f} ms ({old / new:.1f}x; full reads {new_reads} vs {old_reads}); "
                f"status {status:.2f} s, table json {table:.2f} s, dry run {dry:.2f} s; "
                f"load {os.getloadavg()[0]:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
