"""Every format of the tables whose extra columns differ by kind of model, pinned: a language model's with
its longer lengths and Press et al.'s figures, one without them, one whose rows' positions fall short, and
a translator's with another study's figures (Narang et al.) beside its revisited rows. The renderers read
those columns through one list of providers (:mod:`ablate.report.extras`); the pins keep the text, md,
LaTeX, CSV, JSON and W&B summary they printed before, byte for byte. pinned_formats.json holds them,
written by this file run as a script:

    python tests/report/test_report_pinned_formats.py > tests/report/pinned_formats.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ablate.report.render import FORMATS, render
from ablate.report.rows import AblationTable
from ablate.report.table import build_table
from ablate.report.verdicts import decide

PINS = Path(__file__).with_name("pinned_formats.json")
BLOCK = 64
# row -> (positional, PPL at L, 2L, 4L; None: the positions cannot reach it)
POSITIONS = {
    "sinusoidal": ("sinusoidal", (20.0, 24.0, 30.0)),
    "rotary": ("rope", (19.0, 20.0, 22.0)),
    "alibi": ("alibi", (19.5, 19.0, 18.5)),
    "t5 bias": ("t5", (20.5, 21.0, 23.0)),
    "learned": ("learned", (21.0, None, None)),
}


def _lm(trial: Callable[..., Any], row: str, ppl: tuple, seed: int, arch: str | None, **model: Any) -> Any:
    """A trial that measured PPL at L, 2L and 4L (``arch`` None: the config names no family)."""
    t = trial(row, "base" if row == "sinusoidal" else "positions", None, seed=seed, ppl=ppl[0] * (1 + 0.01 * seed))
    config = {**t.config, "data": {"block_size": BLOCK}}
    config["model"] = {**config["model"], **model, **({"arch": arch} if arch else {})}
    metrics = dict(t.metrics)
    for m, v in zip((2, 4), ppl[1:]):
        metrics[f"val/ppl@{m * BLOCK}"] = v * (1 + 0.01 * seed) if v is not None else None
        if v is None:
            metrics[f"val/reach@{m * BLOCK}"] = f"cannot reach {m * BLOCK} positions: learned stops at 64"
    return replace(t, config=config, metrics=metrics)


def _positions(trial: Callable[..., Any], seeds: tuple[int, ...], arch: str | None, **more: Any) -> AblationTable:
    results = [
        _lm(trial, name, ppl, s, arch, positional=pos, **more) for name, (pos, ppl) in POSITIONS.items() for s in seeds
    ]
    table = build_table(results, row_order=list(POSITIONS), name="lm-positions")
    decide(table)
    return table


def _not_press(trial: Callable[..., Any]) -> AblationTable:
    """A language model whose rows change more than positions: Press et al.'s fields, no column of theirs."""
    results = [
        _lm(trial, name, ppl, s, "decoder", positional=pos, d_model=64 if name == "sinusoidal" else 32)
        for name, (pos, ppl) in list(POSITIONS.items())[:3]
        for s in (1, 2)
    ]
    return build_table(results, row_order=list(POSITIONS)[:3], name="lm-wider")


def _waiting(trial: Callable[..., Any]) -> AblationTable:
    t = trial("base", "base", None, state="waiting")
    return build_table([replace(t, config={**t.config, "model": {**t.config["model"], "arch": "decoder"}})], name="lm")


def _revisited(trial: Callable[..., Any], paper: bool) -> AblationTable:
    """A revisited table: rows with Narang et al.'s figures; with ``paper``, the paper's rows too, long row
    names and a third seed running, too wide for the terminal to keep Narang et al.'s column."""
    long = " feed-forward, as in PaLM" if paper else ""
    rows = [
        ("base", "base", "base" if paper else None, {}),
        ("swiglu" + long, "ffn", None, {"model.ffn": "swiglu"}),
        ("rmsnorm", "norm", None, {"model.norm": "rmsnorm"}),
        ("h=1", "A", "A1" if paper else None, {"model.n_heads": 1}),
    ]
    results = [
        trial(name, group, key, s, ppl=5.0 + 0.1 * i + 0.05 * s, bleu=20.0 - 0.3 * i + 0.1 * s, **changes)
        for i, (name, group, key, changes) in enumerate(rows)
        for s in (1, 2)
    ]
    if paper:
        results += [trial(name, group, key, 3, state="running", **changes) for name, group, key, changes in rows]
    table = build_table(results, row_order=[r[0] for r in rows], name="revisited")
    decide(table)
    return table


def tables(trial: Callable[..., Any]) -> dict[str, AblationTable]:
    """The pinned tables, by name."""
    return {
        "lm-positions": _positions(trial, (1, 2, 3), "decoder"),
        "lm-positions-one-seed": _positions(trial, (1,), "decoder"),
        "lengths-no-family": _positions(trial, (1, 2), None),
        "lm-not-press": _not_press(trial),
        "lm-waiting": _waiting(trial),
        "revisited-paper": _revisited(trial, True),
        "revisited": _revisited(trial, False),
    }


def outputs(table: AblationTable) -> dict[str, Any]:
    """Every format of ``table``, and the W&B summary's columns and rows."""
    from ablate.report.wandb_summary import table_columns, table_rows

    out: dict[str, Any] = {fmt: render(table, fmt) for fmt in FORMATS}
    out["wandb"] = json.loads(json.dumps({"columns": table_columns(table), "rows": table_rows(table)}, default=str))
    return out


def pins(trial: Callable[..., Any]) -> dict[str, Any]:
    return {name: outputs(table) for name, table in tables(trial).items()}


@pytest.mark.parametrize("name", ["lm-positions", "lm-positions-one-seed", "lengths-no-family", "lm-not-press"])
def test_a_language_models_formats_are_as_pinned(make_trial, name: str) -> None:
    expected = json.loads(PINS.read_text(encoding="utf-8"))[name]
    found = outputs(tables(make_trial)[name])
    for fmt in expected:
        assert found[fmt] == expected[fmt], f"{name}: {fmt} differs from {PINS.name}"


@pytest.mark.parametrize("name", ["lm-waiting", "revisited-paper", "revisited"])
def test_the_other_tables_formats_are_as_pinned(make_trial, name: str) -> None:
    expected = json.loads(PINS.read_text(encoding="utf-8"))[name]
    found = outputs(tables(make_trial)[name])
    for fmt in expected:
        assert found[fmt] == expected[fmt], f"{name}: {fmt} differs from {PINS.name}"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))  # the records of conftest.py, outside pytest
    from conftest import trial

    json.dump(pins(trial), sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
    print()
