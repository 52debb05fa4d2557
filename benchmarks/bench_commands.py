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


def timed(cmd: list[str], repeats: int) -> tuple[float, float, float, int]:
    times, rc = [], 0
    for _ in range(repeats):
        t = time.perf_counter()
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), max(times), rc


def all_done(sweep: Path) -> bool:
    """True when `ablate status` says every trial is done (first line: "sweep X: N done, 0 running, ...")."""
    out = subprocess.run([sys.executable, "-m", "ablate", "status", str(sweep)], capture_output=True, text=True)
    m = re.search(r"(\d+) done, (\d+) running, (\d+) waiting, (\d+) failed", out.stdout)
    return bool(m) and int(m.group(1)) > 0 and m.group(2) == m.group(3) == m.group(4) == "0"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweep", nargs="?", default=str(ROOT / "sweeps" / "table3-mini.yaml"))
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
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
            med, lo, hi, rc = timed(cmd, args.repeats)
            print(f"  {name:<30} median {med:5.2f} s  (min {lo:.2f}, max {hi:.2f}; exit {rc})")


if __name__ == "__main__":
    main()
