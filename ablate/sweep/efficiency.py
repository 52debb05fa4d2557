"""Where a local sweep's slot time went: the efficiency line printed when a sweep ends.

Slot time is the controller's wall time times the trials it runs at once. Each trial that finished in
this run reports (ablate/train/final.py) its start-up (spawn to training's own start: interpreter,
imports), data (opening the prepared corpus), set-up (model, trainer), training steps, validation
during training (checkpoint writes included) and the final evaluation. What no finished trial
accounts for is idle slot time, or time spent in trials that did not finish (killed, failed, pruned).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# (label, the metrics keys that add up to it)
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("training", ("train_time_s",)),
    ("evaluation", ("val_time_s", "eval_time_s")),
    ("start-up", ("startup_s",)),
    ("data", ("data_s",)),
    ("set-up", ("setup_s",)),
)


def _seconds(metrics: dict[str, Any], keys: tuple[str, ...]) -> float:
    total = 0.0
    for key in keys:
        try:
            total += max(0.0, float(metrics.get(key) or 0.0))
        except (TypeError, ValueError):
            continue
    return total


def efficiency_lines(finished: Iterable[dict[str, Any]], wall_s: float, slots: int) -> list[str]:
    """Two lines: the share of slot time in training + evaluation steps, then the breakdown.

    ``finished``: the metrics of the trials that finished in this run; nothing is printed without one.
    """
    metrics = [m for m in finished if m.get("train_time_s") is not None]
    slot_s = wall_s * max(1, slots)
    if not metrics or slot_s <= 0:
        return []
    spent = {label: sum(_seconds(m, keys) for m in metrics) for label, keys in PHASES}
    steps = spent["training"] + spent["evaluation"]
    rest = max(0.0, slot_s - sum(spent.values()))
    parts = [f"{label} {spent[label] / slot_s:.0%}" for label, _ in PHASES]
    per_trial = spent["start-up"] / len(metrics)
    return [
        f"efficiency: {steps / slot_s:.0%} of slot time in training and evaluation steps "
        f"({slots} slot(s) x {wall_s:.0f} s, {len(metrics)} trial(s) finished in this run)",
        f"  {', '.join(parts)}, idle or unfinished trials {rest / slot_s:.0%}; start-up {per_trial:.1f} s per trial",
    ]
