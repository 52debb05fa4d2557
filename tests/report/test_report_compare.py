"""ablate compare on two tiny finished sweeps (real stores, really prepared data, dev outputs written by
hand) whose rows have known effects: one transfers, one is equivalent in both, one flips sign."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from real_sweep import finish_by_hand, prepare, write_sweep

from ablate.cli import main

ROWS = [
    {"name": "base", "group": "base", "paper": "base"},
    {"name": "r1", "group": "X", "overrides": ["model.d_ff=48"]},
    {"name": "r2", "group": "X", "overrides": ["model.dropout=0.2"]},
    {"name": "r3", "group": "X", "overrides": ["train.label_smoothing=0.0"]},
]
# nats per token of each row, per sweep (base 2.0): r1 better in both, r2 = base in both, r3 flips
PER_TOKEN = {"A": {"r1": 1.5, "r3": 2.5}, "B": {"r1": 1.6, "r3": 1.5}}


def _outputs(sweep: str):
    def outputs(row: str, seed: int, refs: list[str], tokens: list[int]) -> tuple[list[str], list[float]]:
        rng = np.random.default_rng(seed)
        per = PER_TOKEN[sweep].get(row, 2.0)
        nll = [float(n * per * (1 + 0.02 * seed)) + float(rng.uniform(0, 0.1)) for n in tokens]
        return list(refs[:40]), nll

    return outputs


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    cache = tmp_path_factory.mktemp("compare-data") / "cache"
    out = []
    for name in ("A", "B"):
        path = write_sweep(tmp_path_factory.mktemp(name), name, cache, ROWS)
        finish_by_hand(path, prepare(path), _outputs(name))
        out.append(path)
    return out


def test_compare_gives_effects_verdicts_and_agreement(sweeps: list[Path], capsys) -> None:
    assert main(["compare", *map(str, sweeps), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["row"]: r for r in data["rows"]}
    assert set(rows) == {"r1", "r2", "r3"} and data["sweeps"] == ["A", "B"]
    assert rows["r1"]["A:ppl_change"] == pytest.approx(np.exp(-0.5) - 1, abs=0.01)
    assert (rows["r1"]["A:verdict"], rows["r1"]["B:verdict"]) == ("better", "better")
    assert (rows["r2"]["A:verdict"], rows["r2"]["B:verdict"]) == ("equivalent", "equivalent")
    assert (rows["r3"]["A:verdict"], rows["r3"]["B:verdict"]) == ("worse", "better")
    assert rows["r3"]["A:unit"] == "seeds" and rows["r3"]["A:ppl_low"] is not None
    pair = data["agreement"][0]
    assert (pair["sweep"], pair["against"], pair["n"]) == ("A", "B", 3)
    assert pair["spearman_ppl"] == pytest.approx(-0.5) and (pair["sign_agree"], pair["sign_n"]) == (1, 2)
    assert pair["verdicts_disagree"] == ["r3 (worse vs better)"]


def test_compare_text_md_csv_and_plot(sweeps: list[Path], capsys, tmp_path: Path) -> None:
    assert main(["compare", *map(str, sweeps), "--plot", str(tmp_path / "c.png")]) == 0
    text = capsys.readouterr().out
    assert "A vs B: PPL Spearman -0.50 (n=3), same sign 1/2; verdicts disagree: r3 (worse vs better)" in text
    assert (tmp_path / "c.png").stat().st_size > 10_000
    assert main(["compare", *map(str, sweeps), "--format", "md"]) == 0
    assert capsys.readouterr().out.startswith("## Does it transfer? A vs B")
    assert main(["compare", *map(str, sweeps), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("row,paper_ppl_change,A:ppl_change")


def test_compare_needs_two_finished_sweeps(sweeps: list[Path], capsys, tmp_path: Path) -> None:
    assert main(["compare", str(sweeps[0])]) == 2
    assert "two or more sweep files" in capsys.readouterr().err


def test_narangs_column_and_directions_when_rows_have_their_figures() -> None:
    from ablate.report.compare import Comparison, Effect, all_agreements
    from ablate.report.compare_render import render_compare

    def eff(ppl: float) -> Effect:
        return Effect(ppl, ppl - 0.01, ppl + 0.01, None, "better" if ppl < 0 else "worse", "sentences")

    rows = {"swiglu": (-0.05, -0.04, 0.40), "gelu": (-0.02, 0.01, -0.15), "pre": (-0.3, -0.1, None)}
    comp = Comparison(
        ["A", "B"],
        list(rows),
        {name: [eff(a), eff(b)] for name, (a, b, _) in rows.items()},
        dict.fromkeys(rows),
        published={name: n for name, (_, _, n) in rows.items()},
    )
    against = {a["sweep"]: a for a in all_agreements(comp) if a["against"].startswith("Narang")}
    # swiglu: PPL down where their BLEU rose (same); gelu: down in A (opposite), up in B (same); pre: no figure
    assert (against["A"]["sign_agree"], against["A"]["sign_n"]) == (1, 2)
    assert (against["B"]["sign_agree"], against["B"]["sign_n"]) == (2, 2)
    md = render_compare(comp, "md")
    assert "| Narang ΔBLEU |" in md and "+0.40 |" in md and "paper ΔPPL" not in md  # no row has a paper row
    assert "B vs Narang et al. (BLEU): same direction 2/2" in md
    assert json.loads(render_compare(comp, "json"))["rows"][0]["narang_bleu_change"] == 0.40


def test_an_effect_is_its_tests_estimate_so_it_sits_inside_its_interval() -> None:
    """Base has a third seed the row lacks (an outlier): the ratio of the means says -12.5%, the paired
    test over the two shared seeds +5% [+4%, +6%]. The point shown must be the test's."""
    from ablate.report.compare import effect_of
    from ablate.report.rows import AblationTable, Evidence, ReportRow, Stat
    from ablate.stats.seeds import SeedComparison

    base = ReportRow("base", "base", None, {}, {}, ppl=Stat.of([10.0, 10.0, 16.0], [1, 2, 3]), is_base=True)
    test = SeedComparison(12.0, 10.5, 0.05, 0.04, 0.06, 0.01, 1.0, 2, 2, method="paired-t")
    row = ReportRow("r", "X", None, {}, {}, ppl=Stat.of([10.5, 10.5], [1, 2]), ppl_ev=Evidence(seeds=test))
    effect = effect_of(AblationTable("t", [base, row]), row)
    assert effect is not None and effect.ppl_low is not None and effect.ppl_high is not None
    assert effect.ppl_low <= effect.ppl <= effect.ppl_high and effect.ppl == pytest.approx(0.05)


def test_compare_of_sweeps_that_share_no_row_is_one_line(sweeps: list[Path], make_trial, monkeypatch, capsys) -> None:
    """It printed an empty table and exited 0, which reads as "nothing differs"."""
    import ablate.report.commands
    from ablate.report.table import build_table

    def table_of(name: str, row: str):
        base = make_trial("base", "base", "base", ppl=5.0, bleu=20.0)
        return build_table([base, make_trial(row, "X", None, ppl=5.5, bleu=19.0)], name=name)

    tables = iter([table_of("A", "only-in-a"), table_of("B", "only-in-b")])
    monkeypatch.setattr(ablate.report.commands, "load_table", lambda *a, **k: next(tables))
    assert main(["compare", str(sweeps[0]), str(sweeps[1])]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "share no row" in err
