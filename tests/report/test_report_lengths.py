"""A language model's table: a PPL column per evaluation length beyond the training block, each with its
own seed-level marks, and a dash with the reason where a row's positions cannot reach the length."""

from __future__ import annotations

from dataclasses import replace

from ablate.report.lengths import extra_lengths, length_cell, length_notes, length_record
from ablate.report.render import render
from ablate.report.table import build_table
from ablate.report.verdicts import decide

SEEDS = (1, 2, 3, 4)


def _lm(trial, row: str, group: str, ppl: dict[int, float | None], seed: int) -> object:
    t = trial(row, group, None, seed=seed, ppl=ppl[64] * (1 + 0.01 * seed), bleu=None)
    config = {**t.config, "data": {**t.config.get("data", {}), "block_size": 64}}
    metrics = dict(t.metrics)
    for n, v in ppl.items():
        if v is None:
            metrics[f"val/ppl@{n}"], metrics[f"val/reach@{n}"] = None, f"cannot reach {n} positions"
        else:
            metrics[f"val/ppl@{n}"] = v * (1 + 0.01 * seed) if n != 64 else t.metrics["val/ppl"]
    return replace(t, config=config, metrics=metrics)


def _table(trial):
    rows = {
        "sinusoidal": ("base", {64: 20.0, 128: 24.0, 256: 30.0}),
        "alibi": ("positions", {64: 19.0, 128: 18.5, 256: 18.4}),
        "learned": ("positions", {64: 21.0, 128: None, 256: None}),
        "same": ("positions", {64: 20.0, 128: 24.0, 256: 30.0}),
    }
    results = [_lm(trial, name, group, ppl, s) for name, (group, ppl) in rows.items() for s in SEEDS]
    table = build_table(results, row_order=list(rows), name="lm")
    decide(table)
    return table


def test_each_longer_length_is_a_column_with_its_own_marks(make_trial) -> None:
    table = _table(make_trial)
    alibi, learned, same = (next(r for r in table.rows if r.name == n) for n in ("alibi", "learned", "same"))
    assert extra_lengths(table) == [128, 256]  # 64, the training block, is the PPL column
    assert length_cell(table, alibi, 256).endswith("(-11.89)*")  # better at 4L, decided over seeds
    assert length_cell(table, same, 128).endswith("(+0.00)≈")  # the same as base within the margin
    assert length_cell(table, learned, 128) == "—"
    assert any("learned at 128: cannot reach 128 positions" in line for line in length_notes(table))
    assert length_record(learned)["ppl@256_reach"] == "cannot reach 256 positions"


def test_the_terminal_table_trades_bleu_for_the_lengths(make_trial) -> None:
    text = render(_table(make_trial), "text")
    head = next(line for line in text.splitlines() if "dev PPL (Δ)" in line)
    assert "PPL@128 (Δ)" in head and "PPL@256 (Δ)" in head and "BLEU" not in head


def test_a_language_models_table_has_no_bleu_columns_even_without_longer_lengths(make_trial) -> None:
    """A language model never decodes: its table drops BLEU, also before any trial finished."""
    lm = {**make_trial("base", "base", None).config}
    lm["model"] = {**lm["model"], "arch": "decoder"}
    waiting = replace(make_trial("base", "base", None, state="waiting"), config=lm)
    head = next(line for line in render(build_table([waiting], name="lm"), "text").splitlines() if "dev PPL" in line)
    assert "BLEU" not in head
    translator = make_trial("base", "base", None, state="waiting")
    head = next(line for line in render(build_table([translator], name="t"), "text").splitlines() if "dev PPL" in line)
    assert "dev BLEU (Δ)" in head


def test_one_seed_rows_say_their_longer_lengths_are_untested(make_trial) -> None:
    rows = {"sinusoidal": ("base", {64: 20.0, 128: 24.0}), "alibi": ("positions", {64: 19.0, 128: 18.5})}
    results = [_lm(make_trial, name, group, ppl, 1) for name, (group, ppl) in rows.items()]
    table = build_table(results, row_order=list(rows), name="lm")
    decide(table)
    alibi = next(r for r in table.rows if r.name == "alibi")
    assert length_cell(table, alibi, 128).endswith("(-5.56)")  # seed 1 scales both by 1.01; no mark
    assert any(line.startswith("one seed, so no mark") and "alibi" in line for line in length_notes(table))
    assert not any("one seed" in line for line in length_notes(_table(make_trial)))  # 4 seeds: tested
