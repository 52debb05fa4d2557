"""How the table prints a figure: a mean ± std over seeds, a signed delta, a row that has no figure yet.

Below :mod:`ablate.report.cells` (the display strings of every layout), so that the extra columns'
providers (:mod:`ablate.report.lengths`) format their cells as the PPL column does without importing the
module that lists them.
"""

from __future__ import annotations

from ablate.report.rows import Stat

MARKERS = {"waiting": "…", "running": "running", "failed": "failed"}  # a row none of whose trials finished


def signed(x: float, digits: int) -> str:
    text = f"{x:+.{digits}f}"
    return text.replace("-", "+", 1) if float(text) == 0 else text  # no "-0.00"


def fmt_stat(stat: Stat | None, digits: int) -> str:
    if stat is None:
        return ""
    if stat.std is None:
        return f"{stat.mean:.{digits}f}"
    return f"{stat.mean:.{digits}f} ± {stat.std:.{digits}f}"
