"""`ablate table` and the end-of-sweep summary: sweep -> the store's trial states -> Table 3 (+ PNG, + W&B).

The report reads the store through :meth:`ablate.sweep.store.SweepStore.trial_states` (the one
trial-state view); the sweep part never imports this package (the CLI composes the two).
Kept light: this imports neither Lightning nor matplotlib (the plot module loads it only for
``--plot``), so `ablate table` answers in about the time it takes to parse the sweep file.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ablate.report.errors import ReportError
from ablate.report.render import FORMATS, render
from ablate.report.table import Table3, build_table
from ablate.sweep.loader import open_sweep
from ablate.sweep.spec import Sweep
from ablate.sweep.store import SweepStore

PLOT_NAME = "table3.png"  # the end-of-sweep summary writes its plot here, under <runs>/<sweep name>/


def load_table(sweep: Sweep) -> Table3:
    """The Table 3 of a sweep (with the overrides it ran with) from its store; creates nothing."""
    results = SweepStore.for_sweep(sweep).trial_states(sweep)
    # Rows listed in the file but not yet in the store still show (as waiting), in the file's order.
    row_info = {t.row: {"group": t.group, "paper": t.paper} for t in sweep.trials}
    return build_table(results, row_order=sweep.rows, name=sweep.name, row_info=row_info)


def table(sweep_path: str | Path, fmt: str = "md", plot: str | Path | None = None) -> int:
    """Print the sweep's Table 3 in ``fmt``; with ``plot``, also write the PNG there. Returns the exit code."""
    if fmt not in FORMATS:
        raise ReportError(f"unknown table format {fmt!r} (valid: {', '.join(FORMATS)})")
    if plot is not None and Path(plot).suffix.lower() != ".png":
        raise ReportError(f"--plot {plot}: the plot is written as PNG; give a file name ending in .png")
    opened = open_sweep(sweep_path)  # with the command-line overrides recorded with the sweep
    for note in opened.notes:
        print(f"note: {note}", file=sys.stderr)  # stderr: stdout may be CSV or JSON
    report = load_table(opened.sweep)
    sys.stdout.write(render(report, fmt))
    if plot is not None:
        from ablate.report.plot import plot_table

        out = plot_table(report, plot)
        # stderr, so `ablate table --format csv --plot t.png > t.csv` keeps the CSV clean
        print(f"plot written to {out}", file=sys.stderr)
    return 0


def print_summary(sweep: Sweep, log_wandb: bool = True) -> Table3:
    """End of a sweep: print the markdown table and fidelity, write the plot, log both to W&B.

    ``sweep`` is the Sweep the controller ran (with its command-line overrides).

    The plot goes to ``<runs>/<sweep name>/table3.png``; the W&B summary run joins the sweep's group
    (offline unless an API key is set or the sweep says otherwise; skipped when W&B is disabled).
    A failure to plot or to log is reported on stderr and does not hide the table.
    """
    report = load_table(sweep)
    sys.stdout.write(render(report, "md"))
    png: Path | None = Path(sweep.runs_root) / sweep.name / PLOT_NAME
    try:
        from ablate.report.plot import plot_table

        plot_table(report, png)
        print(f"plot written to {png}")
    except (OSError, ValueError) as exc:  # a full disk or a bad font must not lose the printed table
        print(f"warning: could not write the plot {png}: {exc}", file=sys.stderr)
        png = None
    if log_wandb:
        from ablate.report.wandb_summary import log_summary

        try:
            where = log_summary(sweep, report, png)
        except Exception as exc:  # noqa: BLE001 - W&B problems are reported, never fatal at the end of a sweep
            print(f"warning: W&B summary run not logged: {type(exc).__name__}: {exc}", file=sys.stderr)
        else:
            if where:
                print(f"W&B summary run: {where}")
    return report
