"""The launcher contract (ablate/sweep/launch/contract.py) over every registered launcher, and its ability
to catch a broken one. A launcher registered anywhere is covered here with no new test code.

Each launcher runs the contract's one tiny sweep (3 trials, a stand-in trainer) once per module; every
check then reads its outcome. The local launcher also runs it on a PostgreSQL server's store. A launcher
that needs a cluster runs in the integration tier, and only
where its scheduler answers (``slurm``: ``sinfo``) or, for ``ray``, on a local Ray cluster the tests start.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ablate.sweep.launch import LAUNCHERS
from ablate.sweep.launch.base import Launcher
from ablate.sweep.launch.contract import CHECKS, FAILS, ContractError, Outcome, evaluate, run_sweep

# launcher -> (the command that answers where its scheduler runs, the pytest marks of its tier)
NEEDS_CLUSTER = {
    "slurm": (["sinfo", "-h"], [pytest.mark.slurm, pytest.mark.integration]),
    "ray": (None, [pytest.mark.ray, pytest.mark.integration]),  # the tests start a real local Ray cluster
}


def _scheduler_problem(probe: list[str]) -> str | None:
    if shutil.which(probe[0]) is None:
        return f"{probe[0]} is not on PATH: no scheduler client here"
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{' '.join(probe)} did not answer ({exc})"
    if done.returncode != 0 or not done.stdout.strip():
        why = (done.stderr.strip().splitlines() or ["no output"])[-1][:120]
        return f"{' '.join(probe)} failed ({why}): no reachable scheduler; start one and point the client at it"
    return None


def _params() -> list[Any]:
    out = []
    for name in LAUNCHERS.names():
        marks = NEEDS_CLUSTER[name][1] if name in NEEDS_CLUSTER else []
        out.append(pytest.param(name, marks=marks, id=name))
    return [*out, pytest.param("local+postgres", id="local+postgres")]  # the store a cluster would use


@pytest.fixture(scope="module", params=_params())
def outcome(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The contract sweep, run once per launcher (about 5-10 s for local on 2 busy cores)."""
    name, store = request.param, "journal:contract.journal"
    if name.endswith("+postgres"):  # a real PostgreSQL server (skipped where none can start)
        import pg_server

        name, store = name.removesuffix("+postgres"), pg_server.new_database(request.getfixturevalue("postgres_server"))
    if name == "ray":
        request.getfixturevalue("ray_cluster")
    elif name in NEEDS_CLUSTER:
        problem = _scheduler_problem(NEEDS_CLUSTER[name][0])
        if problem:
            pytest.skip(f"launcher {name}: {problem}")
    return run_sweep(name, tmp_path_factory.mktemp(f"contract-{name}"), store=store)


@pytest.mark.parametrize("check", list(CHECKS))
def test_every_launcher_keeps_the_contract(outcome: Outcome, check: str) -> None:
    CHECKS[check](outcome)


class _Idle(Launcher):
    """A broken launcher: never starts anything, so its sweep never ends."""

    KEYS = {"name": "idle-test", "poll_s": "seconds between passes"}

    def start(self, waiting: list[Any]) -> None:
        pass


def test_a_launcher_that_starts_nothing_fails_with_a_clear_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(LAUNCHERS._entries, "idle-test", _Idle)
    out = run_sweep("idle-test", tmp_path, timeout_s=1.0)
    assert out.error == "ContractError: still running after 1 s (a trial never reported its end?)"
    results = {r.check: r for r in evaluate(out)}
    assert not any(r.ok for r in results.values())
    assert results["ends"].line() == (
        "FAIL  launcher=idle-test ends             the sweep did not end: ContractError: still running after 1 s "
        "(a trial never reported its end?)"
    )


def _view(row: str, state: str, attrs: dict[str, Any], run_dir: Path) -> Any:
    attempt = SimpleNamespace(state={"done": "COMPLETE", "running": "RUNNING"}.get(state, "FAIL"), attrs=attrs)
    return SimpleNamespace(
        row=row, state=state, attempts=(attempt,), deciding=attempt, trial=SimpleNamespace(run_dir=str(run_dir / row))
    )


@pytest.mark.parametrize(
    ("check", "rows", "message"),
    [
        ("vanished", {"vanishes": ("running", {})}, "the trial whose process died is running, not failed"),
        ("failed", {"fails": ("failed", {"failure": "exit 1"})}, "the failed trial does not say why: 'exit 1'"),
        ("done", {"done": ("done", {"metrics": {}})}, "the finished trial's metrics are not its trainer's: {}"),
        ("starts", {r: ("done", {"token": "t"}) for r in ("done", "fails", "vanishes")}, "trial done never reached"),
    ],
)
def test_each_check_names_what_broke(tmp_path: Path, check: str, rows: dict[str, Any], message: str) -> None:
    good = {
        "done": ("done", {"metrics": {"contract_row": "done"}, "token": "t"}),
        "fails": ("failed", {"failure": FAILS, "token": "t"}),
        "vanishes": ("failed", {"failure": "worker exited with code 3", "token": "t"}),
    }
    trials = {row: _view(row, *spec, tmp_path) for row, spec in {**good, **rows}.items()}
    out = Outcome("fake", {"done": 1, "failed": 2}, trials)
    with pytest.raises(ContractError) as err:
        CHECKS[check](out)
    assert str(err.value).startswith(message)
