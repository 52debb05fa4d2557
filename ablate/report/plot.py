"""A PNG of the Table 3 reproduction that a person reads at a glance (``ablate table --plot FILE.png``).

Two panels, dev PPL and dev BLEU (a language model: dev PPL at L and at its longest evaluation length,
the panel an extra column's provider draws in BLEU's place, with Press et al.'s change hatched;
ablate/report/extras.py). Each row of the sweep (except base) is one
pair of horizontal bars:
its change against base, ours (solid: the estimate of the row's test with its 95% interval as an
error bar, over seeds where there are >= 2 else the paired bootstrap's over sentences, and the
table's mark, ``*``, ``°`` or ``≈``; dotted and labelled when the row learned nothing) and the paper's (hatched),
in the colour of its group (A-E, big). The BLEU panel says why when the table withholds BLEU.
The change is relative, in percent of the base value, so a CPU-scale sweep whose base PPL is
30 and the paper's base of 4.92 share one honest axis: what a reader checks is whether the bars
point the same way and whether the big effects are big in both. Rows without results say why
("waiting", "running", "failed"). The absolute base values are in the panel titles.

matplotlib is imported here only (and with the Agg canvas, no GUI backend), so `ablate table`
without ``--plot`` stays fast.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from ablate.report import extras
from ablate.report.cells import mark, row_label, units
from ablate.report.paper import GROUP_TITLES, PAPER
from ablate.report.rows import AblationTable, ReportRow, Stat
from ablate.report.search_view import title

# Fixed colours per group (matplotlib's tab10), so the same group looks the same in every plot.
GROUP_COLORS = {
    "A": "#1f77b4",
    "B": "#ff7f0e",
    "C": "#2ca02c",
    "D": "#d62728",
    "E": "#9467bd",
    "big": "#8c564b",
}
OTHER_COLOR = "#7f7f7f"
# A sweep's own groups ("residual", "ffn", ...) take the rest of tab10 and tab10's light shades, in order.
SPARE_COLORS = ("#e377c2", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94")


def group_colors(rows: list[ReportRow]) -> dict[str, str]:
    """Each group's colour: the paper's groups keep theirs; other groups get a spare one each (grey when
    there are more groups than colours)."""
    own = [g for g in dict.fromkeys(r.group for r in rows) if g not in GROUP_COLORS]
    spare = {g: SPARE_COLORS[i] if i < len(SPARE_COLORS) else OTHER_COLOR for i, g in enumerate(own)}
    return {**GROUP_COLORS, **spare}


CLIP_PCT = 100.0  # axis limit in % change; larger changes are clipped and labelled


def _relative(value: Stat | None, base: Stat | None) -> float | None:
    if value is None or base is None or base.mean == 0:
        return None
    return 100.0 * (value.mean - base.mean) / base.mean


def _paper_relative(row: ReportRow, metric: str) -> float | None:
    delta = row.paper_delta
    if delta is None or row.paper is None:
        return None
    base_value = row.paper.ppl - delta[0] if metric == "ppl" else row.paper.bleu - delta[1]
    return 100.0 * (delta[0] if metric == "ppl" else delta[1]) / base_value


def _estimate_pct(row: ReportRow, metric: str, base: Stat | None) -> tuple[float, float, float] | None:
    """(delta, low, high) in % of our base value, from one test so the bar never leaves its interval:
    the seed-level test where there is one, else the bootstrap's over sentences, relative to the base
    value it resampled (None: neither)."""
    ev = getattr(row, f"{metric}_ev")
    if ev.seeds is not None and base is not None and base.mean != 0:
        scale = 100.0 if metric == "ppl" else 100.0 / base.mean  # PPL's seed estimate is already relative
        return scale * ev.seeds.delta, scale * ev.seeds.low, scale * ev.seeds.high
    boot = ev.boot
    if boot is None or not boot.base:
        return None
    return 100.0 * boot.delta / boot.base, 100.0 * boot.low / boot.base, 100.0 * boot.high / boot.base


def _bars(table: AblationTable, rows: list[ReportRow], metric: str, ax, bar: float) -> list[tuple]:
    """(y, value %, color, style, interval %, label) of each bar; rows without one get a note."""
    ours_base = getattr(table.base, metric) if table.base else None
    colors = group_colors(rows)
    out: list[tuple] = []
    for y, row in enumerate(rows):
        color = colors.get(row.group, OTHER_COLOR)
        ours = _relative(getattr(row, metric), ours_base)
        estimate = _estimate_pct(row, metric, ours_base) if ours is not None else None
        paper = _paper_relative(row, metric)
        if paper is None and metric == "ppl" and table.block_size:  # a language model's: Press et al.'s at L
            paper = extras.change(table, row, table.block_size)
        if ours is not None:
            label = mark(table, row, metric) + (" not learned" if row.learned is False else "")
            style = {"alpha": 0.5, "hatch": ".."} if row.learned is False else {}
            value, interval = (estimate[0], estimate[1:]) if estimate else (ours, None)
            out.append((y - bar / 2, value, color, style, interval, label))
        else:
            why = row.pending or "n/a"  # spelled out: the table's "…" is too small to see on a bar chart
            ax.text(0, y - bar / 2, f" {why}", va="center", ha="left", fontsize=8, color="#555555")
        if paper is not None:
            out.append((y + bar / 2, paper, color, {"alpha": 0.35, "hatch": "///"}, None, ""))
    return out


def _length_bars(table: AblationTable, rows: list[ReportRow], n: int, ax, bar: float) -> list[tuple]:
    """A language model's panel at length ``n``: ours (the mean's change, the length's mark; out of reach
    said on the bar's place) and Press et al.'s change against sinusoidal there (hatched), where they have one."""
    base = table.base.lengths.get(n) if table.base else None
    colors = group_colors(rows)
    out: list[tuple] = []
    for y, row in enumerate(rows):
        color = colors.get(row.group, OTHER_COLOR)
        stat = row.lengths.get(n)
        ours = _relative(stat, base) if isinstance(stat, Stat) and isinstance(base, Stat) else None
        if ours is not None:
            out.append((y - bar / 2, ours, color, {}, None, row.length_marks.get(n, "")))
        else:
            why = "out of reach" if isinstance(stat, str) else row.pending or "n/a"
            ax.text(0, y - bar / 2, f" {why}", va="center", ha="left", fontsize=8, color="#555555")
        if (theirs := extras.change(table, row, n)) is not None:
            out.append((y + bar / 2, theirs, color, {"alpha": 0.35, "hatch": "///"}, None, ""))
    return out


def _plot_metric(ax, table: AblationTable, rows: list[ReportRow], metric: str, better: str) -> None:
    """One panel: each row's % change of ``metric`` against base, ours solid (the test's estimate and
    its 95% interval as an error bar, the table's mark), the paper's hatched. ``ppl@N``: a language
    model's perplexity at length N, Press et al.'s change hatched."""
    bar = 0.38
    at = int(metric.split("@")[1]) if "@" in metric else None
    name = metric.upper() if at is None else f"PPL@{at}"
    ours_base = (getattr(table.base, metric) if at is None else table.base.lengths.get(at)) if table.base else None
    paper_base = PAPER["base"].ppl if metric == "ppl" else PAPER["base"].bleu
    if metric == "bleu" and table.bleu_withheld:
        ax.text(
            0.5,
            0.5,
            f"BLEU withheld:\n{table.bleu_withheld}",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=9,
            wrap=True,
            color="#555555",
        )
        ax.set_title(f"dev {name}: withheld", fontsize=10)
        ax.set_xticks([])
        return
    bars = _bars(table, rows, metric, ax, bar) if at is None else _length_bars(table, rows, at, ax, bar)
    # One diverged row (+900%) would flatten every other bar: clip the axis at CLIP_PCT and print the
    # true value of a clipped bar at its end.
    span = min(max((abs(v) for _, v, *_ in bars), default=1.0), CLIP_PCT) * 1.15 or 1.0
    limit = span / 1.15
    for y, value, color, style, interval, label in bars:
        shown = max(-limit, min(limit, value))
        ax.barh(y, shown, height=bar, color=color, edgecolor=color, **style)
        if interval is not None:
            lo, hi = (max(-limit, min(limit, v)) for v in interval)
            ax.errorbar((lo + hi) / 2, y, xerr=(hi - lo) / 2, fmt="none", ecolor="black", elinewidth=0.9, capsize=2)
        if shown != value or label:
            text = (f" {value:+.0f}% " if shown != value else " ") + label
            ax.text(shown, y, text, va="center", ha="left" if value >= 0 else "right", fontsize=7, fontweight="bold")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlim(-span, span)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ours_text = f"{ours_base.mean:.2f}" if isinstance(ours_base, Stat) else "n/a"
    floor = f", unigram floor {table.floor:.2f}" if metric == "ppl" and table.floor is not None else ""
    paper_text = f", paper {paper_base:g}" if table.has_paper else f", {extras.hatched()} hatched" if at else ""
    ax.set_title(f"dev {name}: change vs base ({better})\nbase: ours {ours_text}{paper_text}{floor}", fontsize=10)
    ax.set_xlabel(
        f"{name} change vs base row (%); bars: 95% CI over seeds (else bootstrap over {units(table)})\n"
        f"* differs over seeds, ° over {units(table)} only, ≈ equivalent (α {table.alpha:g}, {table.correction})"
    )


def _legend(fig, rows: list[ReportRow], paper: str | None) -> None:
    from matplotlib.patches import Patch

    groups = list(dict.fromkeys(r.group for r in rows))
    handles = [
        Patch(
            facecolor=group_colors(rows).get(g, OTHER_COLOR),
            label=f"{g}: {GROUP_TITLES[g]}" if g in GROUP_TITLES else g,
        )
        for g in groups
    ]
    handles.append(Patch(facecolor="#666666", label="ours (solid)"))
    if paper:
        paper_patch = Patch(
            facecolor="#666666", alpha=0.35, hatch="///", edgecolor="#666666", label=f"{paper} (hatched)"
        )
        handles.append(paper_patch)
    fig.legend(handles=handles, loc="outside lower center", ncol=min(4, len(handles)), fontsize=9, frameon=False)


def plot_table(table: AblationTable, path: str | Path) -> Path:
    """Write the figure to ``path`` (PNG) and return the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = [r for r in table.rows if not r.is_base]
    warning = table.not_translating or table.undertrained
    fig = Figure(figsize=(13, 1.6 + 0.36 * max(len(rows), 1) + (1.2 if warning else 0)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    second = extras.panel(table) or "bleu"  # a language model's: its longest length beside L, in BLEU's place
    for ax, metric in zip(axes, ("ppl", second)):
        _plot_metric(ax, table, rows, metric, "higher is better" if metric == "bleu" else "lower is better")
    axes[0].set_yticks(list(range(len(rows))), [row_label(r) for r in rows], fontsize=9)
    axes[0].invert_yaxis()  # first row of the sweep at the top, as in the table
    # Thin lines between groups, as the paper's table separates them.
    for ax in axes:
        for y in range(1, len(rows)):
            if rows[y].group != rows[y - 1].group:
                ax.axhline(y - 0.5, color="#999999", linewidth=0.6, linestyle=":")
    head = title(table) + ("  (ours vs Vaswani et al. 2017)" if table.has_paper else "")
    if warning:  # the figure travels alone (W&B, slides): it says what the table's legend says
        label = "DOES NOT TRANSLATE YET" if table.not_translating else "UNDERTRAINED"
        head += "\n" + textwrap.fill(f"{label}: {warning}", 150)
    fig.suptitle(head, fontsize=12 if not warning else 10)
    hatched = extras.hatched() if second != "bleu" and table.family.per_length else None
    _legend(fig, rows, "paper" if table.has_paper else hatched or None)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out
