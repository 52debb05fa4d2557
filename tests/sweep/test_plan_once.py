"""One plan per command, one carrier of the growing sweep, one look at the launcher and the store.

A command builds its sweep's plan once (the opened sweep holds it) and every part of it asks that one:
the dry run, ``status``, the table, the launcher's passes and the end-of-sweep summary. The plan never
changes its own sweep: a controller's growing sweep is the last Step's. Opening a sweep locates its
store once and checks its launcher once, and the commands ask the opened sweep for both.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

import ablate.cli
import ablate.report.commands
import ablate.sweep.commands
import ablate.sweep.dry_run
import ablate.sweep.launch
from ablate.cli import main
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.launch.base import Launcher
from ablate.sweep.launch.local import LocalLauncher
from ablate.sweep.loader import open_sweep
from ablate.sweep.plan.plans import plan_of
from ablate.sweep.plan.search import Searcher
from ablate.sweep.store.location import locate
from ablate.sweep.store.state import Attempt
from ablate.sweep.store.store import SweepStore

SEARCH = {"metric": "val/ppl", "n_trials": 2, "params": {"train.lr_factor": {"low": 0.5, "high": 2.0}}}
POLICIES = {"grid": {}, "search": {"search": SEARCH}, "seeds": {"seeds": {"start": 2, "max": 3}}}


def _counted(monkeypatch: pytest.MonkeyPatch, fn: Callable[..., Any]) -> list[int]:
    """Count the calls of ``fn`` through every ablate module that holds it (each imports it by name)."""
    calls = [0]

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return fn(*args, **kwargs)

    held = [m for name, m in list(sys.modules.items()) if name.startswith("ablate") and vars(m).get(fn.__name__) is fn]
    assert held, f"no module holds {fn.__name__}"
    for module in held:
        monkeypatch.setattr(module, fn.__name__, counting)
    return calls


def _finish_in_process(launcher: Launcher, waiting: list[Attempt]) -> None:
    """Play the workers at once: each waiting attempt is claimed and done (no process, no training)."""
    for a in waiting:
        assert launcher.store.claim(a.storage_id, "test-token")
        launcher.store.finish(a.storage_id, {"val/ppl": 5.0 + a.attrs["seed"], "step": 6})


@pytest.mark.parametrize("policy", POLICIES)
def test_each_read_command_builds_the_plan_once(write_sweep, monkeypatch, capsys, policy: str) -> None:
    path = write_sweep(**POLICIES[policy])
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)  # `status` of a sweep not started asks no plan
    if sweep.search is not None:  # a search's status lists its sampled trials: one
        Searcher(sweep, store).step(room=1)
    built = _counted(monkeypatch, plan_of)
    for verb in (["sweep", str(path), "--dry-run"], ["status", str(path)], ["table", str(path)]):
        built[0] = 0
        assert main(verb) == 0, capsys.readouterr().err
        assert built[0] == 1, verb


def test_a_local_sweep_and_its_summary_build_the_plan_once(write_sweep, monkeypatch, capsys) -> None:
    from ablate.data import prepare

    path = write_sweep(rows=[{"name": "base", "group": "base", "paper": "base"}], seeds=[1, 2])
    monkeypatch.setattr(LocalLauncher, "start", _finish_in_process)
    monkeypatch.setattr(prepare, "prepare_data", lambda *args, **kwargs: None)  # nothing trains: no data
    built = _counted(monkeypatch, plan_of)
    run = ablate.sweep.commands.sweep(path)
    assert run.code == 0 and run.finished and run.plan is not None
    ablate.report.commands.print_summary(run.sweep, log_wandb=False, store=run.store, plan=run.plan)
    assert "2 done, 0 failed" in capsys.readouterr().out
    assert built[0] == 1


class _Instant(Launcher):
    start = _finish_in_process


def test_the_step_carries_the_growing_sweep_and_the_plan_keeps_its_own(write_sweep) -> None:
    """A search samples its trials while it runs: the controller's sweep grows, the plan's stays the opened one."""
    opened = open_sweep(write_sweep(search=SEARCH, seeds=[1, 2]), writing=True)
    launcher = _Instant(opened.sweep, opened.store, plan=opened.plan)
    launcher.run()
    assert launcher.plan is opened.plan and opened.plan.sweep is opened.sweep and opened.sweep.trials == ()
    assert launcher.sweep is launcher.last.sweep
    phases = sorted(t.search["phase"] for t in launcher.sweep.trials)
    assert phases == ["final", "search", "search"]  # 2 sampled, then the best re-run at seed 2


def test_opening_locates_the_store_once_and_checks_the_launcher_once(write_sweep, monkeypatch, capsys) -> None:
    rows = [{"name": "base", "group": "base", "resources": {"timeout_min": 5}}]
    path = write_sweep(rows=rows, launcher={"name": "slurm", "partition": "p"}, seeds=[1, 2])
    located = _counted(monkeypatch, locate)
    checked = _counted(monkeypatch, ablate.sweep.launch.check_launcher)
    registry, looked_up = ablate.sweep.launch.LAUNCHERS, [0]

    def get(name: str) -> Any:
        looked_up[0] += 1
        return type(registry).get(registry, name)

    monkeypatch.setattr(registry, "get", get)
    assert main(["sweep", str(path), "--dry-run"]) == 0
    assert "launcher slurm needs: the store (" in capsys.readouterr().out  # at the location found at opening
    assert (located[0], checked[0], looked_up[0]) == (1, 1, 1)
