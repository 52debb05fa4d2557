"""`ablate table` on tiny REAL sweeps (real store, worker, trainer; two rows x two seeds, built once per
session): the uncertainty columns and marks of a sweep whose models learned, and the unigram floor,
"not learned" marks and withheld BLEU of one whose models did not (two training steps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_sweep import build

from ablate.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.integration]  # trains 8 tiny models: minutes on 2 busy cores


@pytest.fixture(scope="session")
def real_sweeps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> sweep file, each sweep built (trained) the first time a test asks for it."""
    folder = tmp_path_factory.mktemp("real-sweeps")
    steps = {"learned": 150, "untrained": 2}

    class Built(dict):
        def __missing__(self, name: str) -> Path:
            self[name] = build(folder, name, steps[name], folder / "cache")
            return self[name]

    return Built()


def test_learned_sweep_prints_intervals_p_values_and_marks(real_sweeps: dict[str, Path], capsys) -> None:
    sweep = real_sweeps["learned"]
    assert main(["table", str(sweep), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    base, row = data["rows"]
    floor = data["unigram_floor"]
    assert floor > 1 and base["learned"] is True and row["learned"] is True and base["ppl"] < 0.8 * floor
    assert base["ppl_n"] == row["ppl_n"] == 2
    assert row["ppl_delta_low"] <= row["ppl_delta_boot"] <= row["ppl_delta_high"]
    assert 0 < row["ppl_p_boot"] <= 1 and 0 <= row["ppl_p_seeds"] <= 1 and row["ppl_boot_sentences"] == 2 * 150
    # 150 steps of a 1-layer model: dev PPL well below the floor, but its outputs are not translations
    # yet (chrF ~1): the figures stay, the table says so and marks nothing, however loose alpha is
    assert data["base_chrf"] < 25 and "not translations yet" in data["not_translating"]
    assert row["ppl_significant"] is None and row["ppl_verdict"] is None and row["learning"] == "does not translate yet"

    assert main(["table", str(sweep), "--format", "md", "--alpha", "0.999"]) == 0
    md = capsys.readouterr().out
    line = next(x for x in md.splitlines() if "eps_ls=0.0 [D3]" in x)
    cells = [c.strip() for c in line.split("|")]
    assert cells[13].endswith(")")  # no mark
    assert cells[14].startswith(("+", "-")) and "[" in cells[14]  # Δ boot [95% CI]
    assert " / " in cells[15]  # bootstrap p / the paired test's p over the two seeds
    assert "DOES NOT TRANSLATE YET" in md and "seed-matched pairs pooled" in md
    assert f"floor {floor:.2f}" in md  # beside base


def test_untrained_sweep_shows_the_floor_marks_rows_and_withholds_bleu(real_sweeps: dict[str, Path], capsys) -> None:
    sweep = real_sweeps["untrained"]
    assert main(["table", str(sweep)]) == 0
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= 110
    assert "Unigram floor (dev PPL of a unigram model of the training targets)" in text
    rows = [x for x in text.splitlines() if x.startswith(("base  ", "(D)"))]
    assert len(rows) == 2 and all("†" in x and "withheld" in x for x in rows)
    assert "BLEU withheld: base" in text
    assert main(["table", str(sweep), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["learned"] for r in data["rows"]] == [False, False]
    assert data["bleu_withheld"] and all(r["bleu"] is None for r in data["rows"])
    assert data["rows"][1]["no_bootstrap"]["ppl"] == "base learned nothing"
    assert data["fidelity"]["n_ppl"] == 0 and data["fidelity"]["bleu_withheld"] is True
