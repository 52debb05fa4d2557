"""`ablate table` and the end-of-sweep summary on a real sweep file and a real store (results written
through SweepStore as a worker would, nothing trained), including the W&B summary run, written
offline and read back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ablate.cli import main
from ablate.report.commands import print_summary
from ablate.report.wandb_summary import TABLE_COLUMNS
from ablate.sweep.loader import open_sweep
from ablate.sweep.plan import trial_states

ROOT = Path(__file__).resolve().parents[2]

SWEEP = """\
name: report-test
experiment: {experiment}
overrides: [model.d_model=64, model.d_ff=128, model.n_heads=8, model.n_layers=2, train.max_steps=10]
seeds: [1, 2]
launcher: {{name: local, slots: 1}}
wandb: {{project: ablate-report-test}}
rows:
  - {{name: base, group: base, paper: base}}
  - {{name: "h=1", group: A, paper: A1, overrides: [model.n_heads=1, model.d_k=64, model.d_v=64]}}
  - {{name: "N=1", group: C, paper: C1, overrides: [model.n_layers=1]}}
  - {{name: "eps_ls=0.0", group: D, paper: D3, overrides: [train.label_smoothing=0.0]}}
"""

# (row, seed) -> (PPL, BLEU); absent: still waiting
FAKE = {
    ("base", 1): (8.0, 12.0),
    ("base", 2): (8.4, 11.6),
    ("h=1", 1): (8.9, 11.0),
    ("h=1", 2): (9.1, 10.8),
    ("N=1", 1): (10.5, 9.0),
    ("eps_ls=0.0", 1): (7.5, 11.9),
}


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    path = tmp_path / "report-test.yaml"
    path.write_text(SWEEP.format(experiment=ROOT / "experiments" / "mini.yaml"), encoding="utf-8")
    return path


@pytest.fixture
def fake_results(sweep_file: Path) -> None:
    """The sweep's real trials (real configs and ids) in its real store, those in FAKE finished."""
    opened = open_sweep(sweep_file)
    store = opened.store
    store.sync(opened.sweep)
    for view in trial_states(store, opened.sweep):
        if (view.row, view.seed) in FAKE:
            ppl, bleu = FAKE[(view.row, view.seed)]
            assert store.claim(view.latest.storage_id, "test")
            store.finish(view.latest.storage_id, {"val/ppl": ppl, "val/bleu": bleu, "params": 100_000})


