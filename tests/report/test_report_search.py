"""The tuned Table 3 of a search sweep: each row at its best configuration, in every format, the
optimization-history PNG and the W&B columns. Nothing is trained: the rows' studies sample real
trials into a real store (``Searcher``), whose results are then written as a worker would
(claim + finish / prune), made up from the sampled params."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ablate.cli import main
from ablate.report.commands import load_table
from ablate.report.render import render
from ablate.report.search_plot import history_figure
from ablate.report.search_view import fmt_params
from ablate.report.table import build_table
from ablate.report.wandb_summary import SEARCH_COLUMNS, TABLE_COLUMNS, best_summary, table_columns, table_rows
from ablate.sweep.loader import open_sweep
from ablate.sweep.plan import trial_states
from ablate.sweep.plan.search import Searcher

ROOT = Path(__file__).resolve().parents[2]
N_TRIALS = 4

SWEEP = f"""\
name: search-report
experiment: {ROOT / "experiments" / "mini.yaml"}
overrides: [model.d_model=64, model.d_ff=128, model.n_layers=1, train.max_steps=10]
seeds: [1, 2]
launcher: {{name: local, slots: 2}}
wandb: {{mode: disabled}}
search:
  metric: val/ppl
  n_trials: {N_TRIALS}
  sampler: random
  pruner: median
  params:
    train.lr_factor: {{low: 0.1, high: 4.0, log: true}}
    model.dropout: {{choices: [0.0, 0.1, 0.2]}}
rows:
  - {{name: base, group: base, paper: base}}
  - {{name: "h=1", group: A, paper: A1, overrides: [model.n_heads=1]}}
"""


def fake_ppl(row: str, seed: int, params: dict) -> float:
    """A made-up dev PPL: best near lr_factor 0.5 and dropout 0.1; h=1 is 1.0 worse; seed 2 is 0.3 worse."""
    lr, dropout = params["train.lr_factor"], params["model.dropout"]
    return 8.0 + 3 * abs(math.log(lr / 0.5)) + 10 * abs(dropout - 0.1) + (row == "h=1") + 0.3 * (seed - 1)


def finish_all(store, sweep) -> None:
    """Finish every waiting trial as a worker would; each row's search trial #1 is pruned at step 3."""
    for v in trial_states(store, sweep):
        if v.state != "waiting":
            continue
        assert store.claim(v.latest.storage_id, "test")
        ppl = fake_ppl(v.row, v.seed, v.trial.search["params"])
        if v.trial.search.get("phase") == "search" and v.trial.search.get("number") == 1:
            store.prune(v.latest.storage_id, {"val/ppl": ppl + 40.0, "step": 3, "pruned_at": 3})
        else:
            store.finish(v.latest.storage_id, {"val/ppl": ppl, "val/bleu": 30.0 - ppl, "params": 100_000, "step": 10})


