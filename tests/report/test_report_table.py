"""The Table 3 report: exact markdown / CSV / JSON for a fixed set of trial results, seeds and gaps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ablate.report.errors import ReportError
from ablate.report.render import render
from ablate.report.table import build_table

EXPECTED_MD = """\
## Table 3 reproduction: snap

|      | row             | N | d_model | d_ff | h | d_k | d_v | P_drop | eps_ls | steps |        pos |      PPL (Δ) | ΔPPL boot [95% CI] | p boot / seeds | paper PPL (Δ) |    BLEU (Δ) | ΔBLEU boot [95% CI] | p boot / seeds | paper BLEU (Δ) | params M | paper M |                      runs |
|------|-----------------|--:|--------:|-----:|--:|----:|----:|-------:|-------:|------:|-----------:|-------------:|-------------------:|---------------:|--------------:|------------:|--------------------:|---------------:|---------------:|---------:|--------:|--------------------------:|
| base | base            | 3 |      64 |  256 | 8 |   8 |   8 |    0.1 |    0.1 |   300 | sinusoidal |  5.27 ± 0.31 |                    |                |          4.92 |  20.5 ± 0.5 |                     |                |           25.8 |    0.478 |      65 |                       3/3 |
| (A)  | h=1 [A1]        |   |         |      | 1 |  64 |  64 |        |        |       |            | 5.50 (+0.23) |                    |                |  5.29 (+0.37) | 19.0 (-1.5) |                     |                |    24.9 (-0.9) |    0.478 |         | 1/3 (1 running, 1 failed) |
| (B)  | d_k=2 [B1]      |   |         |      |   |   2 |     |        |        |       |            |            … |                    |                |  5.16 (+0.24) |           … |                     |                |    25.1 (-0.7) |    0.422 |      58 |           0/1 (1 waiting) |
| (C)  | N=1 [C1]        | 1 |         |      |   |     |     |        |        |       |            |       failed |                    |                |  6.11 (+1.19) |      failed |                     |                |    23.7 (-2.1) |    0.245 |      36 |            0/1 (1 failed) |
| (E)  | learned pos [E] |   |         |      |   |     |     |        |        |       |    learned | 5.10 (-0.17) |                    |                |  4.92 (+0.00) | 20.4 (-0.1) |                     |                |    25.7 (-0.1) |    0.511 |         |                       1/1 |
|      | rope            |   |         |      |   |     |     |        |        |       |       rope | 4.90 (-0.37) |                    |                |               | 21.0 (+0.5) |                     |                |                |    0.478 |         |                       1/1 |