def test_table_before_any_trial_ran_shows_every_row_waiting(sweep_file: Path, capsys) -> None:
    assert main(["table", str(sweep_file), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert out.count("0/2 (2 waiting)") == 4
    assert "| (A)  | h=1 [A1]" in out
    assert main(["table", str(sweep_file)]) == 0  # the terminal layout
    text = capsys.readouterr().out
    assert text.count("0/2 (2 wait)") == 4 and "(A)   h=1 [A1]" in text
    assert max(map(len, text.splitlines())) <= 110 < max(map(len, out.splitlines()))


def test_table_formats_and_plot(sweep_file: Path, fake_results, tmp_path: Path, capsys) -> None:
    assert main(["table", str(sweep_file), "--format", "md"]) == 0
    md = capsys.readouterr().out
    base_line = next(line for line in md.splitlines() if line.startswith("| base |"))
    assert [c.strip() for c in base_line.split("|")[3:6]] == ["2", "64", "128"]  # N, d_model, d_ff
    assert "8.20 ± 0.28" in md and "9.00 ± 0.14 (+0.80)" in md  # mean ± std over the two seeds, delta vs base
    assert "1/2 (1 waiting)" in md
    assert "PPL 3/3 (100%), BLEU 2/3 (67%)" in md  # eps_ls=0.0: BLEU +0.1 here, -0.5 in the paper

    png = tmp_path / "t3.png"
    assert main(["table", str(sweep_file), "--format", "json", "--plot", str(png)]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)  # stdout holds only the JSON; the plot note goes to stderr
    assert [r["row"] for r in data["rows"]] == ["base", "h=1", "N=1", "eps_ls=0.0"]
    assert data["fidelity"]["spearman_ppl"] == pytest.approx(1.0)
    assert png.stat().st_size > 10_000 and "plot written" in captured.err

    assert main(["table", str(sweep_file), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("base,base,base,2,64,128,8,8,8,0.1,0.1,10,")
    assert main(["table", str(sweep_file), "--plot", str(tmp_path / "t.pdf")]) == 2
    assert "give a file name ending in .png" in capsys.readouterr().err


# What each read command must not import (each costs 0.1-3 s: torch 2-3 s, Lightning 5-6 s, scipy.stats
# 0.6 s, SQLAlchemy 0.23 s, Optuna 0.2 s, numpy 0.08 s): a SQLite store is read with Python's sqlite3,
# statistics are imported where a verdict is computed (the table), numpy where prepared data is read.
HEAVY = {"torch", "lightning", "pytorch_lightning", "matplotlib", "wandb", "optuna", "sqlalchemy", "scipy"}
HEAVY |= {"sacrebleu", "submitit", "ray", "pandas"}
COMMANDS = {  # sentencepiece (12 ms) names the prepared data's folder: the dry run and the table look it up
    "status": (["status"], HEAVY | {"numpy", "sentencepiece"}),
    "dry run": (["sweep", "--dry-run"], HEAVY | {"numpy"}),  # numpy only for prepared data's epochs
    "table": (["table", "--format", "csv"], HEAVY),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("results", [False, True], ids=["unrun", "finished"])
def test_the_read_commands_import_nothing_heavy(
    sweep_file: Path, request, results: bool, command: str, tmp_path: Path
) -> None:
    if results:
        request.getfixturevalue("fake_results")
    args, heavy = COMMANDS[command]
    code = (
        "import sys; from ablate.cli import main; rc = main(sys.argv[1:]);"
        f"print('rc', rc, sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(heavy)!r})))"
    )
    env = {**os.environ, "ABLATE_CACHE": str(tmp_path / "empty-cache"), "WANDB_MODE": "disabled"}
    cmd = [sys.executable, "-c", code, args[0], str(sweep_file), *args[1:]]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    assert out.stdout.splitlines()[-1] == "rc 0 []", out.stderr[-2000:]


@pytest.mark.skipif(
    shutil.which("wandb") is None and not (Path(sys.executable).parent / "wandb").exists(),
    reason="the wandb command line is not installed",
)
def test_summary_prints_plots_and_logs_an_offline_wandb_run(
    sweep_file: Path, fake_results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    for key, value in {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DIR": str(tmp_path / "wb"),
        "WANDB_CACHE_DIR": str(tmp_path / "wbcache"),
        "WANDB_CONFIG_DIR": str(tmp_path / "wbcfg"),
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    report = print_summary(open_sweep(sweep_file).sweep)
    out = capsys.readouterr().out
    assert "Table 3 reproduction: report-test" in out and "Spearman rank correlation" in out
    printed = out.split("table written to")[0]  # the table; then file paths and the W&B run
    assert max(map(len, printed.splitlines())) <= 110  # the terminal layout; the paper's goes to table3.md
    assert report.rows[0].ppl.mean == pytest.approx(8.2)
    sweep_dir = tmp_path / "runs" / "report-test"
    assert (sweep_dir / "table3.md").read_text().startswith("## Table 3 reproduction: report-test")
    assert json.loads((sweep_dir / "table3.json").read_text())["rows"][0]["row"] == "base"
    assert (sweep_dir / "table3.png").stat().st_size > 10_000
    runs = list((sweep_dir / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and f"W&B summary run: {runs[0]}" in out

    wandb_cli = shutil.which("wandb") or str(Path(sys.executable).parent / "wandb")

    def inspect(*args: str) -> str:
        cmd = [wandb_cli, "leet", "inspect", *args, str(runs[0])]
        return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout

    summary = json.loads(inspect("--summary", "--json"))
    assert summary["state"] == "finished" and summary["project"] == "ablate-report-test"
    logged = summary["summary"]
    assert logged["table3"]["_type"] == "table-file" and logged["table3"]["nrows"] == 4
    assert logged["table3"]["ncols"] == len(TABLE_COLUMNS)
    assert logged["table3_plot"]["_type"] == "image-file" and logged["table3_plot"]["format"] == "png"
    assert logged["fidelity/sign_agree_ppl"] == 3 and logged["fidelity/n_ppl"] == 4
    records = [json.loads(line) for line in inspect("--json").splitlines() if line.strip()]
    run = next(r["run"] for r in records if r.get("type") == "run")
    assert run["run_group"] == "report-test" and run["job_type"] == "summary"  # beside the sweep's trials
    table = json.loads(next((runs[0] / "files" / "media" / "table").glob("*.table.json")).read_text())
    assert [row[1] for row in table["data"]] == ["base", "h=1", "N=1", "eps_ls=0.0"]


def test_a_rerun_with_the_same_results_does_not_redraw(sweep_file: Path, fake_results, tmp_path: Path, capsys) -> None:
    sweep = open_sweep(sweep_file).sweep
    print_summary(sweep, log_wandb=False)
    png = tmp_path / "runs" / "report-test" / "table3.png"
    first = png.stat().st_mtime_ns
    assert "plot written to" in capsys.readouterr().out
    print_summary(sweep, log_wandb=False)  # a rerun of the finished sweep: same table
    out = capsys.readouterr().out
    assert "table and plot unchanged" in out and "plot written" not in out and png.stat().st_mtime_ns == first
    png.unlink()  # a missing plot is drawn again
    print_summary(sweep, log_wandb=False)
    assert "plot written to" in capsys.readouterr().out and png.is_file()


def test_table_of_a_search_before_any_trial_ran(tmp_path: Path, capsys) -> None:
    """The project's tuned sweep, nothing run: every row waiting, and no list of best trials (it raised
    a TypeError on the empty list: ``max`` of one width)."""
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "experiments").symlink_to(ROOT / "experiments")
    path = tmp_path / "sweeps" / "tuned.yaml"
    shutil.copy(ROOT / "sweeps" / "table3-mini-tuned.yaml", path)
    assert main(["table", str(path)]) == 0
    out = capsys.readouterr().out
    assert "waiting" in out or "wait)" in out
    assert not any(line.startswith("tuned ") for line in out.splitlines())  # no list of best trials
