"""An optimizer table on a tuned AdamW base: Wen et al.'s loss change beside the Muon row, and the line that
says whether Muon's dev loss here moved their way against the seed spread; no column on other tables."""

from __future__ import annotations

import json
import math
from dataclasses import replace

from ablate.report import wen
from ablate.report.render import render
from ablate.report.table import build_table
from ablate.report.verdicts import decide

ROWS = {"adamw": ("adamw", 20.0), "muon": ("muon", 19.0), "lion": ("lion", 20.5)}


def _table(make_trial, base_optimizer: str = "adamw"):
    results = []
    for row, (optimizer, ppl) in ROWS.items():
        for seed in (1, 2, 3):
            t = make_trial(row, "base" if row == "adamw" else "optimizer", None, seed=seed, ppl=ppl + 0.1 * seed)
            chosen = base_optimizer if row == "adamw" else optimizer
            train = {**t.config["train"], "optimizer": chosen}
            model = {**t.config["model"], "arch": "decoder"}
            results.append(replace(t, config={**t.config, "train": train, "model": model, "data": {"block_size": 64}}))
    table = build_table(results, row_order=list(ROWS), name="lm-optimizers")
    decide(table)
    return table


def test_the_muon_row_gets_their_change_and_the_direction_line(make_trial) -> None:
    table = _table(make_trial)
    assert wen.applies(table)
    muon = next(r for r in table.rows if r.name == "muon")
    deltas = wen.paired_loss_deltas(table, muon)
    assert deltas == [math.log(19.0 + 0.1 * s) - math.log(20.0 + 0.1 * s) for s in (1, 2, 3)]
    text = render(table, "text")
    assert "Wen Δ" in text and "-0.067" in text and "Muon vs tuned AdamW: dev loss -0.05" in text
    assert "their way (lower)" in text
    rows = {r["row"]: r for r in json.loads(render(table, "json"))["rows"]}
    assert rows["muon"]["wen_loss_delta"] == -0.0665 and rows["lion"]["wen_loss_delta"] is None


def test_no_column_without_an_adamw_base(make_trial) -> None:
    table = _table(make_trial, base_optimizer="adam")
    assert not wen.applies(table) and "Wen" not in render(table, "text")