def _write_sweep(folder: Path) -> Path:
    path = folder / "search-report.yaml"
    path.write_text(SWEEP, encoding="utf-8")
    return path


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    """A search sweep whose store is still empty."""
    return _write_sweep(tmp_path)


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A finished search (built once; the tests only read it): every row's N_TRIALS trials (one pruned),
    then the best config's re-run at seed 2.

    Returns the sweep file and, per row, the expected best params, best value and tuned values (seeds 1, 2)."""
    sweep_file = _write_sweep(tmp_path_factory.mktemp("search"))
    opened = open_sweep(sweep_file)
    store, sweep = opened.store, opened.sweep
    searcher = Searcher(sweep, store)
    searcher.step(room=2 * N_TRIALS)
    finish_all(store, sweep)
    searcher.step(room=2 * N_TRIALS)  # tells the results; each row's best re-runs at seed 2
    finish_all(store, sweep)
    expected = {}
    views = trial_states(store, sweep)
    for row in ("base", "h=1"):
        done = [v for v in views if v.row == row and v.state == "done" and v.trial.search["phase"] == "search"]
        best = min(done, key=lambda v: v.metrics["val/ppl"])
        params = best.trial.search["params"]
        expected[row] = {
            "params": params,
            "value": best.metrics["val/ppl"],
            "tuned": [best.metrics["val/ppl"], fake_ppl(row, 2, params)],
            "all": [v.metrics["val/ppl"] for v in views if v.row == row and v.state == "done"],
        }
        assert sum(v.row == row and v.trial.search["phase"] == "final" for v in views) == 1
    return sweep_file, expected


def test_text_table_reports_each_row_at_its_best_config(searched: tuple[Path, dict], capsys) -> None:
    sweep_file, expected = searched
    assert main(["table", str(sweep_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Tuned Table 3: search-report")
    assert f"best of {N_TRIALS} trials by val/ppl (minimize); random sampler, median pruner" in out
    assert max(map(len, out.splitlines())) <= 110
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("----")) + 1
    table_lines = lines[start : lines.index("", start)]
    assert len(table_lines) == 2  # one line per row, not one per trial
    for line, row in zip(table_lines, ("base", "h=1")):
        tuned = expected[row]["tuned"]
        assert f"{statistics.fmean(tuned):.2f}±{statistics.stdev(tuned):.2f}" in line
        assert f"{statistics.fmean(expected[row]['all']):.2f}" not in line  # not the pool of every trial
        assert line.rstrip().endswith("2/2")  # the best config at both seeds
    for row in ("base", "h=1"):
        assert fmt_params(expected[row]["params"]) in out
        assert f"{expected[row]['value']:.2f}" in out
    assert out.count(f"{N_TRIALS} trials, 1 pruned") == 2
    assert "P_drop=tuned" in out  # the searched Table 3 setting, not base's template value


def test_json_csv_md_carry_the_search(searched: tuple[Path, dict], capsys) -> None:
    sweep_file, expected = searched
    assert main(["table", str(sweep_file), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tuned"] is True
    assert data["search"]["metric"] == "val/ppl" and data["search"]["n_trials"] == N_TRIALS
    assert data["search"]["sampler"] == "random" and data["search"]["pruner"] == "median"
    assert [r["row"] for r in data["rows"]] == ["base", "h=1"]
    for rec in data["rows"]:
        want = expected[rec["row"]]
        assert rec["ppl"] == pytest.approx(statistics.fmean(want["tuned"]), abs=1e-3) and rec["ppl_n"] == 2
        s = rec["search"]
        assert s["best_params"] == want["params"] and s["best_value"] == pytest.approx(want["value"], abs=1e-3)
        assert (s["trials"], s["done"], s["pruned"], s["failed"]) == (N_TRIALS, N_TRIALS - 1, 1, 0)
        assert s["best_run"] == s["best_id"] and isinstance(s["best_trial"], int)
        assert rec["settings"]["P_drop"] == "tuned" and "P_drop" not in rec["changed"]
    assert data["rows"][1]["changed"] == {"h": 1, "d_k": 64, "d_v": 64}  # what the row ablates, nothing tuned

    assert main(["table", str(sweep_file), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(
        "tuned_params,search_trials,search_done,search_pruned,search_failed,best_value,best_trial,best_run"
    )
    assert len(lines) == 3 and f",{N_TRIALS},{N_TRIALS - 1},1,0," in lines[1]

    assert main(["table", str(sweep_file), "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("## Tuned Table 3: search-report") and "| tuned (best params)" in md
    assert fmt_params(expected["h=1"]["params"]) in md


def test_history_png_has_one_panel_per_row(searched: tuple[Path, dict], tmp_path: Path, capsys) -> None:
    sweep_file = searched[0]
    table = load_table(open_sweep(sweep_file).sweep)
    fig = history_figure(table)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split(":")[0] for ax in panels] == ["base", "h=1 [A1]"]
    for ax in panels:  # completed dots, pruned x-marks, the best star; the best-so-far step line
        offsets = [len(c.get_offsets()) for c in ax.collections]
        assert offsets == [N_TRIALS - 1, 1, 1] and len(ax.lines) == 1

    png = tmp_path / "t3.png"
    assert main(["table", str(sweep_file), "--format", "csv", "--plot", str(png)]) == 0
    err = capsys.readouterr().err
    assert png.stat().st_size > 10_000 and (tmp_path / "t3-search.png").stat().st_size > 10_000
    assert f"search history written to {tmp_path / 't3-search.png'}" in err


def test_wandb_rows_mark_the_best_run(searched: tuple[Path, dict]) -> None:
    sweep_file, expected = searched
    table = load_table(open_sweep(sweep_file).sweep)
    columns = table_columns(table)
    assert columns == TABLE_COLUMNS + SEARCH_COLUMNS
    rows = [dict(zip(columns, r)) for r in table_rows(table)]
    summary = best_summary(table)
    for rec in rows:
        best = summary[f"best/{rec['row']}"]
        assert rec["best_run"] == best["run"] and len(best["run"]) == 16
        assert best["params"] == expected[rec["row"]]["params"]
        assert rec["tuned_params"] == fmt_params(best["params"])


def test_a_search_before_any_result_shows_rows_waiting(sweep_file: Path) -> None:
    opened = open_sweep(sweep_file)
    table = load_table(opened.sweep)  # no store yet
    assert [r.runs for r in table.rows] == ["not started", "not started"]
    Searcher(opened.sweep, opened.store).step(room=2)
    table = load_table(opened.sweep)
    assert [r.pending for r in table.rows] == ["waiting", "waiting"]
    assert all(r.search is not None and r.search.best.best_id is None for r in table.rows)
    assert f"1/{N_TRIALS} trials" in render(table, "text")


def test_grid_tables_have_no_search_parts(make_trial) -> None:
    table = build_table([make_trial("base", "base", "base", ppl=5.0, bleu=20.0)], name="grid")
    assert "search" not in json.loads(render(table, "json")) and "tuned" not in render(table, "md")
    text = render(table, "text")
    assert text.startswith("Table 3 reproduction: grid") and "tuned" not in text
    assert table_columns(table) == TABLE_COLUMNS and best_summary(table) == {}


def test_search_table_imports_no_matplotlib(searched: tuple[Path, dict]) -> None:
    sweep_file = searched[0]
    code = (
        "import sys; from ablate.cli import main; main(['table', sys.argv[1]]);"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'lightning', 'matplotlib', 'wandb'}))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(sweep_file)], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "[]"


def test_terminal_puts_short_params_in_a_column(searched: tuple[Path, dict]) -> None:
    table = load_table(open_sweep(searched[0]).sweep)
    assert "  tuned\n" not in render(table, "text")  # two long params: the list under the table holds them
    for row in table.rows:  # one short param (made up): it fits as a column
        row.search = replace(row.search, best=replace(row.search.best, best_params={"model.d_ff": 64}))
    text = render(table, "text")
    header = next(line for line in text.splitlines() if line.lstrip().startswith("row "))
    assert header.endswith("tuned") and text.count("model.d_ff=64") == 2
    assert max(map(len, text.splitlines())) <= 110
    assert "params" not in next(line for line in text.splitlines() if line.startswith("tuned "))
