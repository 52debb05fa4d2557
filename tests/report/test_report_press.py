"""Press et al.'s figures beside a language model's position rows, and the two direction summaries."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest

from ablate.report import press
from ablate.report.render import render
from ablate.report.table import build_table
from ablate.report.verdicts import decide

BLOCK = 64
# row -> (positional, PPL at L, 2L, 4L): rotary's L change is below their threshold (-0.01 there), t5's L
# change has the other sign than theirs, everything else goes their way
ROWS = {
    "sinusoidal": ("sinusoidal", (20.0, 24.0, 30.0)),
    "rotary": ("rope", (19.0, 20.0, 22.0)),
    "alibi": ("alibi", (19.5, 19.0, 18.5)),
    "t5 bias": ("t5", (20.5, 21.0, 23.0)),
    "learned": ("learned", (21.0, None, None)),
}


def _trial(make_trial, row: str, positional: str, ppl: tuple, seed: int, arch: str = "decoder", **more):
    t = make_trial(row, "base" if row == "sinusoidal" else "positions", None, seed=seed, ppl=ppl[0] * (1 + 0.01 * seed))
    config = {**t.config, "data": {"block_size": BLOCK}}
    config["model"] = {**config["model"], "arch": arch, "positional": positional, **more}
    metrics = dict(t.metrics)
    for m, v in zip((2, 4), ppl[1:]):
        key = f"val/ppl@{m * BLOCK}"
        metrics[key] = v * (1 + 0.01 * seed) if v is not None else None
        if v is None:
            metrics[f"val/reach@{m * BLOCK}"] = f"cannot reach {m * BLOCK} positions: learned stops at 64"
    return replace(t, config=config, metrics=metrics)


def _table(make_trial, rows=ROWS, **kw):
    results = [_trial(make_trial, name, pos, ppl, s, **kw) for name, (pos, ppl) in rows.items() for s in (1, 2, 3)]
    table = build_table(results, row_order=list(rows), name="lm-positions")
    decide(table)
    return table


def test_the_rows_that_change_only_positions_get_their_figures(make_trial) -> None:
    table = _table(make_trial)
    cells = {r.name: press.cell(table, r) for r in table.rows}
    assert cells["sinusoidal"] == "19.34/51.09/144.00"  # their baseline, beside our base
    assert cells["alibi"] == "18.66/18.05/17.95"
    assert cells["learned"] == ""  # they ran no learned positions


def test_directions_against_base_and_past_l_are_counted_as_theirs(make_trial) -> None:
    found = press.agreement(_table(make_trial))
    # at L: rotary not counted (their -0.01), alibi agrees, t5 disagrees; at 2L and 4L all three agree
    assert [found["against_base"][k][:2] for k in ("1L", "2L", "4L")] == [[1, 2], [3, 3], [3, 3]]
    assert found["past_L"] == {"to": "4L", "agree": 4, "counted": 4}  # ALiBi falls past L, the others rise


def test_a_row_that_goes_the_other_way_past_l_is_a_disagreement(make_trial) -> None:
    rows = {**ROWS, "alibi": ("alibi", (19.5, 20.0, 21.0))}  # ours rises past L where theirs falls
    found = press.agreement(_table(make_trial, rows))
    assert found["past_L"]["agree"] == 3 and found["past_L"]["counted"] == 4
    assert found["against_base"]["4L"][:2] == [3, 3]  # still better than sinusoidal at 4L, as theirs


def test_no_column_where_the_comparison_does_not_hold(make_trial) -> None:
    not_sinusoidal = {"rotary": ROWS["rotary"], "alibi": ROWS["alibi"]}  # base is rotary: not their baseline
    assert not press.applies(_table(make_trial, not_sinusoidal))
    translator = _table(make_trial, arch="encdec")
    assert not press.applies(translator)
    assert "Press" not in render(translator, "text")
    wider = _table(make_trial, {"sinusoidal": ROWS["sinusoidal"], "alibi": ROWS["alibi"]})
    wider.rows[1].changed["d_model"] = 256  # two changes: not their comparison
    assert press.cell(wider, wider.rows[1]) == ""


def test_every_format_carries_the_column_the_lengths_and_the_summaries(make_trial) -> None:
    table = _table(make_trial)
    text, md, latex = (render(table, f) for f in ("text", "md", "latex"))
    for out in (text, md, latex):
        assert press.HEADER in out and "PPL@128" in out and "PPL@256" in out
        assert "Press et al.'s sign" in out and "moves Press et al.'s way" in out
    md_head = next(line for line in md.splitlines() if line.startswith("|") and "row" in line)
    assert "BLEU" not in md_head  # a language model's md table has no BLEU columns
    assert "BLEU" not in next(line for line in latex.splitlines() if "PPL@128" in line)
    data = json.loads(render(table, "json"))
    assert data["press_agreement"]["past_L"]["agree"] == 4
    alibi = next(r for r in data["rows"] if r["row"] == "alibi")
    assert (alibi["press_method"], alibi["press_ppl_4L"]) == ("ALiBi", 17.95)
    rows = list(csv.DictReader(io.StringIO(render(table, "csv"))))
    assert next(r for r in rows if r["row"] == "rotary")["press_ppl_2L"] == "31.17"
    assert next(r for r in rows if r["row"] == "alibi")["ppl@256"]  # the lengths reach the CSV too


def test_the_wandb_summary_and_the_plot_carry_the_lengths(make_trial, tmp_path) -> None:
    from ablate.report.plot import _length_bars, plot_table
    from ablate.report.wandb_summary import table_columns, table_rows

    table = _table(make_trial)
    columns = table_columns(table)
    assert {"ppl@128", "ppl@256_mark", "press_ppl_4L"} <= set(columns)
    alibi = next(dict(zip(columns, r)) for r in table_rows(table) if r[columns.index("row")] == "alibi")
    assert alibi["ppl@256"] == pytest.approx(18.5 * 1.02) and alibi["press_ppl_4L"] == 17.95  # mean of 3 seeds

    class Axes:  # where a bar has no value the panel writes why
        notes: list[str] = []

        def text(self, *args, **kw) -> None:
            self.notes.append(args[2])

    ax, rows = Axes(), [r for r in table.rows if not r.is_base]
    bars = _length_bars(table, rows, 256, ax, 0.4)
    ours_alibi, theirs_alibi = (b[1] for b in bars if b[0] in (1 - 0.2, 1 + 0.2))
    assert ours_alibi == pytest.approx(100 * (18.5 - 30.0) / 30.0)
    assert theirs_alibi == pytest.approx(100 * (17.95 - 144.0) / 144.0)  # Press et al.'s 4L against sinusoidal
    assert ax.notes == [" out of reach"]  # learned positions past max_positions
    assert plot_table(table, tmp_path / "t.png").stat().st_size > 0
