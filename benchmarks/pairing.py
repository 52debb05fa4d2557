"""How much pairing by seed helps: the spread of each row's per-seed difference from base, paired vs not.

    python benchmarks/pairing.py sweeps/table3-mini-seeds.yaml

Reads a finished sweep with >= 3 seeds per row (nothing is trained). Per row: the sd of the per-seed
log-PPL difference row - base at the same seed (what the paired test over seeds sees), against the sd an
unpaired comparison would have, sqrt(var(row) + var(base)) over the same seeds (what a comparison of
independent runs sees). A ratio unpaired / paired above 1 is noise that seeds sharing the initial
weights, batch order and dropout stream cancel; the paired test needs about ratio^2 fewer seeds.
"""

from __future__ import annotations

import argparse
import math
import statistics

from ablate.sweep.loader import load_results


def spreads(path: str) -> list[tuple[str, int, float, float]]:
    """(row, seeds, paired sd, unpaired sd) of log PPL against base, per row but base, in file order."""
    by_row: dict[str, dict[int, float]] = {}
    for v in load_results(path):
        ppl = v.metrics.get("val/ppl")
        if v.state == "done" and isinstance(ppl, (int, float)):
            by_row.setdefault(v.row, {})[v.seed] = math.log(ppl)
    base = by_row.pop("base")
    out = []
    for row, logs in by_row.items():
        seeds = sorted(set(logs) & set(base))
        if len(seeds) < 3:
            continue
        paired = statistics.stdev([logs[s] - base[s] for s in seeds])
        unpaired = math.sqrt(
            statistics.variance([logs[s] for s in seeds]) + statistics.variance([base[s] for s in seeds])
        )
        out.append((row, len(seeds), paired, unpaired))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", help="a finished sweep file with >= 3 seeds per row")
    rows = spreads(parser.parse_args().sweep)
    print(f"{'row':<14} {'seeds':>5} {'paired sd':>10} {'unpaired sd':>12} {'ratio':>6}")
    for row, n, paired, unpaired in rows:
        print(f"{row:<14} {n:>5} {paired:>9.2%} {unpaired:>11.2%} {unpaired / paired:>6.2f}")
    ratios = [u / p for _, _, p, u in rows if p > 0]
    if ratios:
        print(f"median ratio unpaired / paired: {statistics.median(ratios):.2f} over {len(ratios)} rows")


if __name__ == "__main__":
    main()
