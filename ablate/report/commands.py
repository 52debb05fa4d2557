"""`ablate table` and the end-of-sweep summary: sweep -> the store's trial states -> Table 3 (+ PNG, + W&B).

The table carries how sure each row is (:mod:`ablate.report.evidence`: the unigram floor, paired
bootstraps against base from the trials' saved dev outputs, cached beside the runs). In a terminal it
prints the narrow layout (:mod:`ablate.report.terminal`); the paper's wide layout is ``--format md``,
and the end-of-sweep summary also writes it (and the JSON) to ``<runs>/<sweep>/table3.{md,json}``.

A search sweep's table is tuned (:mod:`ablate.report.search_view`): each row at its best configuration,
with its search beside it; ``--plot`` and the summary also draw its optimization history.

The report reads the store through :func:`ablate.sweep.plan.trial_states` (the one
trial-state view); the sweep part never imports this package (the CLI composes the two).
Kept light: this imports neither Lightning nor matplotlib (the plot module loads it only for
``--plot``), so `ablate table` answers in about the time it takes to parse the sweep file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ablate.atomic import folder_problem
from ablate.report.errors import ReportError
from ablate.report.evidence import CACHE_NAME, attach_evidence
from ablate.report.render import FORMATS, render
from ablate.report.rows import DEFAULT_ALPHA, AblationTable
from ablate.report.search_view import apply_search, table_views
from ablate.report.table import build_table
from ablate.report.verdicts import decide, report_margins
from ablate.stats.correction import CORRECTIONS, DEFAULT_CORRECTION
from ablate.sweep.file.spec import Sweep
from ablate.sweep.loader import open_sweep
from ablate.sweep.plan import plan_of, trial_states
from ablate.sweep.plan.base import Plan
from ablate.sweep.store.reuse import hint
from ablate.sweep.store.store import SweepStore

PLOT_NAME = "table3.png"  # the end-of-sweep summary writes its plot here, under <runs>/<sweep name>/
MD_NAME = "table3.md"  # ... the paper's wide layout here
JSON_NAME = "table3.json"  # ... and the numbers here
SEARCH_PLOT_NAME = "search.png"  # ... and, for a search sweep, the optimization history per row


def load_table(
    sweep: Sweep,
    alpha: float = DEFAULT_ALPHA,
    store: SweepStore | None = None,
    correction: str = DEFAULT_CORRECTION,
    plan: Plan | None = None,
) -> AblationTable:
    """The Table 3 of a sweep (with the overrides it ran with) from its store, with its statistics.

    ``store``: the sweep's store when the caller has it open already (opening one costs a connection
    and Optuna's schema check); None opens it. ``plan``: the opened sweep's plan (None: built here).
    Creates nothing but the bootstrap cache (``<runs>/<sweep>/report-cache.json``, once trials are done).
    """
    plan = plan or plan_of(sweep)
    views = trial_states(store or SweepStore.for_sweep(sweep), sweep, plan)
    # A search sweep: each row at its best configuration (ablate.report.search_view), not every trial.
    results = views if sweep.search is None else table_views(sweep.search, views)
    # Rows listed in the file but not yet in the store still show (as waiting), in the file's order.
    row_info = {t.row: {"group": t.group, "paper": t.paper} for t in sweep.shapes}
    searched = [p.key for p in sweep.search.params] if sweep.search is not None else []  # shown as "tuned"
    report = build_table(results, row_order=sweep.rows, name=sweep.name, row_info=row_info, ignore=searched)
    report.alpha = alpha
    if sweep.adaptive is not None and sweep.search is None:  # the level the controller decided at (plan.adaptive)
        report.alpha, report.looks = sweep.adaptive.level(alpha), sweep.adaptive.looks
    if sweep.search is not None:
        apply_search(report, sweep, views)
    cache = sweep.runs_dir / CACHE_NAME
    attach_evidence(report, results, cache_file=cache if cache.parent.is_dir() else None)
    decide(report, correction, report_margins(sweep))
    report.plan_notes = plan.table_notes(views)
    return report


def _check_alpha(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ReportError(f"--alpha {alpha}: the significance level must lie strictly between 0 and 1 (e.g. 0.05)")
    return alpha


def check_plot(plot: str | Path | None) -> None:
    """A --plot file ablate can write: a PNG, in a folder that takes files (checked before any table is
    computed; a write that fails later anyway is one line too: :func:`_plots`)."""
    if plot is None:
        return
    if Path(plot).suffix.lower() != ".png":
        raise ReportError(f"--plot {plot}: the plot is written as PNG; give a file name ending in .png")
    folder = Path(plot).expanduser().parent
    if why := folder_problem(folder):
        raise ReportError(f"--plot {plot}: cannot write in {folder} ({why}); give a file in a folder you can write")


def table(
    sweep_path: str | Path,
    fmt: str | None = None,
    plot: str | Path | None = None,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
) -> int:
    """Print the sweep's Table 3 in ``fmt`` (default: the terminal layout); with ``plot``, also write the PNG
    there. ``alpha``: significance level of the marks, with the error over the table's rows controlled by
    ``correction`` (holm | bh | none). Returns the exit code."""
    fmt = fmt or "text"
    if fmt not in FORMATS:
        raise ReportError(f"unknown table format {fmt!r} (valid: {', '.join(FORMATS)})")
    _check_alpha(alpha)
    if correction not in CORRECTIONS:
        raise ReportError(f"--correction {correction}: use one of {', '.join(CORRECTIONS)} (default holm)")
    check_plot(plot)
    opened = open_sweep(sweep_path)  # with the command-line overrides recorded with the sweep
    for note in opened.notes:
        print(f"note: {note}", file=sys.stderr)  # stderr: stdout may be CSV or JSON
    if not opened.store.exists() and (line := hint(opened.sweep, opened.store)) is not None:
        print(f"note: {line}", file=sys.stderr)  # a renamed sweep file: every row waits, as `status` says
    report = load_table(opened.sweep, alpha, opened.store, correction, opened.plan)
    sys.stdout.write(render(report, fmt))
    if plot is not None:
        try:
            _plots(report, Path(plot))
        except OSError as exc:  # the folder changed since the check, or the name is taken by a folder
            raise ReportError(f"--plot {plot}: cannot write {exc.filename or plot} ({exc.strerror or exc})") from None
    return 0


def _plots(report: AblationTable, plot: Path) -> None:
    """The table's plot at ``plot``, its learning curves and a search's history beside it."""
    from ablate.report.curves_plot import plot_curves
    from ablate.report.plot import plot_table

    out = plot_table(report, plot)
    # stderr, so `ablate table --format csv --plot t.png > t.csv` keeps the CSV clean
    print(f"plot written to {out}", file=sys.stderr)
    curves = plot_curves(report, plot.with_name(plot.stem + "-curves.png"))
    if curves is not None:
        print(f"learning curves written to {curves}", file=sys.stderr)
    if report.search is not None:  # a search sweep: its optimization history beside it
        from ablate.report.search_plot import plot_history

        history = plot_history(report, plot.with_name(plot.stem + "-search.png"))
        print(f"search history written to {history}", file=sys.stderr)


def _unchanged(report: AblationTable, folder: Path) -> bool:
    """Whether the files in ``folder`` already show this table (a rerun of a finished sweep): then the
    plots, which take seconds, are not drawn again."""
    pngs = [folder / PLOT_NAME] + ([folder / SEARCH_PLOT_NAME] if report.search is not None else [])
    try:
        return (folder / JSON_NAME).read_text(encoding="utf-8") == render(report, "json") and all(
            p.is_file() for p in pngs
        )
    except OSError:
        return False


def _write_files(report: AblationTable, folder: Path) -> None:
    """The wide markdown and the JSON beside the plot (the terminal got the narrow layout)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, fmt in ((MD_NAME, "md"), (JSON_NAME, "json")):
            (folder / name).write_text(render(report, fmt), encoding="utf-8")
        print(f"table written to {folder / MD_NAME} (paper layout) and {folder / JSON_NAME}")
    except OSError as exc:
        print(f"warning: could not write the table files under {folder}: {exc}", file=sys.stderr)


