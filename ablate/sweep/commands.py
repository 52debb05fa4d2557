"""`ablate sweep`, `ablate status`, `ablate sync`: each validates the sweep file first, then acts.

A sweep file that fails validation raises :class:`SweepError` before any store is opened or any
trial is launched. `--dry-run` and `status` import neither Lightning nor the data pipeline.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ablate.sweep.errors import SweepError
from ablate.sweep.spec import Sweep, Trial, describe_trial, load_sweep

# Throughput assumptions of the dry-run cost estimate, unless the sweep file's `cost:` says otherwise.
# CPU: the fp32 matmul peak of a 2-core AVX2 machine (~120 GFLOP/s), of which training reached ~50%.
# GPU: an A100's dense bf16 peak (312 TFLOP/s) at a typical 35% model-FLOPs utilisation.
DEFAULT_COST = {
    "cpu": {"flops_per_second": 1.2e11, "mfu": 0.5},
    "gpu": {"flops_per_second": 3.12e14, "mfu": 0.35},
}


def _devices(trainer: dict[str, Any]) -> int:
    d = trainer.get("devices", 1)
    n = len(d) if isinstance(d, list) else (int(d) if isinstance(d, int) or str(d).isdigit() else 1)
    return n * int(trainer.get("num_nodes", 1) or 1)


def _is_gpu(config: dict[str, Any]) -> bool:
    accel = str(config["trainer"].get("accelerator", "auto"))
    if accel in ("gpu", "cuda"):
        return True
    if accel == "auto":
        import torch

        return torch.cuda.is_available()
    return False


def estimate(sweep: Sweep, t: Trial) -> dict[str, Any]:
    """Parameters, training FLOPs and device-hours of one trial, from its config alone."""
    from ablate.config import from_dict
    from ablate.model.build import count_parameters, train_flops

    cfg = from_dict(t.config, source=f"{sweep.path}: row {t.row!r}")
    c = t.config
    devices = _devices(c["trainer"])
    per_step = c["data"]["max_tokens"] * devices * c["train"]["accumulate_grad_batches"]
    tokens = float(per_step) * c["train"]["max_steps"]
    kind = "gpu" if _is_gpu(c) else "cpu"
    assumption = {**DEFAULT_COST[kind], **sweep.cost}
    flops = train_flops(cfg.model, cfg.data.vocab_size, tokens, tokens)
    device_s = flops / (assumption["flops_per_second"] * assumption["mfu"])
    return {
        **describe_trial(t),
        "params": int(count_parameters(cfg.model, cfg.data.vocab_size)),
        "tokens_per_step": per_step,
        "steps": c["train"]["max_steps"],
        "devices": devices,
        "flops": flops,
        "device_hours": device_s / 3600.0,
        "wall_hours": device_s / 3600.0 / devices,
        "assumption": {"device": kind, **assumption, "source": "sweep file cost:" if sweep.cost else "default"},
    }


def print_dry_run(sweep: Sweep, as_json: bool) -> int:
    rows = [estimate(sweep, t) for t in sweep.trials]
    total = {k: sum(r[k] for r in rows) for k in ("flops", "device_hours")}
    if as_json:
        out = {
            "sweep": sweep.name,
            "file": str(sweep.path),
            "launcher": sweep.launcher["name"],
            "store": sweep.store,
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


def sweep(
    path: str | Path,
    dry_run: bool = False,
    as_json: bool = False,
    detach: bool = False,
    overrides: Sequence[str] = (),
) -> int:
    """Validate, then run (or resume) every trial of a sweep; 0 when all are done, 1 if any failed."""
    spec = load_sweep(path, overrides)
    if as_json and not dry_run:
        raise SweepError("--json goes with --dry-run (the trial list as JSON); add --dry-run")
    if dry_run:
        return print_dry_run(spec, as_json)
    if detach and spec.launcher["name"] != "slurm":
        raise SweepError(f"{spec.path}: --detach needs launcher slurm (trials of a local sweep live in this process)")
    from ablate.sweep.launch import LAUNCHERS
    from ablate.sweep.store import SweepStore

    store = SweepStore.for_sweep(spec)
    launcher = LAUNCHERS.get(spec.launcher["name"])(spec, store)
    t0 = time.time()
    counts = launcher.run(detach=detach)
    if detach:
        jobs = getattr(launcher, "submitted", [])
        print(
            f"submitted {len(jobs)} job(s){': ' + ', '.join(jobs) if jobs else ''}; "
            f"follow with `ablate status {spec.path}`"
        )
        return 0
    print(
        f"sweep {spec.name}: "
        + ", ".join(f"{counts.get(s, 0)} {s}" for s in ("done", "failed", "waiting", "running"))
        + f" in {time.time() - t0:.0f} s"
    )
    _print_failures(spec)
    _summary(spec.path)
    return 0 if counts.get("done", 0) == len(spec.trials) else 1


def _summary(path: Path) -> None:
    try:
        from ablate.report.commands import print_summary
    except ImportError as exc:  # only while the report part is not installed
        print(f"(no table: ablate.report is unavailable: {exc})", file=sys.stderr)
        return
    print_summary(path)


def _print_failures(spec: Sweep) -> None:
    from ablate.sweep.results import results_of

    for r in results_of(spec):
        if r.state == "failed":
            print(f"  failed: {r.row} seed {r.seed}: {r.failure}")


def status(path: str | Path) -> int:
    """Done / running / waiting / failed per row, with failure reasons; reads only."""
    from ablate.sweep.progress import render_table, trial_lines
    from ablate.sweep.store import SweepStore

    spec = load_sweep(path)
    store = SweepStore.for_sweep(spec)
    if not store.exists():
        print(f"sweep {spec.name}: not started ({len(spec.trials)} trials waiting; store {store.url})")
        return 0
    by_trial = store.by_trial()
    lines = trial_lines(spec, by_trial)
    stray = set(by_trial) - {t.trial_id for t in spec.trials}
    if stray:  # rows removed or configs changed since they ran; kept in the store, not shown
        print(
            f"note: the store also holds {len(stray)} trial(s) no longer in {spec.path.name} (changed or removed rows)"
        )
    rows: dict[str, dict[str, int]] = {}
    for ln in lines:
        rows.setdefault(ln.row, {"done": 0, "running": 0, "waiting": 0, "failed": 0})[ln.state] += 1
    totals = {s: sum(r[s] for r in rows.values()) for s in ("done", "running", "waiting", "failed")}
    if sys.stdout.isatty():
        from rich.console import Console

        Console().print(render_table(lines, f"{spec.name}: " + ", ".join(f"{v} {k}" for k, v in totals.items())))
        return 0
    print(f"sweep {spec.name}: " + ", ".join(f"{v} {k}" for k, v in totals.items()))
    width = max(len(r) for r in rows)
    for row, c in rows.items():
        print(f"  {row:<{width}}  " + "  ".join(f"{k} {v}" for k, v in c.items() if v))
    now = time.time()
    grace = float(spec.heartbeat["grace_s"])
    for t in spec.trials:
        for a in by_trial.get(t.trial_id, [])[-1:]:
            if a.state == "FAIL":
                print(f"  failed: {t.row} seed {t.seed} (attempt {a.attempt + 1}): {a.attrs.get('failure')}")
            elif a.state == "RUNNING" and now - float(a.attrs.get("heartbeat", 0)) > grace:
                print(
                    f"  stale: {t.row} seed {t.seed}: no heartbeat for {now - float(a.attrs.get('heartbeat', 0)):.0f} s"
                )
    return 0


def _offline_runs(spec: Sweep) -> list[Path]:
    found: list[Path] = []
    for t in spec.trials:
        found += sorted(p for p in Path(t.run_dir).glob("**/offline-run-*") if p.is_dir())
    return found


def sync(path: str | Path) -> int:
    """Upload the sweep's offline W&B runs with `wandb sync`."""
    spec = load_sweep(path)
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
