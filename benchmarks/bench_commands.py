"""The fast commands' wall time: prints medians, asserts nothing.

    python benchmarks/bench_commands.py                       # sweeps/table3-mini.yaml
    python benchmarks/bench_commands.py sweeps/table3.yaml --repeats 9

Runs each command as a user does (a fresh ``ablate`` process each time) ``--repeats`` times and prints
the median and the range, with the machine's load average:

- ``ablate status <sweep>`` and ``ablate table <sweep>`` (on the sweep's store: run the sweep first for
  the numbers that matter; on an empty store they show the waiting rows),
- ``ablate sweep <sweep> --dry-run`` on the file as written and on a copy with seeds [1, 2, 3],
- a rerun, ``ablate sweep <sweep>``, only when every trial of the store is done (it launches nothing
  then; otherwise it would train, so it is skipped with a note).

Target: each under 1.5 s for the 20-row mini sweep with 3 seeds.

    python benchmarks/bench_commands.py --against ../old-checkout   # this code against another checkout

``--against DIR`` runs every command also from ``DIR`` (another checkout of ablate, e.g. a ``git
worktree`` of an older commit: ``python -m ablate`` imports the package of the working directory),
alternating the two run by run, and prints both medians and their ratio (other / this).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def once(cmd: list[str], cwd: Path) -> tuple[float, int]:
    t = time.perf_counter()
    rc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
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


def all_done(sweep: Path) -> bool:
    """True when `ablate status` says every trial is done (first line: "sweep X: N done, 0 running, ...")."""
    out = subprocess.run([sys.executable, "-m", "ablate", "status", str(sweep)], capture_output=True, text=True)
    m = re.search(r"(\d+) done, (\d+) running, (\d+) waiting, (\d+) failed", out.stdout)
    return bool(m) and int(m.group(1)) > 0 and m.group(2) == m.group(3) == m.group(4) == "0"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweep", nargs="?", default=str(ROOT / "sweeps" / "table3-mini.yaml"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--against", type=Path, help="another checkout of ablate to time the same commands from")
    args = p.parse_args()
    cwds = [ROOT, *([args.against.resolve()] if args.against else [])]
    sweep = Path(args.sweep).resolve()
    ablate = [sys.executable, "-m", "ablate"]
    spec = yaml.safe_load(sweep.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        three = Path(tmp) / sweep.name
        spec["seeds"] = [1, 2, 3]
        if "experiment" in spec:
            spec["experiment"] = str((sweep.parent / spec["experiment"]).resolve())
        three.write_text(yaml.safe_dump(spec, sort_keys=False))
        cases = [
            ("status", [*ablate, "status", str(sweep)]),
            ("table", [*ablate, "table", str(sweep)]),
            ("sweep --dry-run", [*ablate, "sweep", str(sweep), "--dry-run"]),
            ("sweep --dry-run, 3 seeds", [*ablate, "sweep", str(three), "--dry-run"]),
        ]
        if all_done(sweep):
            cases.append(("rerun of the finished sweep", [*ablate, "sweep", str(sweep)]))
        else:
            print("(rerun skipped: not every trial of the store is done; run the sweep first)")
        print(f"{sweep.name}: {args.repeats} runs each, fresh processes; load average {os.getloadavg()[0]:.2f}")
        for name, cmd in cases:
            results = timed(cmd, args.repeats, cwds)
            med, lo, hi, rc = results[0]
            line = f"  {name:<30} median {med:5.2f} s  (min {lo:.2f}, max {hi:.2f}; exit {rc})"
            if len(results) > 1:
                other = results[1]
                line += f"   {args.against.name}: {other[0]:5.2f} s (exit {other[3]}), ratio {other[0] / med:.2f}x"
            print(line)


if __name__ == "__main__":
    main()
