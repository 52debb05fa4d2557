"""The controller under interruption: a Ctrl-C that a library swallows is not lost, and a rerun after a
controller was killed counts the workers it left running against its slots."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from sweep_harness import ablate_cmd, calls, fake_env

from ablate.rundir import read_progress
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.launch.base import Launcher
from ablate.sweep.store.state import Attempt
from ablate.sweep.store.store import SweepStore

pytestmark = pytest.mark.integration

ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 * (i + 1)}"]} for i in range(3)]


class _Swallowing(Launcher):
    """Starts nothing; each poll sends itself SIGINT while in code that eats KeyboardInterrupt, as a
    ``__del__`` or weakref finalizer does (SQLAlchemy closes pooled connections in one)."""

    polls = 0

    def start(self, waiting: list[Attempt]) -> None:
        pass

    def poll(self) -> None:
        type(self).polls += 1
        if type(self).polls > 50:
            raise AssertionError("the Ctrl-C was lost: the loop kept going")
        if type(self).polls == 2:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)
            except KeyboardInterrupt:
                pass  # swallowed, like "Exception ignored in ..."


def test_a_ctrl_c_swallowed_by_a_library_still_stops_the_sweep(write_sweep):
    path = write_sweep(launcher={"name": "local", "slots": 1, "poll_s": 0.05})
    sweep = load_sweep(path)
    launcher = _Swallowing(sweep, SweepStore.for_sweep(sweep))
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        launcher.run()
    assert _Swallowing.polls == 2  # stopped in the same pass, before starting anything
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


def _running(path: Path) -> int:
    sweep = load_sweep(path)
    by = SweepStore.for_sweep(sweep).by_trial()
    return sum(1 for attempts in by.values() for a in attempts if a.state == "RUNNING")


def test_a_rerun_counts_the_live_workers_of_a_killed_controller(write_sweep):
    path = write_sweep(
        rows=ROWS,
        launcher={"name": "local", "slots": 2, "poll_s": 0.2},
        overrides=["train.max_steps=120"],  # 30 s: the rerun starts (imports torch) long before they end
        fake={"*": {"step_s": 0.25}},
    )
    dirs = [t.run_dir for t in load_sweep(path).trials]
    first = subprocess.Popen(ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.DEVNULL)
    try:
        end = time.time() + 120
        while sum(read_progress(d).get("step", 0) >= 2 for d in dirs) < 2:
            assert time.time() < end, "two trials never started"
            time.sleep(0.1)
    finally:
        first.kill()  # kill -9: its two workers run on in their own sessions
        first.wait()
    second = subprocess.Popen(
        ablate_cmd("sweep", str(path)), env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    most = 0
    try:
        while second.poll() is None:
            most = max(most, _running(path))
            time.sleep(0.1)
        out = second.communicate(timeout=10)[0].decode()
    finally:
        second.kill()
    assert second.returncode == 0, out
    assert most <= 2, f"{most} trials ran at once on 2 slots"
    sweep = load_sweep(path)
    by = SweepStore.for_sweep(sweep).by_trial()
    assert all([(a.attempt, a.state) for a in by[t.trial_id]] == [(0, "COMPLETE")] for t in sweep.trials), by
    assert all(len(calls(d)) == 1 for d in dirs)
    # the efficiency line counts only the trial this controller started, not the two it adopted
    line = next(ln for ln in out.splitlines() if ln.startswith("efficiency:"))
    assert int(line.split()[1].rstrip("%")) <= 100 and "1 trial(s) finished in this run" in line, line
