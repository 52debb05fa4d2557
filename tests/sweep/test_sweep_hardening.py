"""Mistakes and faults a new user meets, each answered in one line with exit 2 and nothing written:
a store that is not a database, read commands that must write nothing, and the like."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_harness import one_line_error

from ablate.cli import main
from ablate.sweep.file.spec import load_sweep
from ablate.sweep.store.store import SweepStore


@pytest.mark.parametrize("verb", [["sweep", "--dry-run"], ["status"], ["table"], ["sweep"]])
def test_a_store_that_is_not_a_database_is_one_line(write_sweep, tmp_path: Path, capsys, verb: list[str]) -> None:
    path = write_sweep()
    path = write_sweep(store=f"sqlite:///{path}")  # the sweep file itself: YAML, not SQLite
    before = path.read_bytes()
    assert main([verb[0], str(path), *verb[1:]]) == 2
    err = one_line_error(capsys)
    assert "is not a SQLite database" in err and "store:" in err
    assert path.read_bytes() == before and not Path(f"{path}.ablate-lock").exists()
    assert not (tmp_path / "runs").exists()


def test_read_commands_write_nothing_beside_the_store(write_sweep, capsys) -> None:
    path = write_sweep()
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    folder = path.parent / ".ablate"
    for lock in folder.glob("*.ablate-lock"):
        lock.unlink()
    before = sorted(p.name for p in folder.iterdir())
    for verb in (["sweep", str(path), "--dry-run"], ["status", str(path)], ["table", str(path)]):
        assert main(verb) == 0
    assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_runs_folder_that_cannot_be_made_is_refused_before_anything_is_stored(
    write_sweep, tmp_path: Path, capsys, dry_run: bool
) -> None:
    (tmp_path / "blocker").write_text("a file where the runs folder should go")
    path = write_sweep(runs="blocker/runs")
    assert main(["sweep", str(path), *(["--dry-run"] if dry_run else [])]) == 2
    err = one_line_error(capsys)
    assert "runs:" in err and "is not a folder" in err
    assert not (tmp_path / ".ablate").exists()  # no store


def test_a_worker_that_cannot_make_its_run_dir_fails_the_attempt_as_an_error(write_sweep, tmp_path: Path) -> None:
    """It stayed RUNNING (an OSError traceback) until reaped, and each rerun spent a retry on it."""
    from ablate.sweep.launch.worker import run_trial

    path = write_sweep()
    sweep = load_sweep(path)
    store = SweepStore.for_sweep(sweep)
    store.sync(sweep)
    sweep.runs_dir.parent.mkdir(parents=True, exist_ok=True)
    sweep.runs_dir.write_text("a file where the sweep's runs folder should go")
    (attempt,) = store.attempts()
    trained = []
    state = run_trial(store.url, sweep.name, attempt.storage_id, "tok", trial_fn=lambda *a, **k: trained.append(1))
    assert state == "FAIL" and trained == []
    (after,) = store.attempts()
    assert (
        after.state == "FAIL" and after.kind == "error" and "cannot create the run directory" in after.attrs["failure"]
    )


def test_train_into_a_file_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "taken").write_text("x")
    root = Path(__file__).resolve().parents[2]
    assert main(["train", str(root / "experiments/mini.yaml"), "--output", str(tmp_path / "taken")]) == 2
    assert "a file of that name is there" in one_line_error(capsys)


def test_the_dry_run_refuses_a_trial_with_more_devices_than_its_slot(write_sweep, capsys) -> None:
    rows = [{"name": "base", "group": "base", "paper": "base", "overrides": ["trainer.devices=4"]}]
    path = write_sweep(rows=rows, launcher={"name": "local", "slots": 2, "devices_per_trial": 1})
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert "trainer.devices=4" in one_line_error(capsys)


def test_the_dry_run_refuses_a_reuse_of_no_such_sweep(write_sweep, capsys) -> None:
    path = write_sweep()
    assert main(["sweep", str(path), "--dry-run", "--reuse", "nosuchsweep"]) == 2
    assert "--reuse nosuchsweep: no sweep of that name" in one_line_error(capsys)
    assert not (path.parent / ".ablate").exists()


@pytest.mark.parametrize("name", [".", "..", ".hidden", "..."])
def test_a_name_that_is_a_folder_trick_is_refused(write_sweep, capsys, name: str) -> None:
    path = write_sweep(name=name)
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert "must hold a letter or digit" in one_line_error(capsys)


def test_two_sweep_files_under_one_name_in_one_store_are_refused(write_sweep, capsys) -> None:
    first = write_sweep(name="shared")
    sweep = load_sweep(first)
    SweepStore.for_sweep(sweep).sync(sweep)  # as `ablate sweep first.yaml` leaves it
    second = write_sweep(name="shared", filename="second.yaml", seeds=[1, 2])
    for dry in (True, False):
        assert main(["sweep", str(second), *(["--dry-run"] if dry else [])]) == 2
        err = one_line_error(capsys)
        assert "name 'shared' is taken" in err and "sweep.yaml" in err
    assert main(["sweep", str(first), "--dry-run"]) == 0  # the file that owns the name runs on
    first.rename(first.parent / "moved.yaml")  # gone: the name is free again (a renamed file)
    assert main(["sweep", str(second), "--dry-run"]) == 0


def test_a_copied_project_folder_keeps_its_name(write_sweep, tmp_path: Path) -> None:
    """The copy's store, copied along, records the original file; the two open different stores, so the
    copy's sweep is no clash (it was refused)."""
    import shutil

    first = write_sweep(name="shared")
    sweep = load_sweep(first)
    SweepStore.for_sweep(sweep).sync(sweep)
    copy = tmp_path.parent / f"{tmp_path.name}-copy"
    shutil.copytree(tmp_path, copy)
    assert main(["sweep", str(copy / first.name), "--dry-run"]) == 0


def test_in_a_copied_project_folder_the_copied_file_keeps_the_name(write_sweep, tmp_path: Path, capsys) -> None:
    """Another file of the copy that takes the name is the clash, not the copy of the file that ran (the
    store, copied along, names the original by its absolute path)."""
    import shutil

    first = write_sweep(name="shared")
    sweep = load_sweep(first)
    SweepStore.for_sweep(sweep).sync(sweep)
    copy = tmp_path.parent / f"{tmp_path.name}-copy"
    shutil.copytree(tmp_path, copy)
    intruder = copy / "second.yaml"
    intruder.write_text((copy / first.name).read_text())
    assert main(["sweep", str(intruder), "--dry-run"]) == 2
    err = one_line_error(capsys)
    assert "name 'shared' is taken" in err and str(copy / first.name) in err
    assert main(["sweep", str(copy / first.name), "--dry-run"]) == 0


def test_a_cluster_runs_folder_is_a_note_in_a_plan_made_elsewhere(write_sweep, tmp_path: Path, capsys) -> None:
    (tmp_path / "blocker").write_text("here, a file; on the cluster, its scratch folder")
    path = write_sweep(runs="blocker/runs", launcher={"name": "slurm"})
    assert main(["sweep", str(path), "--dry-run"]) == 0
    assert "runs:" in capsys.readouterr().err
