"""`ablate table` and the end-of-sweep summary: sweep -> the store's trial states -> Table 3 (+ PNG, + W&B).

The table carries how sure each row is (:mod:`ablate.report.evidence`: the unigram floor, paired
bootstraps against base from the trials' saved dev outputs, cached beside the runs). In a terminal it
prints the narrow layout (:mod:`ablate.report.terminal`); the paper's wide layout is ``--format md``,
and the end-of-sweep summary also writes it (and the JSON) to ``<runs>/<sweep>/table3.{md,json}``.

The report reads the store through :meth:`ablate.sweep.store.SweepStore.trial_states` (the one
trial-state view); the sweep part never imports this package (the CLI composes the two).
Kept light: this imports neither Lightning nor matplotlib (the plot module loads it only for
``--plot``), so `ablate table` answers in about the time it takes to parse the sweep file.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ablate.report.errors import ReportError
from ablate.report.evidence import CACHE_NAME, attach_evidence
from ablate.report.render import FORMATS, render
from ablate.report.table import DEFAULT_ALPHA, Table3, build_table
from ablate.sweep.loader import open_sweep
from ablate.sweep.spec import Sweep
from ablate.sweep.store import SweepStore

PLOT_NAME = "table3.png"  # the end-of-sweep summary writes its plot here, under <runs>/<sweep name>/
MD_NAME = "table3.md"  # ... the paper's wide layout here
JSON_NAME = "table3.json"  # ... and the numbers here


def load_table(sweep: Sweep, alpha: float = DEFAULT_ALPHA) -> Table3:
    """The Table 3 of a sweep (with the overrides it ran with) from its store, with its statistics.

    Creates nothing but the bootstrap cache (``<runs>/<sweep>/report-cache.json``, once trials are done).
    """
    results = SweepStore.for_sweep(sweep).trial_states(sweep)
    # Rows listed in the file but not yet in the store still show (as waiting), in the file's order.
    row_info = {t.row: {"group": t.group, "paper": t.paper} for t in sweep.trials}
    report = build_table(results, row_order=sweep.rows, name=sweep.name, row_info=row_info)
    report.alpha = alpha
    cache = Path(sweep.runs_root) / sweep.name / CACHE_NAME
    return attach_evidence(report, results, cache_file=cache if cache.parent.is_dir() else None)


def _check_alpha(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ReportError(f"--alpha {alpha}: the significance level must lie strictly between 0 and 1 (e.g. 0.05)")
    return alpha


def table(
    sweep_path: str | Path, fmt: str | None = None, plot: str | Path | None = None, alpha: float = DEFAULT_ALPHA
) -> int:
    """Print the sweep's Table 3 in ``fmt`` (default: the terminal layout); with ``plot``, also write the PNG
    there. ``alpha``: significance level of the marks. Returns the exit code."""
    fmt = fmt or "text"
    if fmt not in FORMATS:
        raise ReportError(f"unknown table format {fmt!r} (valid: {', '.join(FORMATS)})")
    _check_alpha(alpha)
    if plot is not None and Path(plot).suffix.lower() != ".png":
        raise ReportError(f"--plot {plot}: the plot is written as PNG; give a file name ending in .png")
    opened = open_sweep(sweep_path)  # with the command-line overrides recorded with the sweep
    for note in opened.notes:
        print(f"note: {note}", file=sys.stderr)  # stderr: stdout may be CSV or JSON
    report = load_table(opened.sweep, alpha)
    sys.stdout.write(render(report, fmt))
    if plot is not None:
        from ablate.report.plot import plot_table

        out = plot_table(report, plot)
        # stderr, so `ablate table --format csv --plot t.png > t.csv` keeps the CSV clean
        print(f"plot written to {out}", file=sys.stderr)
    return 0


def _write_files(report: Table3, folder: Path) -> None:
    """The wide markdown and the JSON beside the plot (the terminal got the narrow layout)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, fmt in ((MD_NAME, "md"), (JSON_NAME, "json")):
            (folder / name).write_text(render(report, fmt), encoding="utf-8")
        print(f"table written to {folder / MD_NAME} (paper layout) and {folder / JSON_NAME}")
    except OSError as exc:
        print(f"warning: could not write the table files under {folder}: {exc}", file=sys.stderr)


def print_summary(sweep: Sweep, log_wandb: bool = True) -> Table3:
    """End of a sweep: print the table (terminal layout) and fidelity, write the md/JSON/plot, log to W&B.

    ``sweep`` is the Sweep the controller ran (with its command-line overrides).

    The files go to ``<runs>/<sweep name>/table3.{md,json,png}``; the W&B summary run joins the sweep's
    group (offline unless an API key is set or the sweep says otherwise; skipped when W&B is disabled).
    A failure to plot or to log is reported on stderr and does not hide the table.
    """
    report = load_table(sweep)
    sys.stdout.write(render(report, "text"))
    _write_files(report, Path(sweep.runs_root) / sweep.name)
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
