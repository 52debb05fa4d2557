"""`ablate sweep`, `ablate status`, `ablate sync`: each opens (checks) the sweep first, then acts.

A sweep file that fails validation raises :class:`SweepError` before any store is written or any
trial is launched (the store may be read first, for the overrides recorded with the sweep). `--dry-run`
and `status` import neither torch nor Lightning (a dry run reads the data cache, through
``ablate.data.prepare``, to turn an epoch budget into steps). Nothing
here prints the results table: the CLI runs :func:`sweep`, then hands the Sweep it ran to the report.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ablate.errors import SweepError
from ablate.sweep.dry_run import print_dry_run
from ablate.sweep.file.spec import Sweep
from ablate.sweep.launch import LAUNCHERS
from ablate.sweep.launch.progress import render_table, title, trial_lines
from ablate.sweep.loader import OpenSweep, check_this_machine, name_clash, open_sweep, prepared_problem
from ablate.sweep.plan.base import Plan
from ablate.sweep.plan.plans import trial_states
from ablate.sweep.size import MAX_TRIALS
from ablate.sweep.store.reuse import check_reuse
from ablate.sweep.store.state import STATES, TrialView
from ablate.sweep.store.store import SweepStore
from ablate.sweep.wandb_net import endpoint, resolve_modes, unreachable


def _note(opened: OpenSweep) -> None:
    for line in opened.notes:  # stderr: stdout may be JSON or CSV
        print(f"note: {line}", file=sys.stderr)


@dataclass(frozen=True)
class SweepRun:
    """What `ablate sweep` did: the exit code and the sweep it ran (with the overrides it used)."""

    code: int
    sweep: Sweep
    finished: bool  # the controller ran to the end (not a dry run, not detached): a summary makes sense
    store: SweepStore | None = None  # the store it ran on, open (the summary reads it without reopening)
    plan: Plan | None = None  # the plan it ran (the summary's table notes and trial view ask it, not a new one)


def sweep(
    path: str | Path,
    dry_run: bool = False,
    as_json: bool = False,
    detach: bool = False,
    overrides: Sequence[str] | None = None,
    clear_overrides: bool = False,
    launcher_options: Mapping[str, Any] | None = None,
    max_trials: int | None = None,
    reuse_from: str | None = None,
    launcher: str | None = None,
) -> SweepRun:
    """Check, then run (or resume) every trial of a sweep; code 0 when all are done, 1 if any failed.

    ``overrides`` None or empty: those recorded with the sweep (see :mod:`ablate.sweep.loader`).
    ``launcher_options`` go to the launcher's constructor (e.g. ``trial_fn``: a stand-in trainer).
    ``max_trials`` (default :data:`~ablate.sweep.size.MAX_TRIALS`): a larger sweep is refused.
    ``launcher``: ``--launcher`` (a name or a YAML mapping) in place of the file's ``launcher:``.
    Every check (the sweep's size, its store, the launcher's tools) runs before anything is stored.
    A dry run stops at a size or store error, but prints its plan despite missing launcher tools (a
    note says which: a plan made on a laptop for a cluster).
    """
    if as_json and not dry_run:
        raise SweepError("--json goes with --dry-run (the trial list as JSON); add --dry-run")
    limit = MAX_TRIALS if max_trials is None else max_trials
    opened = open_sweep(
        path, overrides, clear_overrides=clear_overrides, max_trials=limit, writing=True, launcher=launcher
    )
    spec = opened.sweep
    _note(opened)
    for line in opened.plan.notes():
        print(f"note: {line}", file=sys.stderr)
    check_this_machine(spec, dry_run)
    if why := prepared_problem(spec):  # the trial would fail at its start, or lose a length after training
        raise SweepError(why)
    opened.launcher.check_trials(spec)
    if why := name_clash(spec, opened.store):
        raise SweepError(why)
    if reuse_from is not None:
        check_reuse(spec, opened.store, reuse_from)
    problem = opened.launcher.launch_problem(spec)  # what keeps this machine from launching it, or None
    if dry_run:  # a plan is what a dry run is for, also on a laptop without the cluster's tools
        code = print_dry_run(opened, as_json)
        if problem:
            print(f"note: {problem} (the dry run needs none of it)", file=sys.stderr)
        return SweepRun(code, spec, finished=False)
    if problem:
        raise SweepError(problem)
    if detach and not opened.launcher.can_detach:
        raise SweepError(
            f"{spec.path}: --detach needs launcher slurm or ray (trials of a local sweep live in this process)"
        )
    if detach and (why := opened.plan.detach_problem()):
        raise SweepError(why)
    modes = [t.config.get("logging", {}).get("wandb") for t in spec.shapes] + [spec.wandb.get("mode")]
    resolve_modes(modes, str(spec.path), f"ablate sync {spec.path}")
    _reuse_or_hint(spec, opened.store, reuse_from)
    return _launch(opened, launcher_options, detach)


def _reuse_or_hint(spec: Sweep, store: SweepStore, name: str | None) -> None:
    """``--reuse NAME``: take over NAME's finished trials; without it, one line when the store is new but
    another sweep's is there (a renamed file: everything would train again)."""
    from ablate.sweep.store.reuse import hint, reuse, reused_runs

    if name is not None:
        print(reused_runs(reuse(spec, store, name), name))
    elif (line := hint(spec, store)) is not None:
        print(f"note: {line}", file=sys.stderr)


