"""How sure the table is, on a real sweep file, a real store and really prepared data (tokenizer, shards,
unigram floor), with the trials' dev outputs written by hand so each case is known: a row clearly better
than base (significant), one identical to base (not), one that learned nothing, degenerate base output.
The trained end to end version is test_report_real_sweep.py (integration)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from real_sweep import finish_by_hand, prepare, write_sweep

import ablate.report.evidence as evidence
from ablate.cli import main
from ablate.data.unigram import unigram_floor
from ablate.report.commands import load_table
from ablate.sweep.loader import open_sweep
from ablate.sweep.plan import trial_states

ROWS = [
    {"name": "base", "group": "base", "paper": "base"},
    {"name": "eps_ls=0.0", "group": "D", "paper": "D3", "overrides": ["train.label_smoothing=0.0"]},  # better
    {"name": "P_drop=0.2", "group": "D", "paper": "D2", "overrides": ["model.dropout=0.2"]},  # same as base
    {"name": "N=2", "group": "C", "paper": "C2", "overrides": ["model.n_layers=2"]},  # learned nothing
]


def _drop_words(ref: str, every: int) -> str:
    words = ref.split()
    return " ".join(w for i, w in enumerate(words) if i % every != 1) or ref


def outputs(row: str, seed: int, refs: list[str], tokens: list[int]) -> tuple[list[str], list[float]]:
    """(dev hypotheses, per-sentence NLL) of one trial: nats per token 2.0 (base), 1.5 (better), 6 (nothing)."""
    rng = np.random.default_rng(seed)
    per_token = {"eps_ls=0.0": 1.5, "N=2": 6.0}.get(row, 2.0)
    nll = [float(n * per_token * (1 + 0.02 * seed) + rng.uniform(0, 0.1)) for n in tokens]
    hyps = [_drop_words(r, 2 if row in ("base", "P_drop=0.2") else 5) for r in refs[:40]]
    if row == "P_drop=0.2":  # the very outputs of base at the same seed
        rng = np.random.default_rng(seed)
        nll = [float(n * 2.0 * (1 + 0.02 * seed) + rng.uniform(0, 0.1)) for n in tokens]
    return hyps, nll


@pytest.fixture(scope="module")
def prepared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("report-data") / "cache"


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory: pytest.TempPathFactory, prepared_cache: Path) -> Path:
    path = write_sweep(tmp_path_factory.mktemp("evidence"), "evidence", prepared_cache, ROWS)
    finish_by_hand(path, prepare(path), outputs)
    return path


def test_preparation_stores_the_unigram_floor_and_old_caches_get_it_lazily(sweep_file: Path) -> None:
    prepared = prepare(sweep_file)  # a cache hit
    floor = unigram_floor(prepared.split("train"), prepared.split("valid"), prepared.vocab_size)
    assert prepared.meta["unigram_floor"]["valid"] == pytest.approx(floor) and floor > 1
    assert any(line.strip().startswith("floor") for line in prepared.summary_lines())
    meta_file = prepared.dir / "meta.json"
    meta = json.loads(meta_file.read_text())
    del meta["unigram_floor"]  # as prepared before the floor existed
    meta_file.write_text(json.dumps(meta))
    assert load_table(open_sweep(sweep_file).sweep).floor == pytest.approx(floor)
    assert json.loads(meta_file.read_text())["unigram_floor"]["valid"] == pytest.approx(floor)  # stored


def test_md_and_json_carry_intervals_p_values_marks_and_the_floor(sweep_file: Path, capsys) -> None:
    assert main(["table", str(sweep_file), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    base, better, same, nothing = data["rows"]
    assert [r["learned"] for r in data["rows"]] == [True, True, True, False]
    assert better["ppl_significant"] is True and better["bleu_significant"] is True
    assert better["ppl_delta_high"] < 0 < better["bleu_delta_low"]  # lower PPL, higher BLEU, interval clear of 0
    assert better["ppl_p_boot"] < 0.05 and better["ppl_p_seeds"] < 0.05 and better["bleu_boot_sentences"] == 80
    assert same["ppl_p_boot"] == 1.0 and same["bleu_p_boot"] == 1.0 and same["ppl_significant"] is False
    assert (better["ppl_verdict"], better["ppl_unit"], same["ppl_verdict"]) == ("better", "seeds", "equivalent")
    assert better["bleu_verdict"] == "better" and data["correction"] == "holm"
    assert nothing["ppl_significant"] is None and nothing["no_bootstrap"]["ppl"] == "not learned"
    # counted: D3 only (D2's paper delta +0.03 PPL is under the 0.1 threshold; N=2 learned nothing)
    assert data["fidelity"]["sign_n_ppl"] == 1 and data["fidelity"]["sign_significant_ppl"] == 1

    assert main(["table", str(sweep_file), "--format", "md"]) == 0
    md = capsys.readouterr().out
    cells = {
        row: [c.strip() for c in line.split("|")]
        for line in md.splitlines()
        for row in ("base", "eps_ls", "P_d", "N=2")
        if line.startswith("| ") and f" {row}" in line.split("|")[2]
    }
    assert cells["eps_ls"][13].endswith(")*") and cells["eps_ls"][17].endswith(")*")  # PPL and BLEU marked
    assert cells["eps_ls"][14].startswith("-") and "[" in cells["eps_ls"][14] and " / " in cells["eps_ls"][15]
    assert not cells["P_d"][13].endswith("*") and cells["P_d"][15].startswith("1.000 / ")
    assert cells["N=2"][13].endswith("†") and cells["base"][14] == f"floor {data['unigram_floor']:.2f}"
    assert "* = differs from base over seeds" in md and "Holm-corrected" in md and "† = not learned" in md
    assert cells["P_d"][13].endswith("≈")  # the same outputs as base at every seed: equivalent within the margin
    assert "seed-matched pairs pooled" in md and "no bootstrap (not learned): N=2 PPL, N=2 BLEU" in md


def test_alpha_option_moves_the_marks_and_bad_alphas_are_refused(sweep_file: Path, capsys) -> None:
    assert main(["table", str(sweep_file), "--format", "json", "--alpha", "1e-9"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["alpha"] == 1e-9 and data["rows"][1]["ppl_significant"] is False
    assert main(["table", str(sweep_file), "--alpha", "1.5"]) == 2
    assert "strictly between 0 and 1" in capsys.readouterr().err


def test_bootstraps_are_cached_beside_the_runs(sweep_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_table(open_sweep(sweep_file).sweep)
    assert (sweep_file.parent / "runs" / "evidence" / evidence.CACHE_NAME).is_file()

    def refuse(*args, **kwargs):
        raise AssertionError("recomputed a cached bootstrap")

    monkeypatch.setattr(evidence, "paired_bleu", refuse)
    monkeypatch.setattr(evidence, "paired_ppl", refuse)
    again = load_table(open_sweep(sweep_file).sweep)
    assert again.rows[1].ppl_ev.boot == first.rows[1].ppl_ev.boot and again.rows[1].bleu_ev.boot is not None


def test_degenerate_base_output_withholds_bleu_everywhere(
    tmp_path: Path, prepared_cache: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_sweep(tmp_path, "degenerate", prepared_cache, ROWS[:2])

    def collapsed(row: str, seed: int, refs: list[str], tokens: list[int]) -> tuple[list[str], list[float]]:
        hyps, nll = outputs(row, seed, refs, tokens)
        return (["die die die die die"] * len(hyps) if row == "base" else hyps), nll

    finish_by_hand(path, prepare(path), collapsed)
    monkeypatch.setattr(evidence, "MIN_BASE_BLEU", 0.0)  # the degenerate output alone withholds BLEU
    assert main(["table", str(path)]) == 0
    text = capsys.readouterr().out
    assert "BLEU withheld: base's dev output is degenerate (100% of hypotheses empty or repetitive)." in text
    assert all("withheld" in line for line in text.splitlines() if line.startswith(("base  ", "(D)")))
    assert main(["table", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["bleu_withheld"].startswith("base's dev output is degenerate")
    assert data["rows"][1]["bleu"] is None and data["rows"][1]["bleu_p_boot"] is None
    assert data["rows"][1]["ppl_p_boot"] is not None  # PPL still compared
    assert data["fidelity"]["bleu_withheld"] is True and data["fidelity"]["sign_n_bleu"] == 0


def test_the_evidence_path_imports_no_torch(sweep_file: Path, tmp_path: Path) -> None:
    """The store's trials -> floor, bootstraps, every format: no torch, Lightning or matplotlib on the way."""
    opened = open_sweep(sweep_file)
    keys = ("row", "group", "paper", "seed", "state", "config", "params", "metrics", "failure", "run_dir")
    trials = [{k: getattr(v, k) for k in keys} for v in trial_states(opened.store, opened.sweep)]
    (tmp_path / "trials.json").write_text(json.dumps(trials))
    code = (
        "import json, sys, types; from ablate.report.evidence import attach_evidence;"
        "from ablate.report.table import build_table; from ablate.report.render import render;"
        "ts = [types.SimpleNamespace(**t) for t in json.load(open(sys.argv[1]))];"
        "table = attach_evidence(build_table(ts), ts); assert table.floor and table.rows[1].bleu_ev.boot;"
        "[render(table, f) for f in ('text', 'md', 'csv', 'json', 'latex')];"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'lightning', 'matplotlib'}))"
    )
    args = [sys.executable, "-c", code, str(tmp_path / "trials.json")]
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "[]"


def test_plot_latex_and_csv_carry_the_evidence(sweep_file: Path, tmp_path: Path, capsys) -> None:
    png = tmp_path / "t.png"
    assert main(["table", str(sweep_file), "--format", "latex", "--plot", str(png)]) == 0
    tex = capsys.readouterr().out
    assert png.stat().st_size > 10_000  # bars with the bootstrap intervals as error bars
    assert ")* &" in tex and "\\dag{}" in tex and "floor " in tex
    assert main(["table", str(sweep_file), "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    header = rows[0].split(",")
    better = dict(zip(header, rows[2].split(",")))
    assert better["ppl_significant"] == "True" and float(better["ppl_delta_high"]) < 0 and better["learned"] == "True"
