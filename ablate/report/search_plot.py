"""A PNG of a search sweep's optimization history: one panel per row (``<runs>/<sweep>/search.png``).

x: the trial's number in the row's study; y: the search metric. Completed trials are dots, pruned
ones x-marks at the value they were pruned at, the best so far a step line, the best trial a star.
A log y axis when the values span more than a factor 3 (a diverging learning rate's PPL of 500
would flatten the rest).

Not ``optuna.visualization.matplotlib.plot_optimization_history``: it is experimental, draws one
study per call on its own axes, and leaves pruned trials out, though in a pruned search they are
most of the trials and show where the pruner cut. The points come from the table's
:class:`ablate.report.search_view.TunedRow` (the store's trial views), so no study is opened here
and a journal store draws the same. matplotlib is imported only here, with the Agg canvas.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

from ablate.report.cells import row_label
from ablate.report.rows import AblationTable, ReportRow
from ablate.report.search_view import TunedRow, spec_text

DONE_COLOR = "#1f77b4"
PRUNED_COLOR = "#d62728"
BEST_COLOR = "#2ca02c"
MAX_COLUMNS = 3
LOG_RATIO = 3.0  # a log y axis when the largest value is more than this times the smallest


def best_so_far(tuned: TunedRow, minimize: bool) -> tuple[list[int], list[float]]:
    """(numbers, values) of the running best over the completed trials, in trial order."""
    xs: list[int] = []
    ys: list[float] = []
    for p in tuned.history:
        if p.state != "done" or p.value is None:
            continue
        better = not ys or (p.value < ys[-1] if minimize else p.value > ys[-1])
        xs.append(p.number)
        ys.append(p.value if better else ys[-1])
    return xs, ys


def _panel(ax, row: ReportRow, metric: str, minimize: bool) -> None:
    from matplotlib.ticker import MaxNLocator

    tuned: TunedRow = row.search
    done = [p for p in tuned.history if p.state == "done" and p.value is not None]
    pruned = [p for p in tuned.history if p.state == "pruned" and p.value is not None]
    ax.scatter([p.number for p in done], [p.value for p in done], color=DONE_COLOR, s=22, zorder=3)
    ax.scatter([p.number for p in pruned], [p.value for p in pruned], color=PRUNED_COLOR, marker="x", s=26, zorder=3)
    xs, ys = best_so_far(tuned, minimize)
    if xs:
        last = max(p.number for p in tuned.history)
        ax.step([*xs, last], [*ys, ys[-1]], where="post", color=BEST_COLOR, linewidth=1.4)
    if tuned.best_number is not None and tuned.best.best_value is not None:
        ax.scatter(
            [tuned.best_number],
            [tuned.best.best_value],
            marker="*",
            s=140,
            color=BEST_COLOR,
            edgecolor="black",
            linewidth=0.5,
            zorder=4,
        )
    values = [p.value for p in tuned.history if p.value is not None]
    if values and min(values) > 0 and max(values) / min(values) > LOG_RATIO:
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 20, 50, 100, 200, ... as plain numbers
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    value = tuned.best.best_value
    best = f"best {value:.2f} (#{tuned.best_number})" if value is not None else "no result"
    ax.set_title(f"{row_label(row)}: {best}\n{tuned.counts}", fontsize=9)
    ax.set_xlabel("trial", fontsize=8)
    ax.set_ylabel(metric, fontsize=8)
    ax.tick_params(labelsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    if not tuned.history:
        ax.text(0.5, 0.5, "no finished trial yet", transform=ax.transAxes, ha="center", va="center", fontsize=9)


def _legend_handles() -> list:
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], color=DONE_COLOR, marker="o", linestyle="", label="completed"),
        Line2D([], [], color=PRUNED_COLOR, marker="x", linestyle="", label="pruned (value when stopped)"),
        Line2D([], [], color=BEST_COLOR, linewidth=1.4, label="best so far"),
        Line2D(
            [],
            [],
            color=BEST_COLOR,
            marker="*",
            markersize=11,
            markeredgecolor="black",
            linestyle="",
            label="best (the tuned table's row)",
        ),
    ]


def plot_history(table: AblationTable, path: str | Path) -> Path:
    """Write the optimization history of a search table (one panel per row with a search) to ``path``."""
    fig = history_figure(table)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def history_figure(table: AblationTable) -> Any:
    """The figure of :func:`plot_history` (a matplotlib Figure on the Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    spec = table.search
    if spec is None:
        raise ValueError(f"sweep {table.name}: not a search sweep, it has no optimization history")
    rows = [r for r in table.rows if r.search is not None]
    n_cols = max(1, min(MAX_COLUMNS, len(rows)))
    n_rows = max(1, math.ceil(len(rows) / n_cols))
    fig = Figure(figsize=(4.2 * n_cols, 1.2 + 3.0 * n_rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax, row in zip(axes, rows):
        _panel(ax, row, spec.metric, spec.direction == "minimize")
    for ax in axes[len(rows) :]:
        ax.set_visible(False)
    name = f": {table.name}" if table.name else ""
    about = textwrap.fill(f"each row at its {spec_text(spec)}", int(11 * 4.2 * n_cols))
    fig.suptitle(f"Search history{name}\n{about}", fontsize=10)
    fig.legend(handles=_legend_handles(), loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    return fig
