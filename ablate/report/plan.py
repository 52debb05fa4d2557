"""How many seeds does each row need? ``ablate plan FILE``: the seed planner.

The seed spread comes from what the sweep has finished (a pilot: base and a few rows at 2-3 seeds is
enough). For each row, the standard deviation over seeds of ``log PPL(row, s) - log PPL(base, s)`` (the
paired difference the verdicts test) where the row has 2 or more seeds paired with base; for the other
rows, the pooled one of the rows that have it; with none, base's own spread over seeds x sqrt(2) (as if
unpaired: an upper bound, pairing only removes noise).

The seeds needed: the smallest n whose two-sided paired t-test detects a relative PPL change of
``effect`` with probability ``power`` (noncentral t: ``scipy.stats.nct``), at the per-row level the
table's correction implies in the worst case: alpha / rows for Holm (its first step) and for BH (when
a single row differs, BH tests it at alpha / rows too), alpha with none. An adaptive sweep's table
decides at alpha / looks (:mod:`ablate.sweep.plan.adaptive`): that is the alpha planned with.
The cost: n x the row's device-hours per trial from the sweep's cost model (the dry run's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_SEEDS = 64  # the planner gives up above this: the effect is too small for the spread


def power_of(n: int, sd: float, effect: float, alpha: float) -> float:
    """Power of the two-sided paired t-test with ``n`` seeds to detect a mean log difference ``effect``
    when the per-seed differences have standard deviation ``sd``."""
    if n < 2:
        return 0.0
    from scipy import stats  # 0.66 s to import (2-core machine): only `ablate plan` needs the noncentral t

    df, nc = n - 1, abs(effect) * math.sqrt(n) / sd
    crit = stats.t.ppf(1 - alpha / 2, df)
    return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def seeds_needed(sd: float, effect: float, alpha: float, power: float) -> int | None:
    """The smallest n >= 2 with ``power_of(n, ...) >= power``; None above :data:`MAX_SEEDS`."""
    if sd <= 0:
        return 2
    for n in range(2, MAX_SEEDS + 1):
        if power_of(n, sd, effect, alpha) >= power:
            return n
    return None


@dataclass(frozen=True)
class PlanRow:
    row: str
    sd: float | None  # of the per-seed log PPL difference against base
    source: str  # where sd comes from: "measured (n seeds)", "pooled", "base x sqrt(2)", "none"
    seeds: int | None  # seeds needed (None: more than MAX_SEEDS, or no spread known)
    device_hours: float | None  # seeds x the row's device-hours per trial


def _paired_sd(base: Any, row: Any) -> tuple[float | None, int]:
    if base is None or row is None:
        return None, 0
    b, r = base.by_seed(), row.by_seed()
    shared = sorted(set(b) & set(r))
    if len(shared) < 2:
        return None, len(shared)
    d = np.log([r[s] for s in shared]) - np.log([b[s] for s in shared])
    return float(np.std(d, ddof=1)), len(shared)


def _spreads(table: Any) -> tuple[dict[str, tuple[float | None, str]], float | None]:
    base = table.base
    measured = {r.name: _paired_sd(base.ppl if base else None, r.ppl) for r in table.rows if not r.is_base}
    known = [sd for sd, _ in measured.values() if sd is not None]
    pooled = math.sqrt(sum(v * v for v in known) / len(known)) if known else None
    if pooled is None and base is not None and base.ppl is not None and base.ppl.n >= 2:
        fallback, how = float(np.std(np.log(base.ppl.values), ddof=1)) * math.sqrt(2), "base x sqrt(2)"
    else:
        fallback, how = pooled, "pooled"
    out = {}
    for name, (sd, n) in measured.items():
        out[name] = (sd, f"measured ({n} seeds)") if sd is not None else (fallback, how if fallback else "none")
    return out, pooled


def plan_rows(
    table: Any, cost: dict[str, float], effect: float, power: float, alpha: float, correction: str
) -> list[PlanRow]:
    """One :class:`PlanRow` per row of ``table`` but base (``cost``: row -> device-hours per trial)."""
    spreads, _ = _spreads(table)
    level = alpha / max(1, len(spreads)) if correction in ("holm", "bh") else alpha
    out = []
    for name, (sd, source) in spreads.items():
        n = seeds_needed(sd, math.log1p(effect), level, power) if sd is not None else None
        hours = n * cost[name] if n is not None and name in cost else None
        out.append(PlanRow(name, sd, source, n, hours))
    return out


def plan_lines(rows: list[PlanRow], effect: float, power: float, alpha: float, correction: str) -> list[str]:
    """The planner's printout: one line per row, then the total."""
    width = max([len(r.row) for r in rows] + [3])
    lines = [
        f"seeds to detect a {effect:.1%} PPL change with {power:.0%} power at alpha {alpha:g} ({correction}), "
        "paired by seed:",
        f"{'row':<{width}}  {'sd':>7}  {'seeds':>5}  {'dev-h':>9}  spread from",
    ]
    for r in rows:
        sd = f"{r.sd:.2%}" if r.sd is not None else "n/a"
        n = str(r.seeds) if r.seeds is not None else f">{MAX_SEEDS}" if r.sd is not None else "?"
        hours = f"{r.device_hours:.3g}" if r.device_hours is not None else "n/a"
        lines.append(f"{r.row:<{width}}  {sd:>7}  {n:>5}  {hours:>9}  {r.source}")
    known = [r.device_hours for r in rows if r.device_hours is not None]
    lines.append(f"total for the rows that can be planned: {sum(known):.3g} device-hours (base runs at every seed too)")
    if any(r.sd is None for r in rows):
        lines.append("rows without a spread: run base and a few rows at 2-3 seeds first (a pilot), then plan again")
    return lines
