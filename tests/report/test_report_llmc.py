"""A language model trained on GPT-2-tokenized token shards: every row's dev loss and llm.c's published 3.28
beside base, in every layout; no such column for other data."""

from __future__ import annotations

import json
import math
from dataclasses import replace

from ablate.report import llmc
from ablate.report.render import render
from ablate.report.table import build_table
from ablate.report.verdicts import decide

GPT2_DATA = {"corpus": "shards", "block_size": 1024, "vocab_size": 50304, "eos_id": 50256}


def _table(make_trial, data):
    results = []
    for row, ppl in (("base", 27.0), ("rope", 26.0)):
        for seed in (1, 2):
            t = make_trial(row, "base" if row == "base" else "positions", None, seed=seed, ppl=ppl * (1 + 0.01 * seed))
            config = {**t.config, "data": dict(data), "model": {**t.config["model"], "arch": "decoder"}}
            results.append(replace(t, config=config))
    table = build_table(results, row_order=["base", "rope"], name="gpt2")
    decide(table)
    return table


def test_gpt2_shards_get_the_dev_loss_and_the_published_figure(make_trial) -> None:
    table = _table(make_trial, GPT2_DATA)
    assert llmc.applies(table)
    expected = (math.log(27.0 * 1.01) + math.log(27.0 * 1.02)) / 2  # the mean of the seeds' losses
    assert llmc.dev_loss(table.base) == expected
    md, text = render(table, "md"), render(table, "text")
    assert "val loss" in md and "llm.c" in md and "3.28" in md
    assert f"{expected:.3f}" in text and "3.28" in text and "FineWeb validation loss 3.28" in text
    rows = {r["row"]: r for r in json.loads(render(table, "json"))["rows"]}
    assert rows["base"]["llmc_val_loss"] == 3.28 and rows["rope"]["llmc_val_loss"] is None
    assert rows["rope"]["val_loss"] == round(llmc.dev_loss(table.rows[1]), 4)
    assert "val_loss" in render(table, "csv").splitlines()[0]


def test_other_data_gets_no_llmc_column(make_trial) -> None:
    for data in ({**GPT2_DATA, "corpus": "builtin"}, {"corpus": "shards", "block_size": 64, "vocab_size": 512}):
        table = _table(make_trial, data)
        assert not llmc.applies(table)
        assert "llm.c" not in render(table, "text") and "val_loss" not in render(table, "json")