- Ours: dev PPL / BLEU, mean ± std over seeds; Δ = against our base row (base). Paper: Vaswani et al. 2017, Attention Is All You Need, Table 3 (dev: newstest2013); Δ against its base. Blank settings = as base. … = waiting.
- Marks after Δ (α = 0.05, Holm-corrected over the table's rows (family-wise error ≤ α)): * = differs from base over seeds (paired by seed, else Welch: the architecture's effect); ≈ = equivalent to base over seeds (within ±2% PPL, ±0.3 BLEU); ° = differs over dev sentences only. A row (or base) with one seed is tested over dev sentences (°): that compares two trained models on this dev set, not the architectures; run ≥ 2 seeds per row for a seed-level verdict.
- Δ boot [95% CI] = Δ of the pooled seed-matched pairs and its bootstrap interval; p = bootstrap over sentences / test over seeds (paired t, else Welch; – = none) → adjusted. Bootstrap pairs: seed-matched pairs pooled (row seed s vs base seed s, for every seed both finished; BLEU on the first dev sentences both decoded).
- Unigram floor: n/a.
- Spearman rank correlation with the paper: PPL +0.87 (n=3), BLEU +1.00 (n=3)
- Delta vs base has the paper's sign: PPL 1/1 (100%), BLEU 2/2 (100%) (rows where the paper's |Δ| ≥ 0.1 PPL / 0.1 BLEU); of those, a difference after the correction (adjusted p < 0.05): PPL 0/1, BLEU 0/2
- failed: h=1 seed 2: loss became NaN at step 120
- failed: N=1 seed 1: killed (SLURM TIMEOUT)
"""  # noqa: E501

EXPECTED_CSV = """\
group,row,paper,N,d_model,d_ff,h,d_k,d_v,P_drop,eps_ls,train_steps,positional,ppl,ppl_std,ppl_n,ppl_delta,ppl_delta_boot,ppl_delta_low,ppl_delta_high,ppl_p_boot,ppl_p_seeds,ppl_seeds_delta,ppl_seeds_low,ppl_seeds_high,ppl_p_adjusted,ppl_unit,ppl_verdict,ppl_significant,paper_ppl,paper_ppl_delta,bleu,bleu_std,bleu_n,bleu_delta,bleu_delta_boot,bleu_delta_low,bleu_delta_high,bleu_p_boot,bleu_p_seeds,bleu_seeds_delta,bleu_seeds_low,bleu_seeds_high,bleu_p_adjusted,bleu_unit,bleu_verdict,bleu_significant,paper_bleu,paper_bleu_delta,learned,ppl_last_quarter_drop,learning,params,paper_params_m,n_done,n_trials,status,correction
base,base,base,3,64,256,8,8,8,0.1,0.1,300,sinusoidal,5.2667,0.3055,3,,,,,,,,,,,,,,4.92,,20.5,0.5,3,,,,,,,,,,,,,,25.8,,,,,478208,65,3,3,done,holm
A,h=1,A1,,,,1,64,64,,,,,5.5,,1,0.2333,,,,,,,,,,,,,5.29,0.37,19.0,,1,-1.5,,,,,,,,,,,,,24.9,-0.9,,,,478208,,1,3,partial,holm
B,d_k=2,B1,,,,,2,,,,,,,,0,,,,,,,,,,,,,,5.16,0.24,,,0,,,,,,,,,,,,,,25.1,-0.7,,,,421952,58,0,1,waiting,holm
C,N=1,C1,1,,,,,,,,,,,,0,,,,,,,,,,,,,,6.11,1.19,,,0,,,,,,,,,,,,,,23.7,-2.1,,,,244864,36,0,1,failed,holm
E,learned pos,E,,,,,,,,,,learned,5.1,,1,-0.1667,,,,,,,,,,,,,4.92,0.0,20.4,,1,-0.1,,,,,,,,,,,,,25.7,-0.1,,,,510976,,1,1,done,holm
E,rope,,,,,,,,,,,rope,4.9,,1,-0.3667,,,,,,,,,,,,,,,21.0,,1,0.5,,,,,,,,,,,,,,,,,,478208,,1,1,done,holm
"""  # noqa: E501

BASE_SETTINGS = {
    "N": 3,
    "d_model": 64,
    "d_ff": 256,
    "h": 8,
    "d_k": 8,
    "d_v": 8,
    "P_drop": 0.1,
    "eps_ls": 0.1,
    "train_steps": 300,
    "positional": "sinusoidal",
}


def _row(group: str, row: str, paper: str | None, changed: dict[str, Any], **values: Any) -> dict[str, Any]:
    rec = {
        "group": group,
        "row": row,
        "paper": paper,
        "is_base": False,
        "settings": {**BASE_SETTINGS, **changed},
        "changed": changed,
        "ppl": None,
        "ppl_std": None,
        "ppl_delta": None,
        "paper_ppl": None,
        "paper_ppl_delta": None,
        "bleu": None,
        "bleu_std": None,
        "bleu_delta": None,
        "paper_bleu": None,
        "paper_bleu_delta": None,
        "params": 478208,
        "paper_params_m": None,
        "n_done": 1,
        "n_trials": 1,
        "status": "done",
        "failures": [],
        "learned": None,
        "no_bootstrap": None,
        "ppl_n": None,
        "bleu_n": None,
        "correction": "holm",
        "ppl_last_quarter_drop": None,
        "learning": None,
        "published_row": None,
        "published_bleu": None,
        "published_bleu_delta": None,
    }
    for m in ("ppl", "bleu"):  # no run directories here: no bootstrap; one seed: no Welch
        rec[f"{m}_significant"] = None
        rec.update(
            dict.fromkeys(
                f"{m}_{k}"
                for k in (
                    "delta_boot",
                    "delta_low",
                    "delta_high",
                    "p_boot",
                    "p_seeds",
                    "boot_sentences",
                    "seed_test",
                    "seeds_delta",
                    "seeds_low",
                    "seeds_high",
                    "p_equiv",
                    "p_adjusted",
                    "unit",
                    "verdict",
                )
            )
        )
    assert set(values) <= set(rec)
    rec.update(values)
    for m in ("ppl", "bleu"):
        if rec[f"{m}_n"] is None:  # seeds that finished: one where there is a value
            rec[f"{m}_n"] = 1 if rec[m] is not None else 0
    return rec


EXPECTED_JSON = {
    "sweep": "snap",
    "paper": "Vaswani et al. 2017, Attention Is All You Need, Table 3 (dev: newstest2013)",
    "base_row": "base",
    "rows": [
        _row(
            "base",
            "base",
            "base",
            {},
            is_base=True,
            ppl=5.2667,
            ppl_std=0.3055,
            paper_ppl=4.92,
            bleu=20.5,
            bleu_std=0.5,
            paper_bleu=25.8,
            paper_params_m=65,
            n_done=3,
            n_trials=3,
            ppl_n=3,
            bleu_n=3,
        ),
        _row(
            "A",
            "h=1",
            "A1",
            {"h": 1, "d_k": 64, "d_v": 64},
            ppl=5.5,
            ppl_delta=0.2333,
            paper_ppl=5.29,
            paper_ppl_delta=0.37,
            bleu=19.0,
            bleu_delta=-1.5,
            paper_bleu=24.9,
            paper_bleu_delta=-0.9,
            n_trials=3,
            status="partial",
            failures=["seed 2: loss became NaN at step 120"],
        ),
        _row(
            "B",
            "d_k=2",
            "B1",
            {"d_k": 2},
            paper_ppl=5.16,
            paper_ppl_delta=0.24,
            paper_bleu=25.1,
            paper_bleu_delta=-0.7,
            params=421952,
            paper_params_m=58,
            n_done=0,
            status="waiting",
        ),
        _row(
            "C",
            "N=1",
            "C1",
            {"N": 1},
            paper_ppl=6.11,
            paper_ppl_delta=1.19,
            paper_bleu=23.7,
            paper_bleu_delta=-2.1,
            params=244864,
            paper_params_m=36,
            n_done=0,
            status="failed",
            failures=["seed 1: killed (SLURM TIMEOUT)"],
        ),
        _row(
            "E",
            "learned pos",
            "E",
            {"positional": "learned"},
            ppl=5.1,
            ppl_delta=-0.1667,
            paper_ppl=4.92,
            paper_ppl_delta=0.0,
            bleu=20.4,
            bleu_delta=-0.1,
            paper_bleu=25.7,
            paper_bleu_delta=-0.1,
            params=510976,
        ),
        _row("E", "rope", None, {"positional": "rope"}, ppl=4.9, ppl_delta=-0.3667, bleu=21.0, bleu_delta=0.5),
    ],
    "alpha": 0.05,
    "correction": "holm",
    "looks": None,
    "equivalence_margins": {"ppl": 0.02, "bleu": 0.3},
    "pairing": "seed-matched pairs pooled (row seed s vs base seed s, for every seed both finished; BLEU on the "
    "first dev sentences both decoded)",
    "unigram_floor": None,
    "floor_note": None,
    "bleu_withheld": None,
    "undertrained": None,
    "not_translating": None,
    "base_chrf": None,
    "fidelity": {
        "spearman_ppl": 0.866,
        "n_ppl": 3,
        "spearman_bleu": 1.0,
        "n_bleu": 3,
        "sign_agree_ppl": 1,
        "sign_n_ppl": 1,
        "sign_significant_ppl": 0,
        "sign_agree_bleu": 2,
        "sign_n_bleu": 2,
        "sign_significant_bleu": 0,
        "sign_min_paper_delta_ppl": 0.1,
        "sign_min_paper_delta_bleu": 0.1,
        "alpha": 0.05,
        "bleu_withheld": False,
    },
}


def test_markdown_snapshot(snapshot_results) -> None:
    assert render(build_table(snapshot_results, name="snap"), "md") == EXPECTED_MD


def test_csv_snapshot(snapshot_results) -> None:
    assert render(build_table(snapshot_results, name="snap"), "csv") == EXPECTED_CSV


def test_json_snapshot(snapshot_results) -> None:
    text = render(build_table(snapshot_results, name="snap"), "json")
    data = json.loads(text)
    notes = data.pop("notes")
    assert data == EXPECTED_JSON
    assert notes == [line[2:] for line in EXPECTED_MD.splitlines() if line.startswith("- ")]  # the md's legend
    assert text.startswith('{\n  "sweep": "snap",\n') and "…" in text  # indented, not ASCII-escaped


def test_latex_has_every_row_escaped_and_rules_between_groups(snapshot_results) -> None:
    tex = render(build_table(snapshot_results, name="snap"), "latex")
    assert tex.count("\\\\\n") == 7  # header + 6 rows
    assert "d\\_k=2 [B1]" in tex and "5.27 $\\pm$ 0.31" in tex and "\\dots{}" in tex
    assert tex.count("\\midrule") == 1 + 4  # under the header, then before (A), (B), (C), (E)
    assert "d_k=2" not in tex.replace("d\\_k=2", "")  # no unescaped underscore from a row name


def test_latex_fits_the_page_and_compiles_where_pdflatex_is(snapshot_results, tmp_path) -> None:
    import shutil
    import subprocess

    tex = render(build_table(snapshot_results, name="snap"), "latex")
    assert "\\resizebox{\\linewidth}{!}{%" in tex and tex.count("\\end{tabular}}") == 1  # scaled to the text width
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed here: the LaTeX is checked as text only")
    doc = "\\documentclass[landscape]{article}\\usepackage{booktabs,amsmath,graphicx}\\begin{document}\n"
    (tmp_path / "t.tex").write_text(doc + tex + "\\end{document}\n")
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "t.tex"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0 and "Overfull \\hbox" not in done.stdout, done.stdout[-2000:]


def test_rows_follow_the_sweep_order_and_rows_not_in_the_store_show_as_waiting(make_trial) -> None:
    results = [
        make_trial("h=4", "A", "A2", ppl=5.0, bleu=20.0, **{"model.n_heads": 4}),
        make_trial("base", "base", "base", ppl=5.2, bleu=19.5),
    ]
    table = build_table(results, row_order=["base", "h=1", "h=4"], row_info={"h=1": {"group": "A", "paper": "A1"}})
    assert [r.name for r in table.rows] == ["base", "h=1", "h=4"]
    missing = table.rows[1]
    assert missing.pending == "waiting" and missing.n_trials == 0 and missing.group == "A"
    assert missing.changed == {"h": 1, "d_k": 512, "d_v": 512}  # no config yet: the paper's cells
    md = render(table, "md")
    assert "| h=1 [A1] " in md and "not started |" in md
    assert table.rows[2].ppl_delta == pytest.approx(-0.2)


def test_seeds_give_mean_and_sample_std(make_trial) -> None:
    results = [
        make_trial("base", "base", "base", seed=s, ppl=p, bleu=b) for s, p, b in ((1, 4.0, 10.0), (2, 6.0, 14.0))
    ]
    row = build_table(results).rows[0]
    assert (row.ppl.mean, row.ppl.n) == (5.0, 2)
    assert row.ppl.std == pytest.approx(2**0.5)  # sample std (n - 1), as the paper's error bars would be
    assert row.bleu.std == pytest.approx(2 * 2**0.5)
    assert "5.00 ± 1.41" in render(build_table(results), "md")


def test_nan_metrics_are_not_averaged(make_trial) -> None:
    results = [
        make_trial("base", "base", "base", seed=1, ppl=5.0, bleu=20.0),
        make_trial("base", "base", "base", seed=2, ppl=float("nan"), bleu=21.0),
    ]
    row = build_table(results).rows[0]
    assert (row.ppl.mean, row.ppl.n, row.bleu.n) == (5.0, 1, 2)


def test_changed_cells_come_from_the_configs_not_the_row_names(make_trial) -> None:
    # A row whose overrides also touch a non-Table-3 key shows only the Table 3 cells it changes;
    # an encoder/decoder depth split shows as enc/dec.
    results = [
        make_trial("base", "base", "base", ppl=5.0, bleu=20.0),
        make_trial("deep enc", "C", None, ppl=4.8, bleu=20.2, **{"model.n_enc_layers": 4}),
    ]
    rows = build_table(results).rows
    assert rows[1].changed == {"N": "4/3"}


def test_no_rows_and_unknown_paper_ids_are_one_line_errors(make_trial) -> None:
    with pytest.raises(ReportError, match="no rows"):
        build_table([], name="empty")
    with pytest.raises(ReportError, match="unknown paper row 'A9'"):
        build_table([make_trial("x", "A", "A9", ppl=5.0, bleu=20.0)])
    with pytest.raises(ReportError, match="unknown table format 'html'"):
        render(build_table([make_trial("base", "base", "base", ppl=5.0, bleu=20.0)]), "html")
