"""A rerun of a finished sweep (`ablate sweep FILE` when every trial is done) launches nothing and stays
light: no torch, Lightning or wandb import (it answers in about the time `ablate status` does).

Default tier: the finished store is written in-process (each trial claimed and finished, no worker), as
are the summary files of the earlier run (table JSON, plot, W&B record), then the CLI runs as a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sweep_harness import ablate_cmd, calls, fake_env

from ablate.report.commands import JSON_NAME, PLOT_NAME, load_table
from ablate.report.render import render
from ablate.report.wandb_summary import SUMMARY_RECORD, table_hash
from ablate.sweep.loader import open_sweep
from ablate.sweep.plan import trial_states

HEAVY = ("torch", "lightning", "pytorch_lightning", "matplotlib", "wandb")
ROWS = [{"name": f"r{i}", "group": "A", "overrides": [f"model.d_ff={16 * (i + 1)}"]} for i in range(3)]


def _finish_every_trial(path: Path) -> None:
    opened = open_sweep(path, writing=True)
    store = opened.store
    store.sync(opened.sweep)
    for v in trial_states(store, opened.sweep):
        a = v.attempts[-1]
        assert store.claim(a.storage_id, "test")
        store.finish(a.storage_id, {"val/ppl": 5.0 + v.seed, "val/bleu": 20.0, "params": 1234})
    sweep = opened.sweep
    folder = Path(sweep.runs_root) / sweep.name
    report = load_table(sweep)
    (folder / "wandb").mkdir(parents=True)
    (folder / JSON_NAME).write_text(render(report, "json"), encoding="utf-8")
    (folder / PLOT_NAME).write_bytes(b"png")
    record = {"hash": table_hash(report), "where": "earlier-run"}
    (folder / "wandb" / SUMMARY_RECORD).write_text(json.dumps(record), encoding="utf-8")


def test_a_rerun_of_a_finished_sweep_launches_nothing_and_imports_no_torch_or_wandb(write_sweep, tmp_path, monkeypatch):
    # A cache of this test's own: the table reads the trials' prepared data (the unigram floor), so data that
    # another test prepares between the table written here and the rerun's would change it, and the rerun
    # would rightly redraw the plot and log again (it failed so under `pytest -n 2` on a fresh machine).
    monkeypatch.setenv("ABLATE_CACHE", str(tmp_path / "cache"))
    path = write_sweep(rows=ROWS, seeds=[1, 2], wandb={"mode": "offline"})
    _finish_every_trial(path)
    code = (
        "import runpy, sys\nsys.argv, rc = sys.argv[1:], 0\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit as exc:\n    rc = exc.code\n"
        f"print('heavy:', sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
        "sys.exit(rc)\n"
    )
    env = fake_env({"WANDB_MODE": "offline"})
    done = subprocess.run(
        [sys.executable, "-c", code, *ablate_cmd("sweep", str(path))[1:]],  # fake_controller.py sweep FILE
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert out.splitlines()[-1] == "heavy: []"
    assert "0 new trial(s), 6 in the sweep" in out
    assert "sweep t: 6 done, 0 failed, 0 waiting, 0 running" in out
    assert "table and plot unchanged" in out
    assert "results unchanged since the last one (earlier-run), not logged again" in out
    results = trial_states(open_sweep(path).store, open_sweep(path).sweep)
    assert [len(v.attempts) for v in results] == [1] * 6 and all(v.state == "done" for v in results)
    assert all(calls(v.run_dir) == [] for v in results)  # no worker ran
