"""Command-line overrides of `ablate sweep` belong to the sweep: recorded in the store, so the
end-of-sweep summary, `status`, `table` and a later `ablate sweep` without them see the same trials.

(The bug this guards: `ablate sweep s.yaml train.max_steps=3` finished "2 done" and then showed
every row as waiting, because the summary re-read the file without the overrides.)
"""

from __future__ import annotations

import json

from sweep_harness import calls

from ablate.cli import main
from ablate.sweep.loader import load_results, open_sweep
from ablate.sweep.plan import trial_states
from ablate.sweep.store.store import SweepStore

ROWS = [
    {"name": "base", "group": "base", "paper": "base"},
    {"name": "wide", "group": "C", "overrides": ["model.d_ff=64"]},
]


def test_overrides_are_recorded_and_seen_by_summary_status_table_and_rerun(write_sweep, fake_trainer, capsys):
    path = write_sweep(rows=ROWS)
    assert main(["sweep", str(path), "train.max_steps=3"]) == 0
    out = capsys.readouterr().out
    assert "sweep t: 2 done, 0 failed, 0 waiting, 0 running" in out
    summary = [
        line for line in out.splitlines() if line.rstrip().endswith("1/1") and ("base" in line or "wide" in line)
    ]
    assert len(summary) == 2 and all("…" not in line for line in summary), out  # … = waiting

    results = load_results(path)  # no overrides given: the recorded ones
    assert [(r.row, r.state, r.metrics["step"]) for r in results] == [("base", "done", 3), ("wide", "done", 3)]
    assert all(r.config["train"]["max_steps"] == 3 for r in results)
    ran = {r.row: len(calls(r.run_dir)) for r in results}
    assert ran == {"base": 1, "wide": 1}

    assert main(["status", str(path)]) == 0
    captured = capsys.readouterr()
    assert "sweep t: 2 done, 0 running, 0 waiting, 0 failed" in captured.out
    assert "using the command-line overrides recorded with this sweep: train.max_steps=3" in captured.err

    assert main(["table", str(path), "--format", "json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert [(r["row"], r["n_done"], r["n_trials"]) for r in table["rows"]] == [("base", 1, 1), ("wide", 1, 1)]

    assert main(["sweep", str(path)]) == 0  # without repeating the overrides: nothing to do
    assert "0 new trial(s)" in capsys.readouterr().out
    assert {r.row: len(calls(r.run_dir)) for r in load_results(path)} == ran


def test_different_overrides_replace_the_recorded_ones_and_say_so(write_sweep, fake_trainer, capsys):
    path = write_sweep(rows=ROWS[:1])
    assert main(["sweep", str(path), "train.max_steps=3"]) == 0
    capsys.readouterr()
    assert main(["sweep", str(path), "train.max_steps=4", "--dry-run"]) == 0  # a dry run records nothing
    assert "differ from those recorded with this sweep (train.max_steps=3)" in capsys.readouterr().err
    store = SweepStore.for_sweep(open_sweep(path).sweep)
    assert store.recorded_overrides() == ("train.max_steps=3",)

    assert main(["sweep", str(path), "train.max_steps=4"]) == 0
    assert "`ablate sweep` records them in their place" in capsys.readouterr().err
    assert store.recorded_overrides() == ("train.max_steps=4",)
    (r,) = load_results(path)
    assert r.state == "done" and r.metrics["step"] == 4

    assert main(["status", str(path)]) == 0
    assert "holds 1 trial(s) no longer in sweep.yaml" in capsys.readouterr().out  # the max_steps=3 one

    opened = open_sweep(path, clear_overrides=True)  # back to the file as written (max_steps 6)
    assert opened.sweep.overrides == () and "cleared" in opened.notes[0]
    assert opened.sweep.trials[0].config["train"]["max_steps"] == 6


def test_a_store_written_before_overrides_were_recorded_reads_as_none(write_sweep):
    path = write_sweep(rows=ROWS[:1])
    opened = open_sweep(path)
    opened.store.sync(opened.sweep)
    opened.store.storage.set_study_user_attr(opened.store._study_id, "overrides", None)  # an older store
    assert opened.store.recorded_overrides() is None
    again = open_sweep(path)
    assert again.notes == () and [v.state for v in trial_states(again.store, again.sweep)] == ["waiting"]
