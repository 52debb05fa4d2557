"""Bad input found by trying what a user might write: each is one line and exit 2 before anything is
stored or prepared, and a read command writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sweep_harness import one_line_error

from ablate.cli import main

ROWS = [{"name": "base", "group": "base"}, {"name": "wide", "group": "A", "overrides": ["model.d_ff=48"]}]


def _nothing_written(folder: Path, *keep: str) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted({"exp.yaml", "sweep.yaml", *keep})


def test_a_runs_folder_that_cannot_be_made_is_refused_by_the_dry_run_and_the_run(write_sweep, capsys) -> None:
    # permission bits let root "write" under /proc; making a folder there fails for everyone
    path = write_sweep(rows=ROWS, runs="/proc/ablate-no-such/runs")
    for extra in (["--dry-run"], []):
        assert main(["sweep", str(path), *extra]) == 2
        assert "runs: /proc/ablate-no-such/runs" in one_line_error(capsys)
    _nothing_written(path.parent)


def test_a_journal_store_that_is_the_sweep_file_is_refused_and_reads_write_no_lock(write_sweep, capsys) -> None:
    path = write_sweep(rows=ROWS, store="journal:sweep.yaml")
    for command in (["sweep", "--dry-run"], ["sweep"], ["status"], ["table"]):
        assert main([command[0], str(path), *command[1:]]) == 2, command
        assert "is not an Optuna journal file" in one_line_error(capsys)
    _nothing_written(path.parent)


def test_reading_a_journal_store_leaves_no_lock_file(write_sweep, fake_trainer, capsys) -> None:
    path = write_sweep(rows=ROWS, store="journal:t.journal")
    assert main(["sweep", str(path)]) == 0
    for lock in path.parent.glob("*.ablate-lock"):
        lock.unlink()
    for command in (["sweep", "--dry-run"], ["status"], ["table"]):
        assert main([command[0], str(path), *command[1:]]) == 0, command
    assert not list(path.parent.glob("*.ablate-lock"))


def test_local_files_that_are_not_there_are_refused_by_the_dry_run(write_sweep, capsys, tmp_path) -> None:
    path = write_sweep(rows=ROWS)
    data = [f"data.root={tmp_path / 'nowhere'}", "data.corpus=textfiles", "data.args={train: tr, valid: va, test: te}"]
    for extra in (["--dry-run"], []):
        assert main(["sweep", *extra, str(path), *data]) == 2
        assert "nowhere/tr.en: no such file (corpus textfiles)" in one_line_error(capsys)
    _nothing_written(path.parent)


def test_status_and_table_of_a_grid_over_the_limit_that_never_ran_are_one_line(write_sweep, capsys) -> None:
    path = write_sweep(rows=ROWS, seeds=list(range(1, 50_002)))
    for command in ("status", "table", "plan"):
        assert main([command, str(path)]) == 2
        assert "100,002 trials, over the limit of 500, and has not run" in one_line_error(capsys)


def test_status_and_table_of_a_file_grown_past_the_limit_since_it_ran_are_one_line(
    write_sweep, fake_trainer, capsys
) -> None:
    path = write_sweep(rows=ROWS)
    assert main(["sweep", str(path)]) == 0
    capsys.readouterr()
    path = write_sweep(rows=ROWS, seeds=list(range(1, 302)))  # 602 trials: the store holds the 2 that ran
    for command in ("status", "table", "plan"):
        assert main([command, str(path)]) == 2
        assert "602 trials, over the limit of 500, and ran at 2 (the file has grown since)" in one_line_error(capsys)
    assert main(["sweep", str(path), "--max-trials", "602", "--dry-run"]) == 0  # seen as the line says
    capsys.readouterr()
    path = write_sweep(rows=ROWS, seeds=[1, 2])  # back under the limit: read as usual
    assert main(["status", str(path)]) == 0


def test_a_sweep_that_ran_past_the_limit_is_read(write_sweep, capsys) -> None:
    from ablate.sweep.file.spec import load_sweep
    from ablate.sweep.store.store import SweepStore

    path = write_sweep(rows=ROWS, seeds=list(range(1, 302)))
    sweep = load_sweep(path)
    SweepStore.for_sweep(sweep).sync(sweep)  # what `ablate sweep --max-trials 602` records before it launches
    assert main(["status", str(path)]) == 0
    assert "wide" in capsys.readouterr().out


@pytest.mark.parametrize("given", ["data.max_tokens=512", "train.accumulate_grad_batches=2"])
def test_a_split_key_beside_global_tokens_is_refused(write_sweep, capsys, given: str) -> None:
    rows = [ROWS[0], {"name": "big", "group": "A", "overrides": ["train.global_tokens=1024", given]}]
    assert main(["sweep", "--dry-run", str(write_sweep(rows=rows))]) == 2
    err = one_line_error(capsys)
    assert f"row 'big': {given.split('=')[0]} is set, but with train.global_tokens=1024 ablate chooses it" in err
    path = write_sweep(rows=ROWS)
    assert main(["sweep", "--dry-run", str(path), "train.global_tokens=1024", given]) == 2
    assert one_line_error(capsys).startswith(f"error: command line: {given.split('=')[0]} is set")


@pytest.mark.parametrize(
    ("launcher", "says"),
    [
        ("slurmm", "--launcher 'slurmm': unknown launcher 'slurmm'; did you mean 'slurm'?"),
        ("{name: local, slots: -1}", "--launcher '{name: local, slots: -1}': slots must be a positive integer"),
        ("missing.yaml", "--launcher 'missing.yaml': no such file"),
    ],
)
def test_launcher_option_errors_name_the_option(write_sweep, capsys, launcher: str, says: str) -> None:
    assert main(["sweep", "--dry-run", str(write_sweep(rows=ROWS)), "--launcher", launcher]) == 2
    assert says in one_line_error(capsys)


def test_the_launcher_option_reads_a_yaml_file(write_sweep, capsys, tmp_path) -> None:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "slurm", "partition": "gpu"}))
    path = write_sweep(rows=ROWS)  # launcher: local in the file
    assert main(["sweep", "--dry-run", str(path), "--launcher", str(tmp_path / "cluster.yaml")]) == 0
    assert "2 trials, 2 rows, launcher slurm" in capsys.readouterr().out
