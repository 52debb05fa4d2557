"""Bad sweep input is one line (what, where, what to do), exit 2, at `--dry-run` already, and nothing
is stored or launched; a store with odd attributes still shows. All in-process, no worker started."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from sweep_harness import one_line_error as _one_line_error

from ablate.cli import main
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.plan import trial_states
from ablate.sweep.store.store import SweepStore


def _store_file(path: Path) -> Path:
    return path.parent / ".ablate" / "t.db"


def _no_sbatch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_slurm_without_sbatch_plans_at_dry_run_and_fails_before_the_store(write_sweep, capsys, monkeypatch, tmp_path):
    path = write_sweep(launcher={"name": "slurm"})
    _no_sbatch(monkeypatch, tmp_path)
    assert main(["sweep", str(path), "--dry-run"]) == 0  # a laptop plans a cluster sweep
    out, err = capsys.readouterr()
    assert "1 trials" in out
    assert err.count("\n") == 1 and err.startswith("note:") and "`sbatch` is not on PATH" in err
    assert main(["sweep", str(path)]) == 2
    err = _one_line_error(capsys)
    assert "sbatch" in err and str(path) in err
    assert not _store_file(path).exists()  # nothing stored


def _big_grid(write_sweep) -> Path:
    grid = {"model.dropout": [i / 1000 for i in range(100)], "train.warmup_steps": list(range(1, 101))}
    return write_sweep(seeds=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], rows=[{"name": "g", "grid": grid}])


def test_a_huge_grid_is_counted_not_built_and_needs_max_trials(write_sweep, capsys):
    path = _big_grid(write_sweep)  # 100 x 100 x 10 seeds = 100,000 trials
    t0 = time.monotonic()
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert time.monotonic() - t0 < 5  # counted from list lengths; building them took ~2 hours
    err = _one_line_error(capsys)
    assert "100,000 trials" in err and "--max-trials 100000" in err and "'g' 100,000" in err
    assert main(["sweep", str(path)]) == 2
    assert "--max-trials" in _one_line_error(capsys)
    assert not _store_file(path).exists()


def test_max_trials_confirms_and_also_lowers_the_limit(write_sweep, capsys):
    path = write_sweep(rows=[{"name": "g", "grid": {"model.dropout": [0.0, 0.1, 0.2]}}])
    assert main(["sweep", str(path), "--dry-run", "--max-trials", "2"]) == 2
    assert "3 trials" in _one_line_error(capsys)
    assert main(["sweep", str(path), "--dry-run", "--max-trials", "3"]) == 0


def test_dry_run_totals_keep_significant_digits(write_sweep, capsys):
    assert main(["sweep", str(write_sweep()), "--dry-run"]) == 0
    total = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("total:")][0]
    assert "0.0 device-hours" not in total and "e-" in total.split("FLOPs,")[1]


@pytest.mark.parametrize(
    "store, where",
    [("sqlite:///{blocker}/x.db", "is a file"), ("journal:{blocker}/sub/x.journal", "is a file")],
)
def test_an_unwritable_store_fails_at_dry_run(write_sweep, capsys, tmp_path, store, where):
    blocker = tmp_path / "somefile"
    blocker.write_text("not a folder")
    path = write_sweep(store=store.format(blocker=blocker))
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = _one_line_error(capsys)
    assert where in err and str(blocker) in err and "store" in err and "writable" in err
    assert blocker.read_text() == "not a folder"


def test_a_store_in_an_unwritable_place_fails_at_dry_run(write_sweep, capsys):
    path = write_sweep(store="sqlite:////proc/ablate-x.db")
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = _one_line_error(capsys)
    assert "cannot create files in /proc" in err


def test_a_plugin_that_raises_is_one_line(write_sweep, capsys, tmp_path):
    (tmp_path / "broken_plugin.py").write_text("import os\n\nraise RuntimeError('no GPU driver here')\n")
    path = write_sweep(imports=["broken_plugin"])
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = _one_line_error(capsys)
    assert "'broken_plugin' raised RuntimeError: no GPU driver here" in err
    assert "broken_plugin.py:3" in err and "imports" in err
    (tmp_path / "syntax_plugin.py").write_text("def f(:\n")
    assert main(["status", str(write_sweep(imports=["syntax_plugin"]))]) == 2
    assert "syntax_plugin.py:1" in _one_line_error(capsys)


def test_a_bad_value_in_a_row_names_the_row_only(write_sweep, capsys):
    path = write_sweep(
        overrides=["train.max_steps=6"],
        rows=[{"name": "base"}, {"name": "bad drop", "overrides": ["model.dropout=1.5"]}],
    )
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = _one_line_error(capsys)
    assert len(err) < 200, err
    assert "'bad drop'" in err and "model.dropout" in err
    assert "overrides" not in err.split("model.dropout")[0].replace("row 'bad drop'", "")


def test_status_tolerates_attributes_of_another_type(write_sweep, capsys):
    path = write_sweep(rows=[{"name": "base"}, {"name": "h4", "overrides": ["model.n_heads=4"]}])
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    from optuna.trial import TrialState

    first, second = store.attempts()
    store.storage.set_trial_user_attr(first.storage_id, "metrics", [1.0, 2.0])
    store.storage.set_trial_state_values(first.storage_id, TrialState.COMPLETE)
    store.storage.set_trial_user_attr(second.storage_id, "attempt", "zero")
    store.storage.set_trial_user_attr(second.storage_id, "failure", ["x"])
    store.storage.set_trial_state_values(second.storage_id, TrialState.FAIL)
    assert main(["status", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "base" in out and "done 1" in out and "h4" in out and "failed 1" in out
    assert "trial 'base' seed 1: the store sqlite:///" in out and "metrics (list)" in out
    assert "attempt (str)" in out and "failure (list)" in out
    assert main(["table", str(path), "--format", "csv"]) == 0  # the report reads the same tolerant view
    assert "Traceback" not in capsys.readouterr().err


def test_progress_shows_a_dash_before_the_first_validation(write_sweep, tmp_path):
    from ablate.sweep.launch.progress import sweep_eta, trial_lines
    from ablate.sweep.store.state import Attempt, TrialView

    sweep = load_sweep(write_sweep(rows=[{"name": "a"}, {"name": "b", "overrides": ["model.n_heads=4"]}]))
    run_dir = Path(sweep.trials[0].run_dir)
    run_dir.mkdir(parents=True)
    (run_dir / "progress.json").write_text('{"step": 2, "max_steps": 6, "val/ppl": NaN, "elapsed_s": 20, "eta_s": 40}')
    running = TrialView.of(sweep.trials[0], [Attempt(0, 1, "RUNNING", {"ablate_id": sweep.trials[0].trial_id})])
    lines = trial_lines([running, TrialView.of(sweep.trials[1])])
    assert lines[0].ppl is None
    from ablate.sweep.launch.progress import _ppl

    assert _ppl(lines[0]) == "-" and _ppl(lines[1]) == ""
    assert sweep_eta(lines) == pytest.approx(40 + 60)  # the running one's ETA + one more at its span


def test_sweep_eta_counts_start_up_and_evaluation_as_measured() -> None:
    from ablate.sweep.launch.progress import TrialLine, sweep_eta

    def line(state: str, **kw) -> TrialLine:
        base = dict(row="r", seed=1, state=state, attempts=1, step=None, max_steps=None, ppl=None, failure=None)
        return TrialLine(**{**base, "elapsed_s": None, "eta_s": None, **kw})

    done = line("done", elapsed_s=100.0, startup_s=20.0, eval_s=10.0)  # 120 s a trial, 10 of them evaluating
    running = line("running", elapsed_s=30.0, eta_s=50.0)  # training ETA only
    # the running one: 50 s of training + 10 s of evaluation; two waiting ones at 120 s each, on one slot
    assert sweep_eta([done, running, line("waiting"), line("waiting")]) == pytest.approx(60 + 2 * 120)


def test_piped_progress_prints_the_tally_and_eta_regularly(write_sweep, capsys, monkeypatch):
    from ablate.sweep.launch.progress import ProgressView
    from ablate.sweep.store.state import TrialView

    sweep = load_sweep(write_sweep())
    view = ProgressView(sweep, live=False)
    view.every_s = 0.0
    view.update([TrialView.of(sweep.trials[0])])
    out = capsys.readouterr().out
    assert "t: 0 done, 0 running, 1 waiting, 0 failed" in out and "ETA ?" in out


def test_wandb_unreachable_falls_back_to_offline_fast(write_sweep, capsys, monkeypatch):
    from ablate.sweep.wandb_net import resolve_modes

    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.delenv("WANDB_MODE", raising=False)
    t0 = time.monotonic()
    line = resolve_modes(["auto", None], "s.yaml", "ablate sync s.yaml")
    assert time.monotonic() - t0 < 5
    assert os.environ["WANDB_MODE"] == "offline"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and line in err and "127.0.0.1:9 unreachable" in err and "ablate sync s.yaml" in err
    with pytest.raises(Exception, match="W&B mode online, but 127.0.0.1:9 is unreachable"):
        resolve_modes(["online"], "s.yaml", "ablate sync s.yaml")
    monkeypatch.delenv("WANDB_API_KEY")
    monkeypatch.delenv("WANDB_MODE")
    assert resolve_modes(["auto"], "s.yaml", "x") is None  # no key: offline anyway, no probe


def test_the_summary_run_is_quiet_logged_once_per_result_and_synced(write_sweep, capfd, monkeypatch, tmp_path):
    from ablate.report.commands import load_table
    from ablate.report.wandb_summary import log_summary
    from ablate.sweep.commands import _offline_runs

    for var, sub in (("WANDB_DIR", "wd"), ("WANDB_CACHE_DIR", "wc"), ("WANDB_CONFIG_DIR", "wcfg")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.delenv("WANDB_SILENT", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    sweep = load_sweep(write_sweep(wandb={"mode": "offline"}))
    table = load_table(sweep)
    capfd.readouterr()
    first = log_summary(sweep, table, None)
    out, err = capfd.readouterr()
    assert "wandb:" not in out + err  # W&B's banner lines
    assert first.endswith(f"(offline; upload it and the trials' runs with `ablate sync {sweep.path}`)")
    runs = _offline_runs(sweep)
    assert len(runs) == 1 and first.startswith(str(runs[0].parent.parent))  # `ablate sync` uploads it
    again = log_summary(sweep, table, None)
    assert again.startswith("results unchanged since the last one") and len(_offline_runs(sweep)) == 1


def test_sbatch_that_cannot_reach_a_controller_is_one_line_and_leaves_the_trials_waiting(
    write_sweep, capsys, monkeypatch, tmp_path
):
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    fatal = "sbatch: fatal: Could not establish a configuration source"
    for tool in ("sbatch", "sacct", "squeue", "scancel", "srun"):  # SLURM's client tools, no controller
        (fake / tool).write_text(f"#!/bin/sh\necho '{fatal}' >&2\nexit 1\n")
        (fake / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    path = write_sweep(launcher={"name": "slurm", "poll_s": 0.1})
    assert main(["sweep", str(path)]) == 2
    err = _one_line_error(capsys)
    assert "Could not establish a configuration source" in err and "stay waiting" in err
    store = SweepStore.for_sweep(load_sweep(path))
    assert [a.state for a in store.attempts()] == ["WAITING"]
    assert store.attempts()[0].attrs.get("slurm_submitting") is None  # no reservation left: a rerun submits it


def test_report_commands_never_download_a_corpus(write_sweep, capsys, monkeypatch, tmp_path):
    from ablate.data import download

    asked: list[str] = []

    def network(request):  # the report swallows a failed download: record it instead of failing here
        asked.append(request.full_url)
        raise OSError("no network in this test")

    monkeypatch.setattr(download, "_open", network)
    monkeypatch.setenv("ABLATE_CACHE", str(tmp_path / "empty-cache"))
    path = write_sweep(overrides=["data.corpus=multi30k"])
    outs = []
    for command in (["table", str(path)], ["table", str(path), "--format", "json"], ["status", str(path)]):
        assert main(command) == 0, capsys.readouterr()
        outs.append("".join(capsys.readouterr()))
        assert "Traceback" not in outs[-1]
    assert asked == []
    assert "Unigram floor: not computed yet" in outs[0]


def test_a_renamed_sweep_file_says_so_and_reuses_finished_trials_on_request(write_sweep, capsys, fake_trainer):
    import yaml as _yaml

    old = write_sweep(filename="old.yaml", rows=[{"name": "a"}, {"name": "b", "overrides": ["model.n_heads=4"]}])
    data = _yaml.safe_load(old.read_text())
    del data["name"]  # named after the file, as by default
    old.write_text(_yaml.safe_dump(data))
    sweep = load_sweep(old)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    first = store.attempts()[0]
    assert store.claim(first.storage_id, "t")
    store.finish(first.storage_id, {"val/ppl": 7.0, "step": 6})
    other = write_sweep(filename="other.yaml", rows=[{"name": "c", "overrides": ["model.d_ff=8"]}])
    assert main(["status", str(other)]) == 0  # another sweep in the store, none of its trials finished there
    assert "renamed sweep file" not in capsys.readouterr().out
    new = old.rename(old.with_name("new.yaml"))
    import optuna

    optuna.create_study(storage=store.url, study_name="old:a")  # a search's row study: not a sweep to reuse
    assert main(["status", str(new)]) == 0
    out = capsys.readouterr().out
    assert "not started" in out and "'old' (1 finished trial(s) with this sweep's trial ids)" in out
    assert "--reuse old" in out
    assert main(["table", str(new)]) == 0  # every row waiting: the table says why, as status does
    assert "--reuse old" in capsys.readouterr().err
    assert main(["sweep", str(new), "--reuse", "old"]) == 0
    out = capsys.readouterr().out
    assert "reused 1 finished trial(s) of sweep 'old'" in out
    views = trial_states(SweepStore.for_sweep(load_sweep(new)), load_sweep(new))
    assert sorted(v.state for v in views) == ["done", "done"]
    assert views[0].metrics["val/ppl"] == 7.0  # the reused result, not trained again
    assert main(["sweep", str(new), "--reuse", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no sweep of that name" in err and "(found: old)" in err


def test_the_live_table_is_drawn_on_change_at_most_once_a_second(write_sweep, monkeypatch):
    """No refresh thread: a draw when a trial moves (not within a second of the last), else every 10 s."""
    import rich.live

    from ablate.sweep.launch import progress
    from ablate.sweep.store.state import TrialView

    draws: list[float] = []
    now = [1000.0]

    class Recorder:
        def __init__(self, renderable, auto_refresh=True, **kw):
            assert auto_refresh is False  # rich's thread would redraw twice a second whatever changed

        def start(self, refresh=False):
            draws.append(now[0])

        def update(self, renderable, refresh=False):
            draws.append(now[0])

    monkeypatch.setattr(rich.live, "Live", Recorder)
    monkeypatch.setattr(progress.time, "time", lambda: now[0])
    sweep = load_sweep(write_sweep())
    view = progress.ProgressView(sweep, live=True)
    step = [0]
    line = progress.trial_lines([TrialView.of(sweep.trials[0])])[0]
    monkeypatch.setattr(progress, "trial_lines", lambda trials, kept: [replace(line, state="running", step=step[0])])
    for t, s in [(0, 0), (0.2, 0), (0.4, 1), (1.5, 1), (1.6, 2), (3.0, 2), (9.0, 2), (13.5, 2)]:
        now[0], step[0] = 1000.0 + t, s
        view.update([])
    assert [d - 1000.0 for d in draws] == [0.0, 1.5, 3.0, 13.5]  # start; step 1; step 2; the clocks


def test_a_ctrl_c_ends_the_wait_between_passes(write_sweep, monkeypatch):
    """An idle controller waits up to half a heartbeat interval between passes (minutes, with a slow
    poll): a Ctrl-C must end that wait, not sit it out. It asks for no sleep over a quarter second."""
    import signal

    from ablate.sweep.launch import base

    launcher = {"name": "local", "slots": 1, "poll_s": 300}
    path = write_sweep(launcher=launcher, heartbeat={"interval_s": 600, "grace_s": 1200})
    sweep = load_sweep(path)
    asked: list[float] = []

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        os.kill(os.getpid(), signal.SIGINT)  # the Ctrl-C arrives while the controller waits

    class Idle(base.Launcher):
        def start(self, waiting: list) -> None:
            pass  # the trials stay waiting: the controller has nothing to do but wait

    monkeypatch.setattr(base.time, "sleep", sleep)
    with pytest.raises(KeyboardInterrupt):
        Idle(sweep, SweepStore.for_sweep(sweep)).run()
    assert asked and max(asked) <= 0.25, asked
