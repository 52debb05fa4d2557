"""Has the table learned the task? On real stores with really prepared data, the trials' validations and
dev outputs written by hand so each case is known: base still falling fast when training stopped (the
table says "undertrained" in every format and the plot), base at a plateau (it does not), and base
output that is not translation (the table says "does not translate yet" and marks nothing)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from real_sweep import finish_by_hand, prepare, write_sweep

from ablate.cli import main
from ablate.report.training_checks import last_quarter
from ablate.sweep.loader import open_sweep
from ablate.sweep.plan import trial_states

ROWS = [
    {"name": "base", "group": "base", "paper": "base"},
    {"name": "eps_ls=0.0", "group": "D", "paper": "D3", "overrides": ["train.label_smoothing=0.0"]},
]
FALLING = [(400, 40.0), (800, 20.0), (1200, 12.0)]  # 40% lower over the last third
PLATEAU = [(400, 13.0), (800, 12.4), (1200, 12.3)]  # 0.8%


def _outputs(garbage: bool):
    def outputs(row: str, seed: int, refs: list[str], tokens: list[int]) -> tuple[list[str], list[float]]:
        rng = np.random.default_rng(seed)
        per_token = 1.5 if row == "eps_ls=0.0" else 2.0
        nll = [float(n * per_token * (1 + 0.02 * seed) + rng.uniform(0, 0.1)) for n in tokens]
        words = [w for r in refs[:40] for w in r.split()]
        hyps = [" ".join(rng.choice(words, 6)) for _ in refs[:40]] if garbage else list(refs[:40])
        return hyps, nll

    return outputs


def _write_curves(sweep_file: Path, points: list[tuple[int, float]]) -> None:
    for view in trial_states(open_sweep(sweep_file).store, open_sweep(sweep_file).sweep):
        with open(Path(view.run_dir) / "metrics.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["step", "train/loss", "val/ppl"])
            for step, ppl in points:
                w.writerows([[step - 1, 2.0, ""], [step, "", ppl * (1.5 if view.row == "base" else 1.0)]])


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("learning-data") / "cache"


def _sweep(tmp_path: Path, cache: Path, name: str, points, garbage: bool = False) -> Path:
    path = write_sweep(tmp_path, name, cache, ROWS)
    finish_by_hand(path, prepare(path), _outputs(garbage))
    _write_curves(path, points)
    return path


def test_last_quarter_reads_the_span_it_measured() -> None:
    assert last_quarter(FALLING) == pytest.approx((0.4, 800, 1200))
    assert last_quarter([(1200, 12.0)]) is None and last_quarter([(1000, 13.0), (1200, 12.0)]) is None


def test_a_table_stopped_while_base_still_falls_says_undertrained_everywhere(tmp_path, cache, capsys, monkeypatch):
    path = _sweep(tmp_path, cache, "falling", FALLING)
    texts = {}
    for fmt in ("text", "md", "csv", "json", "latex"):
        assert main(["table", str(path), "--format", fmt]) == 0
        texts[fmt] = capsys.readouterr().out
    assert "UNDERTRAINED: base's dev PPL still fell 40.0% from step 800 to 1200" in texts["text"]
    assert "UNDERTRAINED" in texts["md"] and "‡" in texts["md"] and "UNDERTRAINED" in texts["latex"]
    rows = list(csv.DictReader(texts["csv"].splitlines()))
    assert {r["learning"] for r in rows} == {"undertrained (base still improving)"}
    assert float(rows[0]["ppl_last_quarter_drop"]) == pytest.approx(0.4)
    data = json.loads(texts["json"])
    assert "learning speed, not capacity" in data["undertrained"] and data["rows"][1]["ppl_last_quarter_drop"] == 0.4
    titles: list[str] = []
    from matplotlib.figure import Figure

    original = Figure.suptitle
    monkeypatch.setattr(Figure, "suptitle", lambda self, t, **kw: titles.append(t) or original(self, t, **kw))
    assert main(["table", str(path), "--plot", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t-curves.png").is_file() and all("UNDERTRAINED" in t for t in titles) and len(titles) == 2


def test_a_table_at_a_plateau_is_not_marked(tmp_path, cache, capsys):
    path = _sweep(tmp_path, cache, "plateau", PLATEAU)
    assert main(["table", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["undertrained"] is None and data["not_translating"] is None
    assert {r["learning"] for r in data["rows"]} == {None}


def test_base_output_that_is_not_translation_says_so_and_marks_nothing(tmp_path, cache, capsys):
    path = _sweep(tmp_path, cache, "garbage", PLATEAU, garbage=True)
    assert main(["table", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["base_chrf"] < 25 and "not translations yet" in data["not_translating"]
    better = data["rows"][1]
    assert better["ppl"] < data["rows"][0]["ppl"] and better["ppl_p_seeds"] is not None  # the figures stay
    assert better["ppl_verdict"] is None and better["ppl_significant"] is None  # ... unmarked
    assert main(["table", str(path)]) == 0
    assert "DOES NOT TRANSLATE YET" in capsys.readouterr().out
