"""A language model sweep with the real trainer on the local launcher, read back by every command that
reads a translator's: the table's bootstrap over dev blocks (one seed: a ° mark, never silence), adaptive
seeds, `ablate plan` and `ablate compare`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from sweep_harness import LM_TINY, fake_env

from ablate.sweep.loader import load_results

# 1,000 steps: enough to learn (below the unigram floor), or the table would withhold its statistics. A
# language model keeps every document, however long, and its floor is of that whole text; 250 steps do
# not suffice on it (dev PPL 29 against a floor of 30; at 1,000 steps 17, in 4 s of training).
# data.max_len=200 (the translator's pair filter) keeps every builtin sentence in the prepared train split
# (the tiny experiment's 32 keeps 7%), so the translator's view of the folder and the LM's agree.
LM = [*LM_TINY, "data.max_len=200", "train.max_steps=1000", "train.val_every_steps=1000"]
ROWS = [
    {"name": "sinusoidal", "group": "base"},
    {"name": "alibi", "group": "positions", "overrides": ["model.positional=alibi"]},
]


def _ablate(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "ablate", *args], env=fake_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


@pytest.mark.slow
def test_a_language_model_sweep_is_read_by_table_plan_and_compare(write_sweep) -> None:
    one = write_sweep(rows=ROWS, overrides=LM, name="lm-one", filename="one.yaml")
    _ablate("sweep", str(one))
    table = json.loads(_ablate("table", str(one), "--format", "json").stdout)
    alibi = next(r for r in table["rows"] if r["row"] == "alibi")
    # one seed each: the paired bootstrap over dev blocks decides (or not) and says so in its unit
    assert alibi["ppl_unit"] == "sentences" and alibi["ppl_delta_boot"] is not None, alibi
    assert alibi["ppl@32"] is not None and table["rows"][0]["press_method"] == "Sinusoidal"
    assert not any("no saved dev outputs" in note for note in table["notes"])

    seeds = {"start": 2, "max": 3}
    adaptive = write_sweep(rows=ROWS, overrides=LM, name="lm-adaptive", filename="adaptive.yaml", seeds=seeds)
    _ablate("sweep", str(adaptive))
    views = load_results(adaptive)
    assert {v.row for v in views} == {"sinusoidal", "alibi"} and all(v.state == "done" for v in views)
    assert len(views) >= 4  # the first two seeds of each row, and a third where a look left it undecided

    plan = _ablate("plan", str(adaptive)).stdout
    assert "alibi" in plan and "seeds" in plan
    compare = json.loads(_ablate("compare", str(one), str(adaptive), "--format", "json").stdout)
    assert "alibi" in json.dumps(compare)
