"""The dry run of every translator sweep file ablate ships, pinned: a language model's code (model.arch,
its budgets, its cost estimate) must leave a translator's parameters, steps, tokens per step, FLOPs and
device-hours as they were. pinned_dry_runs.json holds them as the code before the language model printed
them (commit 114f4bd), written by this file run as a script:

    python tests/sweep/test_pinned_dry_runs.py > tests/sweep/pinned_dry_runs.json   # at that commit

The figures that depend on whether a corpus is prepared in the cache (epochs, target tokens; steps and
what follows from them under a budget in epochs or tokens) are left out, so the pins hold on a fresh
machine and on a warm one.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINS = Path(__file__).with_name("pinned_dry_runs.json")
KEPT = ("trial_id", "row", "seed", "params", "tokens_per_step", "budget", "devices", "split")
IN_STEPS = ("steps", "flops", "device_hours", "wall_hours", "step_s", "peak_gib")  # kept under train.max_steps


def translator_files() -> list[str]:
    """The shipped sweep files of translators (a language model's name starts with lm-)."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "sweeps").glob("*.yaml") if not p.name.startswith("lm-"))


def figures(name: str) -> Any:
    """What the dry run says of each trial of a sweep file, as the pins keep it."""
    from ablate.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["sweep", str(ROOT / name), "--dry-run", "--json"])
    data = json.loads(out.getvalue().replace(str(ROOT), "<repo>"))  # pins hold in any checkout's folder
    if "trials" not in data:  # a search prints its bounds
        return {k: v for k, v in data.items() if k != "file"}
    kept = []
    for trial in data["trials"]:
        row = {k: trial.get(k) for k in KEPT}
        if trial.get("budget") == "train.max_steps":
            row.update({k: trial.get(k) for k in IN_STEPS})
        kept.append(row)
    return {"code": code, "trials": kept}


@pytest.mark.parametrize("name", translator_files())
def test_a_translators_dry_run_is_as_before_the_language_model(name: str) -> None:
    pins = json.loads(PINS.read_text(encoding="utf-8"))
    assert name in pins, f"{name} is not pinned: add it to {PINS.name} (see this file's docstring)"
    assert figures(name) == pins[name]


if __name__ == "__main__":
    json.dump({name: figures(name) for name in translator_files()}, sys.stdout, indent=1, sort_keys=True)
    print()
