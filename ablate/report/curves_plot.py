"""Learning curves (``ablate table --plot FILE.png`` writes them beside it as ``FILE-curves.png``).

One small panel per row: its dev PPL at every validation against the step (each finished seed one
line) and base's in grey in every panel, on a log scale. A row whose curve still falls steeply at its
last validation has not converged: what the table compares there is how fast each architecture learns.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from ablate.report.rows import AblationTable
from ablate.report.training_checks import STILL_IMPROVING


def plot_curves(table: AblationTable, path: str | Path) -> Path | None:
    """Write the panels to ``path`` (PNG); None when no row has a logged validation."""
    rows = [r for r in table.rows if any(r.curves)]
    if not rows:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = min(4, len(rows))
    n_rows = math.ceil(len(rows) / cols)
    fig = Figure(figsize=(3.2 * max(cols, 2), 2.4 * n_rows + 1.0), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, cols, squeeze=False, sharex=True, sharey=True)
    base = table.base.curves if table.base is not None else []
    for ax, row in zip(axes.flat, rows):
        for points in base:
            ax.plot(*zip(*points), color="#aaaaaa", linewidth=1.0, label="base")
        for points in row.curves:
            if points:
                ax.plot(*zip(*points), color="#1f77b4", linewidth=1.4, marker=".", label=row.name)
        falling = row.still_improving is not None and row.still_improving > STILL_IMPROVING
        note = f"  (still -{row.still_improving:.0%})" if falling else ""
        ax.set_title(row.name + note, fontsize=9, color="#b22222" if falling else "black")
        ax.set_yscale("log")
        ax.grid(color="#eeeeee", linewidth=0.6)
    for ax in axes.flat[len(rows) :]:
        ax.set_visible(False)
    fig.supxlabel("step")
    fig.supylabel("dev PPL (log scale); grey: base")
    warning = textwrap.fill(f"UNDERTRAINED: {table.undertrained}", 45 * cols) if table.undertrained else ""
    fig.suptitle(f"Learning curves: {table.name}" + (f"\n{warning}" if warning else ""), fontsize=9)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    return out