def _prepare_once(plan: Plan, views: Sequence[TrialView]) -> None:
    """Prepare each distinct corpus of the trials still to run, once, before any trial starts (the
    trials then open it from the cache instead of waiting on the first one's BPE)."""
    todo = {v.trial_id for v in views if v.state not in ("done", "pruned")}
    configs = [t.config for t in plan.to_prepare(todo)]
    distinct = {json.dumps(c.get("data", {}), sort_keys=True, default=str): c["data"] for c in configs if c.get("data")}
    if not distinct:
        return
    from omegaconf import OmegaConf

    from ablate.data.prepare import prepare_data

    t0 = time.time()
    for data in distinct.values():
        prepare_data(OmegaConf.create(data), progress=True)
    print(f"data: {len(distinct)} prepared corpus(es) ready in {time.time() - t0:.1f} s (cached for every trial)")


def _launch(opened: OpenSweep, launcher_options: Mapping[str, Any] | None, detach: bool) -> SweepRun:
    spec = opened.sweep
    launcher = opened.launcher(spec, opened.store, plan=opened.plan, **dict(launcher_options or {}))
    opened.store.open_to_write()  # a store that cannot be written fails here, before the data is prepared
    before = trial_states(opened.store, spec, opened.plan)
    local = spec.launcher["name"] == "local"
    if local:  # a SLURM controller may sit on a login node: there the first job prepares the data
        _prepare_once(opened.plan, before)
    t0 = time.time()
    counts = launcher.run(detach=detach)
    if detach:
        jobs = getattr(launcher, "submitted", [])
        print(
            f"submitted {len(jobs)} job(s){': ' + ', '.join(jobs) if jobs else ''}; "
            f"follow with `ablate status {spec.path}`"
        )
        return SweepRun(0, spec, finished=False)
    slots = launcher.capacity() if local else 0
    return _ended(launcher.sweep, opened, counts, time.time() - t0, launcher.started, slots)


def _ended(
    spec: Sweep,
    opened: OpenSweep,
    counts: Mapping[str, int],
    seconds: float,
    started: set[str] = frozenset(),
    slots: int = 0,
) -> SweepRun:
    """The controller's last lines: the tally, the efficiency of a local sweep's slots (ablate.sweep.efficiency)
    and each failure; code 0 when every trial finished. The efficiency counts the trials this controller
    started: one it adopted (a killed controller's live worker) trained partly before it, and counting
    its time against this run's slots gave "292% of slot time"."""
    tally = ", ".join(f"{counts.get(s, 0)} {s}" for s in opened.plan.tally())
    print(f"sweep {spec.name}: {tally} in {seconds:.0f} s")
    views = trial_states(opened.store, spec, opened.plan)
    if slots:
        from ablate.sweep.efficiency import efficiency_lines

        finished = [v.metrics for v in views if v.state == "done" and v.trial_id in started]
        for line in efficiency_lines(finished, seconds, slots):
            print(line)
    for v in views:
        if v.state == "failed":
            print(f"  failed: {v.row} seed {v.seed}: {v.failure}")
    finished = counts.get("done", 0) + counts.get("pruned", 0) == len(spec.trials)
    return SweepRun(0 if finished else 1, spec, finished=True, store=opened.store, plan=opened.plan)


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


