"""Wen et al.'s figures beside an optimizer table, and whether their direction holds here.

Wen, Hall, Ma and Liang (2025, "Fantastic Pretraining Optimizers and Where to Find Them") tuned every
optimizer's hyperparameters by coordinate descent and trained language models of 130M to 1.2B parameters
at 1x to 8x the Chinchilla budget, one run per setting; their final losses are public (the results files of
marin-community/marin, experiments/optimizer_sweep/Analysis/Results). Against a tuned AdamW, Muon's loss is
lower at every scale, but by less as models grow: -0.067 at 130M and 1x Chinchilla (3.4626 vs 3.5291),
-0.004 at 1.2B and 8x (2.7484 vs 2.7523), while two runs of one GPT-2-small recipe differ by about 0.002
(the modded-nanogpt speedrun's spread). The claimed 1.4-2x speed-ups shrank to at most 1.4x at 130M.

A table qualifies when it is a language model's, its base row trains with ``adamw``, and a row besides
base changes its optimizer (and, for Schedule-Free, its schedule, or a tuned learning rate) and nothing
else. Such a row gets their loss change against AdamW at 130M and 1x Chinchilla (``Wen Δ``: the nearest of
their settings to a CPU-scale model), and one line under the table says, for Muon, whether its dev loss
here moved their way and by how much against the seed spread (the paired seeds' standard deviation).
The column, its fields and its line are one provider (:mod:`ablate.report.provider`).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from ablate.report.provider import REFERENCES, ColumnProvider

WEN = (
    "Wen et al. 2025 (Fantastic Pretraining Optimizers), final loss change against a tuned AdamW at 130M "
    "parameters and 1x Chinchilla (their results files, one run per setting; Muon at 1.2B and 8x: -0.004)"
)
HEADER = "Wen Δ"
# our optimizer -> their loss at 130M and 1x Chinchilla, AdamW's there being 3.5291
_FIGURES: dict[str, float] = {"muon": 3.4626}
ADAMW_130M = 3.5291
RECIPE_KEYS = frozenset({"train.optimizer", "train.schedule", "train.lr"})  # what an optimizer row may change


def _changes(row: Any) -> dict[str, str]:
    """The settings a row changes that no column shows (``key=value`` of its "other" cell)."""
    text = str(row.changed.get("other") or "")
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def optimizer_of(table: Any, row: Any) -> str | None:
    """The optimizer a row swaps in for base's AdamW, when that (and its schedule or rate) is all it changes."""
    base_optimizer = ((table.base_config.get("train") or {}).get("optimizer")) or "adam"
    base_optimizer = base_optimizer.get("name") if isinstance(base_optimizer, dict) else base_optimizer
    changes = _changes(row)
    if set(row.changed) - {"other"} or not changes.keys() <= RECIPE_KEYS or "train.optimizer" not in changes:
        return None
    return changes["train.optimizer"] if base_optimizer == "adamw" else None


def applies(table: Any) -> bool:
    return bool(table.family.per_length and any(optimizer_of(table, r) for r in table.rows if not r.is_base))


def _theirs(table: Any, row: Any) -> float | None:
    found = _FIGURES.get(optimizer_of(table, row) or "")
    return None if found is None else found - ADAMW_130M


def paired_loss_deltas(table: Any, row: Any) -> list[float]:
    """ln(row PPL) - ln(base PPL) at each seed both finished: the dev loss change, seed by seed."""
    base = table.base
    if base is None or row.ppl is None or base.ppl is None:
        return []
    theirs = dict(zip(base.ppl.seeds, base.ppl.values))
    return [math.log(v) - math.log(theirs[s]) for s, v in zip(row.ppl.seeds, row.ppl.values) if s in theirs]


def direction_line(table: Any) -> str | None:
    """Muon against the tuned AdamW here, beside their direction."""
    row = next((r for r in table.rows if optimizer_of(table, r) == "muon"), None)
    deltas = paired_loss_deltas(table, row) if row is not None else []
    if not deltas:
        return None
    mean = statistics.fmean(deltas)
    spread = f", seed sd {statistics.stdev(deltas):.3f} over {len(deltas)} paired seeds" if len(deltas) > 1 else ""
    way = "their way (lower)" if mean < 0 else "against theirs (higher)"
    return f"Muon vs tuned AdamW: dev loss {mean:+.3f} here{spread}: {way}; Wen et al.: -0.067 at 130M, -0.004 at 1.2B"


class WenColumn(ColumnProvider):
    """Their loss change for the row's optimizer against AdamW, and the Muon direction line."""

    place = REFERENCES

    def headers(self, table: Any, layout: str) -> list[str]:
        return [HEADER] if applies(table) else []

    def cells(self, table: Any, row: Any, layout: str) -> list[str]:
        theirs = _theirs(table, row)
        return [f"{theirs:+.3f}" if theirs is not None else ""]

    def record(self, table: Any | None, row: Any) -> dict[str, Any]:
        if table is None or not applies(table):
            return {}
        theirs = _theirs(table, row)
        return {"wen_loss_delta": round(theirs, 4) if theirs is not None else None}

    def notes(self, table: Any) -> list[str]:
        if not applies(table):
            return []
        line = direction_line(table)
        return [f"{HEADER}: {WEN}."] + ([line] if line else [])


WEN_COLUMN = WenColumn()
