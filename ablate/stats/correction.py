"""Adjusting a family of p-values for multiple testing: Holm (family-wise error), Benjamini-Hochberg (false
discovery rate) or none. Used by the report's verdicts (:mod:`ablate.report.verdicts`) and by an adaptive
sweep's looks (:mod:`ablate.sweep.plan.adaptive`), which must decide exactly as the report will.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CORRECTIONS = ("holm", "bh", "none")
DEFAULT_CORRECTION = "holm"


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values: the i-th smallest is multiplied by (m - i), made monotone, capped at 1."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


def adjust(p_values: Sequence[float], correction: str) -> list[float]:
    """The p-values adjusted over the family by ``correction`` (holm | bh | none)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r}: use one of {', '.join(CORRECTIONS)}")
    if not len(p_values):
        return []
    if correction == "holm":
        return holm(p_values)
    if correction == "bh":
        from scipy.stats import false_discovery_control  # 0.66 s to import: only when BH is asked for

        return np.asarray(false_discovery_control(np.asarray(p_values, dtype=float), method="bh")).tolist()
    return [float(p) for p in p_values]
