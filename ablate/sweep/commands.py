"""`ablate sweep`, `ablate status`, `ablate sync`: each opens (checks) the sweep first, then acts.

A sweep file that fails validation raises :class:`SweepError` before any store is opened or any
trial is launched. `--dry-run` and `status` import neither Lightning nor the data pipeline. Nothing
here prints the results table: the CLI runs :func:`sweep`, then hands the Sweep it ran to the report.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ablate.sweep.cost import estimate
from ablate.sweep.errors import SweepError
from ablate.sweep.loader import OpenSweep, open_sweep
from ablate.sweep.progress import render_table, title, trial_lines
from ablate.sweep.spec import Sweep
from ablate.sweep.state import STATES, TrialView


def _note(opened: OpenSweep) -> None:
    for line in opened.notes:  # stderr: stdout may be JSON or CSV
        print(f"note: {line}", file=sys.stderr)


def print_dry_run(sweep: Sweep, as_json: bool) -> int:
    rows = [estimate(sweep, t) for t in sweep.trials]
    total = {k: sum(r[k] for r in rows) for k in ("flops", "device_hours")}
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
    print(
        f"sweep {sweep.name} ({sweep.path}): {len(rows)} trials, {len(sweep.rows)} rows, "
        f"launcher {sweep.launcher['name']}"
    )
    width = max(len(r["row"]) for r in rows)
    print(f"{'row':<{width}}  group  paper  seed  {'params':>8}  {'FLOPs':>8}  {'dev-h':>8}  overrides")
    for r in rows:
        print(
            f"{r['row']:<{width}}  {r['group']:<5}  {r['paper'] or '':<5}  {r['seed']:>4}  {r['params'] / 1e6:>7.1f}M"
            f"  {r['flops']:>8.2e}  {r['device_hours']:>8.3g}  {' '.join(r['overrides'])}"
        )
    seen = {json.dumps(r["assumption"], sort_keys=True) for r in rows}
    for a in map(json.loads, sorted(seen)):
        print(
            f"assumed throughput ({a['source']}): {a['device']} at {a['flops_per_second']:.3g} FLOP/s x {a['mfu']} MFU"
            " (set `cost: {flops_per_second: ..., mfu: ...}` in the sweep file)"
        )
    print(f"total: {total['flops']:.3g} FLOPs, {total['device_hours']:.1f} device-hours")
    return 0


@dataclass(frozen=True)
class SweepRun:
    """What `ablate sweep` did: the exit code and the sweep it ran (with the overrides it used)."""

    code: int
    sweep: Sweep
    finished: bool  # the controller ran to the end (not a dry run, not detached): a summary makes sense


def sweep(
    path: str | Path,
    dry_run: bool = False,
    as_json: bool = False,
    detach: bool = False,
    overrides: Sequence[str] | None = None,
    clear_overrides: bool = False,
    launcher_options: Mapping[str, Any] | None = None,
) -> SweepRun:
    """Check, then run (or resume) every trial of a sweep; code 0 when all are done, 1 if any failed.

    ``overrides`` None or empty: those recorded with the sweep (see :mod:`ablate.sweep.loader`).
    ``launcher_options`` go to the launcher's constructor (e.g. ``worker_command`` of ``local``).
    """
    if as_json and not dry_run:
        raise SweepError("--json goes with --dry-run (the trial list as JSON); add --dry-run")
    opened = open_sweep(path, overrides, clear_overrides=clear_overrides)
    spec = opened.sweep
    _note(opened)
    if dry_run:
        return SweepRun(print_dry_run(spec, as_json), spec, finished=False)
    if detach and spec.launcher["name"] != "slurm":
        raise SweepError(f"{spec.path}: --detach needs launcher slurm (trials of a local sweep live in this process)")
    from ablate.sweep.launch import LAUNCHERS

    launcher = LAUNCHERS.get(spec.launcher["name"])(spec, opened.store, **dict(launcher_options or {}))
    t0 = time.time()
    counts = launcher.run(detach=detach)
    if detach:
        jobs = getattr(launcher, "submitted", [])
        print(
            f"submitted {len(jobs)} job(s){': ' + ', '.join(jobs) if jobs else ''}; "
            f"follow with `ablate status {spec.path}`"
        )
        return SweepRun(0, spec, finished=False)
    tally = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("done", "failed", "waiting", "running"))
    print(f"sweep {spec.name}: {tally} in {time.time() - t0:.0f} s")
    for v in opened.store.trial_states(spec):
        if v.state == "failed":
            print(f"  failed: {v.row} seed {v.seed}: {v.failure}")
    return SweepRun(0 if counts.get("done", 0) == len(spec.trials) else 1, spec, finished=True)


def _print_status_lines(spec: Sweep, trials: Sequence[TrialView]) -> None:
    print(f"sweep {title(spec.name, trials)}")
    rows: dict[str, dict[str, int]] = {}
    for v in trials:
        rows.setdefault(v.row, dict.fromkeys(STATES, 0))[v.state] += 1
    width = max(len(r) for r in rows)
    for row, c in rows.items():
        print(f"  {row:<{width}}  " + "  ".join(f"{k} {v}" for k, v in c.items() if v))
    now = time.time()
    grace = float(spec.heartbeat["grace_s"])
    for v in trials:
        a = v.latest
        if a is not None and a.state == "FAIL":
            print(f"  failed: {v.row} seed {v.seed} (attempt {a.attempt + 1}): {a.attrs.get('failure')}")
        elif a is not None and a.state == "RUNNING" and a.silent_s(now) > grace:
            print(f"  stale: {v.row} seed {v.seed}: no heartbeat for {a.silent_s(now):.0f} s")


def status(path: str | Path) -> int:
    """Done / running / waiting / failed per row, with failure reasons; reads only."""
    opened = open_sweep(path)
    spec, store = opened.sweep, opened.store
    _note(opened)
    if not store.exists():
        print(f"sweep {spec.name}: not started ({len(spec.trials)} trials waiting; store {store.url})")
        return 0
    by_trial = store.by_trial()
    trials = store.trial_states(spec)
    stray = set(by_trial) - {t.trial_id for t in spec.trials}
    if stray:  # rows removed or configs changed since they ran; kept in the store, not shown
        print(
            f"note: the store also holds {len(stray)} trial(s) no longer in {spec.path.name} "
            "(changed or removed rows, or other command-line overrides)"
        )
    if sys.stdout.isatty():
        from rich.console import Console

        Console().print(render_table(trial_lines(trials), title(spec.name, trials)))
        return 0
    _print_status_lines(spec, trials)
    return 0


def _offline_runs(spec: Sweep) -> list[Path]:
    found: list[Path] = []
    for t in spec.trials:
        found += sorted(p for p in Path(t.run_dir).glob("**/offline-run-*") if p.is_dir())
    return found


def sync(path: str | Path) -> int:
    """Upload the sweep's offline W&B runs with `wandb sync`."""
    opened = open_sweep(path)
    spec = opened.sweep
    _note(opened)
    runs = _offline_runs(spec)
    if not runs:
        print(f"sweep {spec.name}: no offline W&B runs to sync under {spec.runs_root / spec.name}")
        return 0
    host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0]
    try:
        socket.create_connection((host.split(":")[0], 443), timeout=5).close()
    except OSError as exc:
        raise SweepError(
            f"sweep {spec.name}: {len(runs)} offline run(s) to sync but {host} is unreachable ({exc}); "
            "run `ablate sync` again where there is a network"
        ) from None
    exe = shutil.which("wandb")
    cmd = [exe] if exe else [sys.executable, "-m", "wandb"]
    print(f"syncing {len(runs)} offline run(s) of {spec.name} ...")
    done = subprocess.run([*cmd, "sync", *map(str, runs)], check=False)
    if done.returncode != 0:
        raise SweepError(f"wandb sync exited with {done.returncode}; is `wandb login` done (or WANDB_API_KEY set)?")
    return 0
