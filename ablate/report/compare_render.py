"""``ablate compare`` in text / md / csv / json, and its plot (effects in one sweep against another)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ablate.report.compare import Comparison, Effect, all_agreements

VERDICT_MARK = {"better": "+", "worse": "-", "equivalent": "=", "undecided": "?", "n/a": ""}


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:+.1f}%"


def _cell(e: Effect | None) -> str:
    if e is None:
        return "n/a"
    ci = f" [{_pct(e.ppl_low)}, {_pct(e.ppl_high)}]" if e.ppl_low is not None else ""
    return f"{_pct(e.ppl)}{ci} {e.verdict}" + ("" if e.unit != "sentences" else " (1 seed)")


def _records(comp: Comparison) -> list[dict[str, Any]]:
    out = []
    for name in comp.rows:
        rec: dict[str, Any] = {"row": name, "paper_ppl_change": comp.paper[name]}
        for sweep, e in zip(comp.names, comp.effects[name]):
            rec[f"{sweep}:ppl_change"] = e.ppl if e else None
            rec[f"{sweep}:ppl_low"] = e.ppl_low if e else None
            rec[f"{sweep}:ppl_high"] = e.ppl_high if e else None
            rec[f"{sweep}:bleu_change"] = e.bleu if e else None
            rec[f"{sweep}:verdict"] = e.verdict if e else None
            rec[f"{sweep}:unit"] = e.unit if e else None
        rec["narang_bleu_change"] = comp.published.get(name)  # last: the columns before keep their place
        out.append(rec)
    return out


def agreement_lines(comp: Comparison) -> list[str]:
    lines = []
    for a in all_agreements(comp):
        if "spearman_ppl" not in a:  # against another study's BLEU changes: directions only
            lines.append(
                f"{a['sweep']} vs {a['against']}: same direction {a['sign_agree']}/{a['sign_n']} "
                "(our dev PPL falls where their BLEU rose, or the reverse)"
            )
            continue
        rho = "n/a" if a["spearman_ppl"] is None else f"{a['spearman_ppl']:+.2f}"
        text = f"{a['sweep']} vs {a['against']}: PPL Spearman {rho} (n={a['n']}), "
        text += f"same sign {a['sign_agree']}/{a['sign_n']}"
        if a["against"] != "paper":
            text += f"; verdicts disagree: {', '.join(a['verdicts_disagree']) or 'none'}"
        lines.append(text)
    for sweep, rows in comp.unmatched.items():
        lines.append(f"only in {sweep}: {', '.join(rows)}")
    return lines


def render_compare(comp: Comparison, fmt: str) -> str:
    """The side-by-side table in ``fmt`` (text | md | csv | json)."""
    if fmt == "json":
        data = {"sweeps": comp.names, "rows": _records(comp), "agreement": all_agreements(comp)}
        return json.dumps({**data, "unmatched": comp.unmatched}, indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        recs = _records(comp)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(recs[0]) if recs else ["row"], lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in recs)
        return buf.getvalue()
    heads = ["row", *(f"{n}: ΔPPL [95% CI] verdict" for n in comp.names)]
    body = [[name, *(_cell(e) for e in comp.effects[name])] for name in comp.rows]
    if comp.has_paper:
        heads.append("paper ΔPPL")
        for cells, name in zip(body, comp.rows):
            cells.append(_pct(comp.paper[name]))
    if comp.has_published:
        heads.append("Narang ΔBLEU")
        for cells, name in zip(body, comp.rows):
            value = comp.published.get(name)
            cells.append("" if value is None else f"{value:+.2f}")
    notes = [
        "ΔPPL = the row's dev PPL against its own sweep's base; interval over seeds (else over dev sentences, "
        "'1 seed'); verdicts as `ablate table` decides them."
    ]
    notes += agreement_lines(comp)
    if fmt == "md":
        lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return (
            "\n".join(["## Does it transfer? " + " vs ".join(comp.names), "", *lines, "", *(f"- {n}" for n in notes)])
            + "\n"
        )
    widths = [max(len(str(c)) for c in col) for col in zip(heads, *body)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [heads, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return (
        "\n".join([f"Does it transfer? {' vs '.join(comp.names)}", "", *lines, "", *(f"- {n}" for n in notes)]) + "\n"
    )


def plot_compare(comp: Comparison, path: str | Path) -> Path:
    """Effects (% PPL change) in the first sweep against the second, one point per row with its intervals,
    the diagonal drawn: points on it transfer with the same size, points in the off quadrants flip sign."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 6.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    span = 1.0
    for name in comp.rows:
        a, b = comp.effects[name][0], comp.effects[name][1]
        if a is None or b is None:
            continue
        x, y = 100 * a.ppl, 100 * b.ppl
        xerr = [[x - 100 * a.ppl_low], [100 * a.ppl_high - x]] if a.ppl_low is not None else None
        yerr = [[y - 100 * b.ppl_low], [100 * b.ppl_high - y]] if b.ppl_low is not None else None
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="o", ms=4, capsize=2, color="#1f77b4", elinewidth=0.8)
        ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        span = max(span, abs(x), abs(y))
    lim = 1.1 * span
    ax.plot([-lim, lim], [-lim, lim], color="#999999", linewidth=0.8, linestyle="--")
    ax.axhline(0, color="#cccccc", linewidth=0.6)
    ax.axvline(0, color="#cccccc", linewidth=0.6)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_xlabel(f"{comp.names[0]}: dev PPL change vs its base (%)")
    ax.set_ylabel(f"{comp.names[1]}: dev PPL change vs its base (%)")
    ax.set_title("Does it transfer? (95% intervals; dashed: same effect in both)", fontsize=10)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out
