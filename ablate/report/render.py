"""Render a :class:`~ablate.report.table.Table3` as markdown, CSV, LaTeX or JSON.

Markdown and LaTeX follow the paper's layout: a group label on the first row of each group, the base
row with all its settings, the other rows with only the cells they change (blank = as base), and
each result as "ours (delta vs our base)" beside "paper (delta vs the paper's base)". CSV and JSON
carry the same content as plain numbers for scripts. A row none of whose trials has finished shows
what it is waiting for: "…" (waiting), "running" or "failed".
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

from ablate.report.errors import ReportError
from ablate.report.fidelity import Fidelity, fidelity
from ablate.report.paper import CITATION, COLUMN_KEYS, COLUMNS
from ablate.report.table import ReportRow, Stat, Table3

FORMATS = ("md", "csv", "latex", "json")
MARKERS = {"waiting": "…", "running": "running", "failed": "failed"}


# ----------------------------------------------------------------------------------------------
# Cell formatting (the paper prints PPL with 2 decimals, BLEU with 1, params in millions)
# ----------------------------------------------------------------------------------------------


def fmt_setting(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key == "train_steps" and isinstance(value, int) and value >= 1000 and value % 1000 == 0:
        return f"{value // 1000}K"
    return str(value)


def _signed(x: float, digits: int) -> str:
    text = f"{x:+.{digits}f}"
    return text.replace("-", "+", 1) if float(text) == 0 else text  # no "-0.00"


def fmt_stat(stat: Stat | None, digits: int) -> str:
    if stat is None:
        return ""
    if stat.std is None:
        return f"{stat.mean:.{digits}f}"
    return f"{stat.mean:.{digits}f} ± {stat.std:.{digits}f}"


def fmt_params(params: float | None) -> str:
    """Millions with 3-4 significant digits (mini models have well under a million parameters)."""
    if params is None:
        return ""
    m = params / 1e6
    digits = 0 if m >= 100 else 1 if m >= 10 else 2 if m >= 1 else 3
    return f"{m:.{digits}f}"


def _result_cell(row: ReportRow, stat: Stat | None, delta: float | None, digits: int) -> str:
    if row.pending:
        return MARKERS[row.pending]
    if stat is None:
        return "n/a"  # finished, but this metric was not recorded (e.g. BLEU switched off)
    text = fmt_stat(stat, digits)
    return f"{text} ({_signed(delta, digits)})" if delta is not None else text


def _paper_cell(value: float | None, delta: float | None, digits: int) -> str:
    if value is None:
        return ""
    text = f"{value:.{digits}f}"
    return f"{text} ({_signed(delta, digits)})" if delta is not None else text


def row_label(row: ReportRow) -> str:
    """The row's name, with the paper's row id when the name does not say it (``h=1 [A1]``)."""
    return f"{row.name} [{row.paper.id}]" if row.paper and row.paper.id != row.name else row.name


def _group_label(group: str) -> str:
    return group if group in ("base", "big", "") else f"({group})"


def _cells(table: Table3) -> list[list[str]]:
    """The md / LaTeX body: one list of display strings per row."""
    out = []
    previous_group = None
    for row in table.rows:
        shown = row.settings if row.is_base and row.settings else row.changed
        paper = row.paper
        pd = row.paper_delta
        out.append(
            [
                _group_label(row.group) if row.group != previous_group else "",
                row_label(row),
                *(fmt_setting(key, shown.get(key)) if key in shown else "" for key in COLUMN_KEYS),
                _result_cell(row, row.ppl, row.ppl_delta, 2),
                _paper_cell(paper.ppl if paper else None, pd[0] if pd else None, 2),
                _result_cell(row, row.bleu, row.bleu_delta, 1),
                _paper_cell(paper.bleu if paper else None, pd[1] if pd else None, 1),
                fmt_params(row.params),
                f"{paper.params_m:g}" if paper and paper.params_m else "",  # printed as in the paper
                row.runs,
            ]
        )
        previous_group = row.group
    return out


HEADERS = [
    "",
    "row",
    *(header for _, header in COLUMNS),
    "PPL (Δ)",
    "paper PPL (Δ)",
    "BLEU (Δ)",
    "paper BLEU (Δ)",
    "params M",
    "paper M",
    "runs",
]


def _notes(table: Table3, fid: Fidelity) -> list[str]:
    base = table.base
    lines = [
        f"Ours: dev PPL / BLEU, mean ± std over seeds; Δ = against our base row ({base.name if base else '?'}). "
        f"Paper: {CITATION}; Δ against its base. Blank settings = as base. … = waiting.",
        *fid.lines(),
    ]
    for row in table.rows:
        lines += [f"failed: {row.name} {failure}" for failure in row.failures]
    return lines


# ----------------------------------------------------------------------------------------------
# Formats
# ----------------------------------------------------------------------------------------------


def render_md(table: Table3) -> str:
    body = _cells(table)
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(HEADERS)]
    numeric = set(range(2, len(HEADERS)))  # right-align numbers, as a reader scans them by column

    def line(cells: list[str]) -> str:
        padded = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in numeric else "-" * (w + 2) for i, w in enumerate(widths)) + "|"
    title = f"Table 3 reproduction: {table.name}" if table.name else "Table 3 reproduction"
    lines = [f"## {title}", "", line(HEADERS), rule, *(line(r) for r in body), ""]
    lines += [f"- {note}" for note in _notes(table, fidelity(table))]
    return "\n".join(lines) + "\n"


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def row_record(row: ReportRow) -> dict[str, Any]:
    """One row as plain JSON-able values (CSV flattens it)."""
    pd = row.paper_delta
    return {
        "group": row.group,
        "row": row.name,
        "paper": row.paper.id if row.paper else None,
        "is_base": row.is_base,
        "settings": row.settings,
        "changed": row.changed,
        "ppl": _r(row.ppl.mean) if row.ppl else None,
        "ppl_std": _r(row.ppl.std) if row.ppl else None,
        "ppl_delta": _r(row.ppl_delta),
        "paper_ppl": row.paper.ppl if row.paper else None,
        "paper_ppl_delta": pd[0] if pd else None,
        "bleu": _r(row.bleu.mean) if row.bleu else None,
        "bleu_std": _r(row.bleu.std) if row.bleu else None,
        "bleu_delta": _r(row.bleu_delta),
        "paper_bleu": row.paper.bleu if row.paper else None,
        "paper_bleu_delta": pd[1] if pd else None,
        "params": row.params,
        "paper_params_m": row.paper.params_m if row.paper else None,
        "n_done": row.n_done,
        "n_trials": row.n_trials,
        "status": row.pending or ("done" if row.n_done == row.n_trials else "partial"),
        "failures": row.failures,
    }


def render_json(table: Table3) -> str:
    data = {
        "sweep": table.name,
        "paper": CITATION,
        "base_row": table.base.name if table.base else None,
        "rows": [row_record(r) for r in table.rows],
        "fidelity": {k: _r(v) if isinstance(v, float) else v for k, v in fidelity(table).as_dict().items()},
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


CSV_FIELDS = [
    "group",
    "row",
    "paper",
    *COLUMN_KEYS,
    "ppl",
    "ppl_std",
    "ppl_delta",
    "paper_ppl",
    "paper_ppl_delta",
    "bleu",
    "bleu_std",
    "bleu_delta",
    "paper_bleu",
    "paper_bleu_delta",
    "params",
    "paper_params_m",
    "n_done",
    "n_trials",
    "status",
]


def render_csv(table: Table3) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in table.rows:
        rec = row_record(row)
        shown = row.settings if row.is_base and row.settings else row.changed
        rec.update({key: shown.get(key, "") for key in COLUMN_KEYS})
        writer.writerow({k: "" if v is None else v for k, v in rec.items()})
    return buf.getvalue()


_LATEX_HEADERS = [
    "",
    "",
    "$N$",
    "$d_{\\text{model}}$",
    "$d_{\\text{ff}}$",
    "$h$",
    "$d_k$",
    "$d_v$",
    "$P_{drop}$",
    "$\\epsilon_{ls}$",
    "steps",
    "pos.",
    "PPL",
    "PPL$_{paper}$",
    "BLEU",
    "BLEU$_{paper}$",
    "params",
    "params$_{paper}$",
    "runs",
]


# One pass over the characters, so an escape's own backslash and braces are not escaped again.
_TEX = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\^{}",
    "±": "$\\pm$",
    "…": "\\dots{}",
}


def _tex(text: str) -> str:
    return "".join(_TEX.get(c, c) for c in text)


def render_latex(table: Table3) -> str:
    body = _cells(table)
    lines = [
        "% " + (f"Table 3 reproduction: {table.name}" if table.name else "Table 3 reproduction"),
        "% needs \\usepackage{booktabs} and \\usepackage{amsmath}",
        "\\begin{tabular}{ll" + "c" * len(COLUMNS) + "r" * 7 + "}",
        "\\toprule",
        " & ".join(_LATEX_HEADERS) + " \\\\",
        "\\midrule",
    ]
    for i, cells in enumerate(body):
        if i and cells[0]:  # a new group starts: rule between groups, as in the paper
            lines.append("\\midrule")
        lines.append(" & ".join(_tex(c) for c in cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    lines += [f"% {note}" for note in _notes(table, fidelity(table))]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[Table3], str]] = {
    "md": render_md,
    "csv": render_csv,
    "latex": render_latex,
    "json": render_json,
}


def render(table: Table3, fmt: str = "md") -> str:
    """The table in ``fmt`` (md, csv, latex or json)."""
    try:
        return RENDERERS[fmt](table)
    except KeyError:
        raise ReportError(f"unknown table format {fmt!r} (valid: {', '.join(FORMATS)})") from None
