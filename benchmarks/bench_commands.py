"""The read commands' wall time against their budgets: prints medians and ratios, asserts nothing.

    python benchmarks/bench_commands.py                            # every store below, 5 runs each
    python benchmarks/bench_commands.py --against ../old-checkout  # and the same from another checkout
    python benchmarks/bench_commands.py --sizes 1000 --keep /tmp/stores   # fewer stores, kept for later

Each command runs as a user runs it: a fresh ``python -m ablate`` process, imports included, the median
of ``--repeats``. The stores:

- ``mini, unrun``: a copy of ``sweeps/table3-mini.yaml`` (20 rows), no store yet;
- ``mini, finished``: the same copy after ``ablate sweep`` ran it to the end with the sweep tests' fake
  trainer (real worker processes, real run directories and metrics files; milliseconds a trial);
- ``N trials``: one row at N seeds over the sweep tests' tiny experiment, in a real SQLite store whose
  attempts are set as a long sweep has them (60% finished, 10% failed and retried, 10% running, the
  rest waiting; benchmarks/bench_controller.py builds them);
- ``N trials in rows``: the same in N/2 rows of 2 seeds (a grid over model.d_ff): each row is composed,
  checked and tabled on its own, so this is the read commands' heavier shape.

Commands: ``status``, ``table`` and ``sweep --dry-run``. Budgets (2-core machine, load < 1): the mini
sweep 0.5 s for status and the dry run, 0.8 s for the table; 1.5 s at 1,000 trials; 2 s at 10,000; in
rows, 0.5 s and 1 ms a row (5.5 s at 10,000 trials in 5,000 rows).

``--against DIR`` runs every command also from ``DIR`` (another checkout of ablate, e.g. ``git worktree
add ../old <commit>``: ``python -m ablate`` imports the package of its working directory), alternating
the two run by run on the same stores, and prints the other's median and its ratio (other / this).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "sweep"))
sys.path.insert(0, str(ROOT / "benchmarks"))

BUDGETS = {"mini": {"status": 0.5, "table": 0.8, "sweep --dry-run": 0.5}, 1000: 1.5, 10000: 2.0}
# N trials in rows: each row's config is composed and checked on its own, so the budget grows with the rows
ROW_BUDGET = (0.5, 0.001)  # seconds: the process, and each row


def once(cmd: list[str], cwd: Path) -> tuple[float, int]:
    t = time.perf_counter()
    env = {**os.environ, "WANDB_MODE": "disabled"}
    rc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env).returncode
    return time.perf_counter() - t, rc


def timed(cmd: list[str], repeats: int, cwds: list[Path]) -> list[tuple[float, float, float, int]]:
    """Per working directory: (median, min, max, last exit code) of ``repeats`` runs, interleaved."""
    times: list[list[float]] = [[] for _ in cwds]
    rcs = [0] * len(cwds)
    for _ in range(repeats):
        for i, cwd in enumerate(cwds):
            seconds, rcs[i] = once(cmd, cwd)
            times[i].append(seconds)
    return [(statistics.median(t), min(t), max(t), rc) for t, rc in zip(times, rcs)]


def mini_copy(folder: Path) -> Path:
    """sweeps/table3-mini.yaml in ``folder`` (its store and runs go there), the experiment path absolute."""
    src = ROOT / "sweeps" / "table3-mini.yaml"
    spec = yaml.safe_load(src.read_text())
    spec["experiment"] = str((src.parent / spec["experiment"]).resolve())
    spec["wandb"] = {"mode": "disabled"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / src.name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def finished_mini(folder: Path) -> Path:
    """The mini sweep run to its end by the fake trainer (a dev PPL per row that differs by row)."""
    from sweep_harness import ablate_cmd, fake_env

    path = mini_copy(folder)
    (folder / "fake.json").write_text(json.dumps({"*": {"ppl": 12.0, "noise": 0.4}}))
    done = subprocess.run(ablate_cmd("sweep", str(path)), env=fake_env(), cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the fake run of the mini sweep failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return path


def stores(folder: Path, sizes: list[int], row_sizes: list[int]) -> list[tuple[str, object, Path]]:
    """(label, budget key, sweep file) of every store measured, built in ``folder`` unless already there."""
    from bench_controller import build_store

    out: list[tuple[str, object, Path]] = [("mini, unrun", "mini", mini_copy(folder / "unrun"))]
    finished = folder / "finished" / "table3-mini.yaml"
    out.append(("mini, finished", "mini", finished if finished.exists() else finished_mini(folder / "finished")))
    for n, rows in [(n, False) for n in sizes] + [(n, True) for n in row_sizes]:
        name = f"r{n}" if rows else f"n{n}"
        sub = folder / name
        if not (sub / f"{name}.yaml").exists():
            sub.mkdir(parents=True, exist_ok=True)
            print(f"(building a store of {n:,} trials{' in rows of 2 seeds' if rows else ''})", flush=True)
            build_store(sub, n, rows)
        out.append((f"{n:,} trials" + (" in rows" if rows else ""), ("rows", n) if rows else n, sub / f"{name}.yaml"))
    return out


def budget_of(key: object, command: str) -> float:
    if isinstance(key, tuple):  # ("rows", N): N trials in N/2 rows
        return ROW_BUDGET[0] + ROW_BUDGET[1] * key[1] / 2
    value = BUDGETS[key]  # type: ignore[index]
    return value[command] if isinstance(value, dict) else value


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000], help="stores of N trials (1000, 10000)")
    p.add_argument("--rows", type=int, nargs="*", default=[1000], help="stores of N trials in N/2 rows (1000)")
    p.add_argument("--against", type=Path, help="another checkout of ablate to time the same commands from")
    p.add_argument("--keep", type=Path, help="build the stores in this folder and reuse them in later runs")
    args = p.parse_args()
    cwds = [ROOT, *([args.against.resolve()] if args.against else [])]
    tmp = tempfile.mkdtemp(prefix="bench-commands-")
    folder = args.keep.resolve() if args.keep else Path(tmp)
    try:
        measured = stores(folder, args.sizes, args.rows)
        print(f"{args.repeats} runs each, fresh processes; load average {os.getloadavg()[0]:.2f}")
        over = 0
        for label, key, sweep in measured:
            for command in ("status", "table", "sweep --dry-run"):
                cmd = [sys.executable, "-m", "ablate", *command.split()[:1], str(sweep), *command.split()[1:]]
                n = key[1] if isinstance(key, tuple) else key
                if command.startswith("sweep") and isinstance(n, int):  # over the default limit of 500 trials
                    cmd += ["--max-trials", str(n)]
                results = timed(cmd, args.repeats, cwds)
                med, lo, hi, rc = results[0]
                budget = budget_of(key, command)
                over += med > budget
                verdict = "ok" if med <= budget else "OVER"
                line = f"  {label:<15} {command:<16} {med:5.2f} s (min {lo:.2f}, max {hi:.2f}; exit {rc})"
                line += f"  budget {budget:.1f} s {verdict}"
                if len(results) > 1:
                    other = results[1]
                    line += f"   {args.against.name}: {other[0]:5.2f} s (exit {other[3]}), ratio {other[0] / med:.2f}x"
                print(line, flush=True)
        print(f"load average after: {os.getloadavg()[0]:.2f}; {over} command(s) over budget")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