def reap_ended_jobs(spec: Sweep, store: SweepStore) -> list[str]:
    """Record the jobs of a detached sweep that ended without saying so (each launcher asks its scheduler
    about the attempts it submitted: sacct, Ray's job API); the scheduler's view of each open job, one
    line each. Every launcher is asked, not only the file's: a sweep may run elsewhere (``--launcher``)."""
    return [line for name in LAUNCHERS.names() for line in LAUNCHERS.get(name).reap_detached(spec, store)]


def status(path: str | Path) -> int:
    """Done / running / waiting / failed per row, with failure reasons. It writes only what sacct says
    of a SLURM job that ended (:func:`reap_ended_jobs`)."""
    opened = open_sweep(path)
    spec, store = opened.sweep, opened.store
    _note(opened)
    if not store.exists():
        print(f"sweep {spec.name}: not started ({len(spec.trials)} trials waiting; store {store.url})")
        from ablate.sweep.store.reuse import hint

        if (line := hint(spec, store)) is not None:
            print(f"note: {line}")
        return 0
    jobs = reap_ended_jobs(spec, store)
    by_trial = store.by_trial()
    trials = trial_states(store, spec, opened.plan)
    stray = set(by_trial) - {v.trial_id for v in trials}
    if stray:  # rows removed or configs changed since they ran; kept in the store, not shown
        print(
            f"note: the store also holds {len(stray)} trial(s) no longer in {spec.path.name} "
            "(changed or removed rows, or other command-line overrides)"
        )
    for v in trials:
        bad = v.malformed()
        if bad:  # a store written by another version or by hand: shown, its odd attributes ignored
            print(
                f"note: trial {v.row!r} seed {v.seed}: the store {store.url} holds {', '.join(bad)} of a type "
                "ablate does not write; shown without it"
            )
    if sys.stdout.isatty():
        from rich.console import Console

        Console().print(render_table(trial_lines(trials), title(spec.name, trials)))
    else:
        _print_status_lines(spec, trials)
    for line in opened.plan.status_lines(trials):
        print(line)
    for line in jobs:
        print(f"job: {line}")
    return 0


def _offline_runs(spec: Sweep) -> list[Path]:
    """The trials' offline W&B runs and the summary runs (``<runs>/<sweep>/wandb/offline-run-*``)."""
    found: list[Path] = []
    for t in spec.trials:
        found += sorted(p for p in Path(t.run_dir).glob("**/offline-run-*") if p.is_dir())
    summary = spec.runs_dir / "wandb"
    found += sorted(p for p in summary.glob("offline-run-*") if p.is_dir())
    return found


def sync(path: str | Path) -> int:
    """Upload the sweep's offline W&B runs with `wandb sync`."""
    opened = open_sweep(path)
    spec = opened.sweep
    _note(opened)
    runs = _offline_runs(spec)
    if not runs:
        print(f"sweep {spec.name}: no offline W&B runs to sync under {spec.runs_dir}")
        return 0
    why = unreachable()
    if why is not None:
        raise SweepError(
            f"sweep {spec.name}: {len(runs)} offline run(s) to sync but {endpoint()[0]} is unreachable ({why}); "
            "run `ablate sync` again where there is a network"
        )
    exe = shutil.which("wandb")
    cmd = [exe] if exe else [sys.executable, "-m", "wandb"]
    print(f"syncing {len(runs)} offline run(s) of {spec.name} ...")
    done = subprocess.run([*cmd, "sync", *map(str, runs)], check=False)
    if done.returncode != 0:
        raise SweepError(f"wandb sync exited with {done.returncode}; is `wandb login` done (or WANDB_API_KEY set)?")
    return 0
