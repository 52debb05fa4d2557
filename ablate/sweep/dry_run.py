"""`ablate sweep --dry-run`: every trial with its parameters, FLOPs, tokens and predicted cost; nothing runs.

The cost model is :func:`ablate.sweep.plan.cost.estimate`; a plan may print its own (a search: rows x
n_trials bounds) or add lines (adaptive seeds: their bound). The plan, the launcher class and the store's
location are the opened sweep's (:class:`ablate.sweep.loader.OpenSweep`). Imports neither torch nor Lightning.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ablate.sweep.loader import OpenSweep
from ablate.sweep.plan.cost import estimate


def print_dry_run(opened: OpenSweep, as_json: bool) -> int:
    sweep = opened.sweep
    own = opened.plan.dry_run(as_json)  # a search prints its bounds, not a trial list
    if own is not None:
        if not as_json:
            _print_needs(opened)
        return own
    if not as_json:  # the count first, at once: estimating a large sweep takes a while
        print(
            f"sweep {sweep.name} ({sweep.path}): {len(sweep.trials)} trials, {len(sweep.rows)} rows, "
            f"launcher {sweep.launcher['name']}",
            flush=True,
        )
    rows = [estimate(sweep, t) for t in sweep.trials]
    total = {k: _total(r[k] for r in rows) for k in ("flops", "device_hours")}
    if as_json:
        out = {
            "sweep": sweep.name,
            "file": str(sweep.path),
            "launcher": sweep.launcher["name"],
            "store": sweep.store,
            "overrides": list(sweep.overrides),
            "trials": rows,
            "total": total,
        }
        print(json.dumps(out, indent=2))
        return 0
    print("\n".join(dry_run_lines(rows, total)))
    for line in opened.plan.dry_run_notes(total["device_hours"]):
        print(line)
    _print_needs(opened)
    return 0


def _print_needs(opened: OpenSweep) -> None:
    """What the launcher needs of the machines the trials run on (a shared store and runs folder...)."""
    name = opened.sweep.launcher["name"]
    for line in opened.launcher.needs(opened.sweep, opened.store.location):
        print(f"launcher {name} needs: {line}")


def dry_run_lines(rows: list[dict[str, Any]], total: Mapping[str, float | None]) -> list[str]:
    """The dry run's table: per trial its size, budget (steps, epochs, target tokens) and cost."""
    width = max(len(r["row"]) for r in rows)
    gw = max(5, *(len(r["group"]) for r in rows))  # a group name is any string ("combination", ...)
    planned = any("split" in r for r in rows)  # train.global_tokens: the split and step time per trial
    sw = max(5, *(len(r.get("split", "")) for r in rows))
    lines = [
        f"{'row':<{width}}  {'group':<{gw}}  paper  seed  {'params':>8}  {'steps':>7}  {'epochs':>6}  "
        f"{'tgt tok':>7}  {'FLOPs':>8}  {'dev-h':>8}  {_plan_head(sw) if planned else ''}overrides"
    ]
    for r in rows:
        plan = f"{r.get('split', '-'):>{sw}}  {_ms(r.get('step_s')):>8}  " if planned else ""
        lines.append(
            f"{r['row']:<{width}}  {r['group']:<{gw}}  {r['paper'] or '':<5}  {r['seed']:>4}"
            f"  {r['params'] / 1e6:>7.1f}M  {_fmt(r['steps'], ',d'):>7}  {_fmt(r['epochs'], '.1f'):>6}"
            f"  {_tokens(r['target_tokens']):>7}  {_fmt(r['flops'], '.2e'):>8}  {_fmt(r['device_hours'], '.3g'):>8}"
            f"  {plan}{' '.join(r['overrides'])}"
        )
    if planned:
        lines.append(_split_line(rows))
    unknown = [r["row"] for r in rows if r["target_tokens"] is None]
    if unknown:
        lines.append(
            f"epochs and target tokens of {len(unknown)} trial(s) ({', '.join(sorted(set(unknown))[:3])}"
            f"{', ...' if len(set(unknown)) > 3 else ''}): known once their data is prepared (the sweep's first "
            "trial does it; `ablate data prepare` alone)"
        )
    seen = {json.dumps(r["assumption"], sort_keys=True) for r in rows}
    for a in map(json.loads, sorted(seen)):
        lines.append(
            f"assumed throughput ({a['source']}): {a['device']} at {a['flops_per_second']:.3g} FLOP/s x {a['mfu']} MFU"
            f"{_overhead(a)} (set `cost: {{flops_per_second: ..., mfu: ..., step_overhead_s: ...}}` in the sweep file)"
        )
    lines.append(f"total: {_fmt(total['flops'], '.3g')} FLOPs, {_fmt(total['device_hours'], '.3g')} device-hours")
    return lines


def _split_line(rows: list[dict[str, Any]]) -> str:
    """What the split column means, and the device memory it was planned for."""
    peaks = [r["peak_gib"] for r in rows if "peak_gib" in r]
    memory = {r["memory_gb"] for r in rows if "split" in r} - {None}
    planned_for = (
        f"planned for {', '.join(f'{m:g}' for m in sorted(memory))} GiB a device" if memory else "one batch a device"
    )
    return (
        "split (train.global_tokens): devices x tokens a side a batch x accumulated batches, "
        f"{planned_for} (cost: {{memory_gb: ...}}), predicted peak {min(peaks):.1f}-{max(peaks):.1f} GiB; "
        "each trial settles its own on its devices, and the split is not part of a trial's id"
    )


def _plan_head(width: int) -> str:
    return f"{'split':>{width}}  {'step':>8}  "


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1e3:.3g} ms"


def _overhead(assumption: dict) -> str:
    ms = assumption.get("step_overhead_s", 0.0) * 1e3
    return f" + {ms:.3g} ms a step" if ms else ""


def _total(values: Iterable[float | None]) -> float | None:
    xs = list(values)
    return None if any(x is None for x in xs) else float(sum(x for x in xs if x is not None))


def _fmt(value: float | None, spec: str) -> str:
    return "?" if value is None else format(value, spec)


def _tokens(value: float | None) -> str:
    return "?" if value is None else f"{value / 1e6:.3g}M"
