"""Rows the paper never had ("Table 3 revisited"): a column per changed variant slot, an "other changes"
column for the rest, no empty paper columns, and every format and the plot agreeing."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ablate.report.columns import other_changes, slot_settings
from ablate.report.render import render
from ablate.report.table import build_table

SLOTS = {"model.residual": "post", "model.norm": "layernorm", "model.attention": "mha", "model.ffn": "relu"}


def _revisited(make_trial) -> list:
    recipe = {"model.residual": "pre", "model.norm": "rmsnorm", "model.positional": "rope", "model.ffn": "swiglu"}
    gqa = {"name": "gqa", "args": {"n_kv_heads": 2}}
    return [
        make_trial("base", "base", None, ppl=6.0, bleu=20.0, **SLOTS),
        make_trial("pre-norm", "residual", None, ppl=5.0, bleu=22.0, **{**SLOTS, "model.residual": "pre"}),
        make_trial("rmsnorm", "norm", None, ppl=6.1, bleu=19.5, **{**SLOTS, "model.norm": "rmsnorm"}),
        make_trial("gqa kv=2", "attention", None, ppl=6.2, bleu=19.0, **{**SLOTS, "model.attention": gqa}),
        make_trial("2023 recipe", "combination", None, ppl=4.8, bleu=23.0, **{**SLOTS, **recipe}),
        make_trial("attn drop", "other", None, ppl=6.05, bleu=20.1, **{**SLOTS, "model.attention_dropout": 0.1}),
    ]


def test_slot_columns_show_every_changed_setting_and_no_paper_columns(make_trial) -> None:
    table = build_table(_revisited(make_trial), name="rev")
    assert not table.has_paper
    assert [key for key, _ in table.columns][10:] == ["residual", "norm", "attention", "ffn", "other"]  # ffn: recipe
    rows = {r.name: r for r in table.rows}
    assert rows["2023 recipe"].changed == {"positional": "rope", "residual": "pre", "norm": "rmsnorm", "ffn": "swiglu"}
    assert rows["gqa kv=2"].changed == {"attention": "gqa(n_kv_heads=2)"}
    assert rows["attn drop"].changed == {"other": "model.attention_dropout=0.1"}

    md = render(table, "md")
    header = next(line for line in md.splitlines() if line.startswith("|") and "row" in line)
    assert "residual" in header and "other changes" in header and "paper" not in header
    assert md.startswith("## Ablation table: rev")
    recipe_line = next(line for line in md.splitlines() if "2023 recipe" in line)
    for value in ("rope", "pre", "rmsnorm", "swiglu"):
        assert f" {value} " in recipe_line
    assert "No row names a paper row" in md and "Spearman" not in md

    text = render(table, "text")
    assert "paper" not in text.split("\n\n")[1]  # the body: no empty paper Δ columns
    assert "pos=rope residual=pre norm=rmsnorm ffn=swiglu" in text  # all of them, in column order
    assert "model.attention_dropout=0.1" in text

    data = json.loads(render(table, "json"))
    assert data["rows"][4]["changed"]["ffn"] == "swiglu" and data["rows"][0]["settings"]["norm"] == "layernorm"
    reader = list(csv.DictReader(io.StringIO(render(table, "csv"))))
    assert reader[3]["attention"] == "gqa(n_kv_heads=2)" and reader[5]["other"] == "model.attention_dropout=0.1"
    assert "paper_ppl" in reader[0]  # CSV keeps its fixed columns for scripts
    tex = render(table, "latex")
    body = tex.split("\\toprule")[1].split("\\bottomrule")[0]
    assert "residual & norm & attn & ffn & other changes" in body and "paper" not in body


def test_a_paper_table_keeps_exactly_the_paper_columns(snapshot_results) -> None:
    table = build_table(snapshot_results, name="snap")
    assert table.has_paper and len(table.columns) == 10


def test_the_plot_draws_rows_without_paper_values(make_trial, tmp_path: Path) -> None:
    from ablate.report.plot import plot_table

    out = plot_table(build_table(_revisited(make_trial), name="rev"), tmp_path / "rev.png")
    assert out.stat().st_size > 10_000


def test_other_changes_leave_out_what_columns_show_and_the_ignored_keys() -> None:
    base = {
        "model": {"d_model": 64, "attention_dropout": 0.0, "norm": "layernorm"},
        "train": {"lr_factor": 1.0, "seed": 1},
        "logging": {"name": "base"},
        "eval": {"beam_size": 4},
    }
    row = {
        "model": {"d_model": 32, "attention_dropout": 0.1, "norm": "rmsnorm"},
        "train": {"lr_factor": 0.5, "seed": 2},
        "logging": {"name": "row"},
        "eval": {"beam_size": 1},
    }
    assert other_changes(row, base) == "eval.beam_size=1 model.attention_dropout=0.1 train.lr_factor=0.5"
    assert other_changes(row, base, ignore=["train.lr_factor"]) == "eval.beam_size=1 model.attention_dropout=0.1"
    assert other_changes(base, base) is None
    # the corpus's own seed is a change of the data, not the trial's seed
    corpus = {**base, "data": {"args": {"seed": 7}}}
    assert other_changes(corpus, {**base, "data": {"args": {"seed": 1}}}) == "data.args.seed=7"


def test_slot_settings_read_old_configs() -> None:
    assert slot_settings({"model": {"norm_placement": "pre"}}) == {"residual": "pre"}
    assert slot_settings({"model": {}}) == {}


def test_a_base_that_is_not_the_papers_says_so(make_trial, snapshot_results) -> None:
    pre = {**SLOTS, "model.residual": "pre"}
    table = build_table(
        [
            make_trial("base", "base", "base", ppl=4.3, bleu=26.0, **pre),
            make_trial("N=1", "C", "C1", ppl=4.8, bleu=24.7, **{**pre, "model.n_layers": 1}),
        ],
        name="pre",
    )
    for fmt in ("text", "md", "json", "latex"):
        assert "differs from the paper's base model in: residual=pre (paper: post)" in render(table, fmt), fmt
    plain = build_table([make_trial("base", "base", "base", ppl=4.3, bleu=26.0, **SLOTS)], name="post")
    assert "differs from the paper" not in render(plain, "md")
    assert "differs from the paper" not in render(build_table(snapshot_results, name="snap"), "md")  # no slots known


def test_published_figures_stand_beside_the_rows_that_make_the_same_change(make_trial) -> None:
    trials = [
        *_revisited(make_trial),
        make_trial("swiglu", "ffn", None, ppl=5.9, bleu=20.4, **{**SLOTS, "model.ffn": "swiglu"}),
        make_trial("relu2", "ffn", None, ppl=5.9, bleu=20.4, **{**SLOTS, "model.ffn": "relu2"}),  # not in their table
    ]
    table = build_table(trials, name="rev")
    rows = {r.name: r for r in table.rows}
    assert rows["swiglu"].published.bleu_delta == 0.40 and rows["rmsnorm"].published.bleu_delta == 0.52
    assert rows["relu2"].published is None and rows["2023 recipe"].published is None  # several changes: none
    assert rows["base"].published is None and rows["pre-norm"].published is None

    md = render(table, "md")
    header = next(line for line in md.splitlines() if line.startswith("|") and "row" in line)
    assert header.rstrip(" |").endswith("Narang ΔBLEU")
    swiglu = next(line for line in md.splitlines() if [c.strip() for c in line.split("|")[2:3]] == ["swiglu"])
    assert swiglu.rstrip(" |").endswith("+0.40")
    assert "Narang et al. 2021 (EMNLP), Table 1" in md
    text = render(table, "text")
    assert "Narang Δ: rmsnorm +0.52, swiglu +0.40" in text  # no room for a column beside the recipe's changes
    record = json.loads(render(table, "json"))["rows"][6]
    assert (record["published_row"], record["published_bleu"]) == ("Narang et al. 2021: SwiGLU", 27.02)
    reader = list(csv.DictReader(io.StringIO(render(table, "csv"))))
    assert reader[2]["published_bleu_delta"] == "0.52" and reader[7]["published_bleu_delta"] == ""
    assert "Narang $\\Delta$BLEU" in render(table, "latex")