def _plot(draw: Callable[[AblationTable, Path], Any], report: AblationTable, png: Path, what: str) -> Path | None:
    """Write one PNG of the summary (``draw(report, png)``); a failure warns and gives None."""
    try:
        draw(report, png)
    except (OSError, ValueError) as exc:  # a full disk or a bad font must not lose the printed table
        print(f"warning: could not write the {what} {png}: {exc}", file=sys.stderr)
        return None
    print(f"{what} written to {png}")
    return png


def print_summary(
    sweep: Sweep, log_wandb: bool = True, store: SweepStore | None = None, plan: Plan | None = None
) -> AblationTable:
    """End of a sweep: print the table (terminal layout) and fidelity, write the md/JSON/plot, log to W&B.

    ``sweep`` is the Sweep the controller ran (with its command-line overrides); ``store`` its open store
    (None: opened here); ``plan`` the plan it ran (None: built here).

    The files go to ``<runs>/<sweep name>/table3.{md,json,png}`` (a search sweep's table is tuned, each
    row at its best configuration, and its optimization history goes to ``search.png`` beside them);
    the W&B summary run joins the sweep's
    group (offline unless an API key is set or the sweep says otherwise; skipped when W&B is disabled).
    A failure to plot or to log is reported on stderr and does not hide the table.
    """
    report = load_table(sweep, store=store, plan=plan)
    sys.stdout.write(render(report, "text"))
    folder = sweep.runs_dir
    if _unchanged(report, folder):
        print(f"table and plot unchanged in {folder}")
        png, history = folder / PLOT_NAME, folder / SEARCH_PLOT_NAME if report.search is not None else None
    else:
        png, history = _write_all(report, folder)
    if log_wandb:
        from ablate.report.wandb_summary import log_summary

        try:
            where = log_summary(sweep, report, png, history)
        except Exception as exc:  # noqa: BLE001 - W&B problems are reported, never fatal at the end of a sweep
            print(f"warning: W&B summary run not logged: {type(exc).__name__}: {exc}", file=sys.stderr)
        else:
            if where:
                print(f"W&B summary run: {where}")
    return report


