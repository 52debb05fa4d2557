"""More bad input found by trying what a new user would write: seeds numpy and torch refuse, rows of two
kinds of model, a translator on one-sided text, launcher settings past sense, overrides after a flag, a plot
into a folder that takes no file. Each is one line and exit 2 before anything is stored or trained."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sweep_harness import one_line_error

from ablate.cli import main

ROWS = [{"name": "base", "group": "base"}, {"name": "wide", "group": "A", "overrides": ["model.d_ff=48"]}]


def _nothing_written(folder: Path, *keep: str) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted({"exp.yaml", "sweep.yaml", *keep})


@pytest.mark.parametrize(
    "seeds,needle",
    [
        ([-1], "seeds: -1 is out of range; seeds are 0..4,294,967,295"),
        ([1, 2**32], "seeds: 4294967296 is out of range"),
        ({"start": 2, "max": 2**32}, "seeds.max must be at most 4,294,967,295"),
    ],
    ids=["negative", "past-32-bits", "adaptive-max"],
)
def test_a_seed_numpy_and_torch_refuse_is_refused_by_the_dry_run(write_sweep, capsys, seeds, needle) -> None:
    path = write_sweep(rows=ROWS, seeds=seeds)
    for extra in (["--dry-run"], []):
        assert main(["sweep", str(path), *extra]) == 2
        assert needle in one_line_error(capsys)
    _nothing_written(path.parent)


def test_a_train_seed_out_of_range_is_one_line_not_a_traceback(write_sweep, capsys, tmp_path) -> None:
    path = write_sweep(rows=ROWS)
    for seed in (-1, 2**32):
        assert (
            main(["train", str(path.parent / "exp.yaml"), f"train.seed={seed}", "--output", str(tmp_path / "r")]) == 2
        )
        assert f"train.seed: must be in 0..4,294,967,295 (numpy and torch take 32-bit unsigned seeds), got {seed}" in (
            one_line_error(capsys)
        )
    assert not (tmp_path / "r").exists()


def test_rows_of_two_kinds_of_model_are_refused_naming_a_row_of_each(write_sweep, capsys) -> None:
    lm = {"name": "lm", "group": "A", "overrides": ["model.arch=decoder", "data.block_size=16"]}
    path = write_sweep(rows=[*ROWS, lm])
    for command in (["sweep", "--dry-run"], ["sweep"], ["status"]):
        assert main([command[0], str(path), *command[1:]]) == 2
        err = one_line_error(capsys)
        assert "row 'base' (model.arch=encdec) and row 'lm' (model.arch=decoder) are different kinds of model" in err
    _nothing_written(path.parent)


def test_a_translator_on_one_sided_text_is_refused(write_sweep, capsys, tmp_path) -> None:
    (tmp_path / "t.txt").write_text("a b c\n")
    text = ["data.corpus=textfiles", f"data.root={tmp_path}", "data.args={train: {text: t.txt}}"]
    path = write_sweep(rows=[*ROWS, {"name": "copy", "group": "B", "overrides": text}])
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert "data.args.train: {text: t.txt} reads one file as both source and target" in one_line_error(capsys)


def test_overrides_after_a_flag_are_overrides(write_sweep, capsys) -> None:
    path = write_sweep(rows=ROWS)
    assert main(["sweep", str(path), "--dry-run", "train.max_steps=3", "--json"]) == 0
    assert '"steps": 3' in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:  # a flag argparse does not know is still its one line
        main(["sweep", str(path), "--dry-run", "--no-such-flag"])
    assert exc.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
    _nothing_written(path.parent)


@pytest.mark.parametrize("poll", [0, -1, ".inf"])
def test_a_poll_interval_that_is_not_a_pause_is_refused(write_sweep, capsys, poll) -> None:
    path = write_sweep(rows=ROWS, launcher={"name": "local", "slots": 1, "poll_s": poll})
    path.write_text(path.read_text().replace("'.inf'", ".inf"))
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert "launcher: poll_s must be a positive number of seconds" in one_line_error(capsys)


def test_slots_far_past_this_machines_cores_are_refused(write_sweep, capsys) -> None:
    from ablate.sweep.launch.local import SLOTS_PER_CORE

    cores = len(os.sched_getaffinity(0))
    path = write_sweep(rows=ROWS, launcher={"name": "local", "slots": SLOTS_PER_CORE * cores + 1})
    for extra in (["--dry-run"], []):
        assert main(["sweep", str(path), *extra]) == 2
        assert f"is more than {SLOTS_PER_CORE} worker processes per CPU core" in one_line_error(capsys)
    _nothing_written(path.parent)
    path = write_sweep(rows=ROWS, launcher={"name": "local", "slots": SLOTS_PER_CORE * cores})
    assert main(["sweep", str(path), "--dry-run"]) == 0


def test_a_plot_into_a_folder_that_takes_no_file_is_one_line(write_sweep, capsys, tmp_path) -> None:
    path = write_sweep(rows=ROWS)
    (tmp_path / "a-file").write_text("")
    for plot in ("/proc/ablate-no-such/t.png", str(tmp_path / "a-file" / "t.png")):
        for command in ("table", "compare"):
            args = [str(path)] * (2 if command == "compare" else 1)
            assert main([command, *args, "--plot", plot]) == 2
            assert f"--plot {plot}: cannot write in" in one_line_error(capsys)


def test_a_path_in_the_sweep_files_overrides_is_read_from_its_folder(write_sweep, tmp_path, monkeypatch) -> None:
    """data.root (and every path key) set in a sweep file's `overrides:` or a row's means a folder beside the
    file, as its `experiment:` and `runs:` do and an experiment file's paths do; the command line keeps the
    shell's meaning."""
    from ablate.sweep.file.spec import load_sweep

    rows = [
        *ROWS,
        {"name": "other", "group": "B", "overrides": ["data.root=theirs", "data.cache_dir=~/c", "model.d_ff=40"]},
    ]
    path = write_sweep(rows=rows, overrides=["data.root=mine", "logging.output_dir=out"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    trials = {t.row: t.config for t in load_sweep(path).trials}
    assert trials["base"]["data"]["root"] == str(path.parent / "mine")
    assert trials["other"]["data"]["root"] == str(path.parent / "theirs")
    assert trials["other"]["data"]["cache_dir"] == str(Path("~/c").expanduser())
    assert trials["wide"]["data"]["root"] == str(path.parent / "mine")
    on_the_command_line = {t.row: t.config for t in load_sweep(path, ["data.root=cli"]).trials}
    assert on_the_command_line["base"]["data"]["root"] == "cli"