def _write_all(report: AblationTable, folder: Path) -> tuple[Path | None, Path | None]:
    """md, JSON, the plot and a search's history plot into ``folder``: (plot, history) or None where not written."""
    _write_files(report, folder)
    from ablate.report.plot import plot_table  # matplotlib: only now

    png = _plot(plot_table, report, folder / PLOT_NAME, "plot")
    history = None
    if report.search is not None:
        from ablate.report.search_plot import plot_history

        history = _plot(plot_history, report, folder / SEARCH_PLOT_NAME, "search history")
    return png, history


def plan(
    sweep_path: str | Path,
    effect: float = 0.02,
    power: float = 0.8,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
) -> int:
    """``ablate plan``: seeds each row needs to decide a relative PPL change of ``effect`` (ablate.report.plan)."""
    from ablate.report.plan import plan_lines, plan_rows
    from ablate.sweep.plan.cost import estimate

    _check_alpha(alpha)
    if not 0 < effect < 1 or not 0 < power < 1:
        raise ReportError(
            f"--effect {effect} / --power {power}: both must lie strictly between 0 and 1 (e.g. 0.02, 0.8)"
        )
    if correction not in CORRECTIONS:
        raise ReportError(f"--correction {correction}: use one of {', '.join(CORRECTIONS)} (default holm)")
    opened = open_sweep(sweep_path)
    report = load_table(opened.sweep, alpha, opened.store, correction, opened.plan)
    cost: dict[str, float] = {}
    for t in opened.sweep.shapes:
        hours = estimate(opened.sweep, t)["device_hours"]  # None: a budget in epochs, data not prepared yet
        if hours is not None:
            cost.setdefault(t.row, hours)
    # report.alpha: the level the table decides at (alpha / looks for an adaptive sweep)
    rows = plan_rows(report, cost, effect, power, report.alpha, correction)
    print("\n".join(plan_lines(rows, effect, power, report.alpha, correction)))
    return 0


def compare(
    sweep_paths: list[str],
    fmt: str = "text",
    plot: str | Path | None = None,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
) -> int:
    """``ablate compare``: the rows of two or more sweeps side by side (ablate.report.compare)."""
    from ablate.report.compare import compare_tables
    from ablate.report.compare_render import plot_compare, render_compare

    if len(sweep_paths) < 2:
        raise ReportError(
            "ablate compare needs two or more sweep files (e.g. sweeps/table3-mini.yaml sweeps/table3-multi30k.yaml)"
        )
    if fmt not in ("text", "md", "csv", "json"):
        raise ReportError(f"unknown format {fmt!r} (valid: text, md, csv, json)")
    check_plot(plot)
    _check_alpha(alpha)
    tables = []
    for path in sweep_paths:
        opened = open_sweep(path)
        if not opened.store.exists():
            raise ReportError(f"{path}: sweep {opened.sweep.name} has no results yet; run `ablate sweep {path}` first")
        tables.append(load_table(opened.sweep, alpha, opened.store, correction, opened.plan))
    comp = compare_tables(tables)
    if not comp.rows:  # nothing to set side by side: an empty table and exit 0 read as "no effect differs"
        names = " and ".join(repr(t.name) for t in tables)
        raise ReportError(
            f"sweeps {names} share no row (matched by row name, else by paper key); compare sweeps of the "
            "same rows, or give rows the same name: or paper: key"
        )
    sys.stdout.write(render_compare(comp, fmt))
    if plot is not None:
        print(f"plot written to {plot_compare(comp, plot)}", file=sys.stderr)
    return 0
