"""The LaTeX layout of the table (``ablate table --format latex``): booktabs, the paper's notation in the
headers, a rule between groups, what the marks mean printed under the table and the rest of the legend
as comments."""

from __future__ import annotations

from ablate.report import extras
from ablate.report.cells import drop_paper_columns, notes, table_cells, verdict_legend
from ablate.report.fidelity import fidelity
from ablate.report.paper import COLUMN_KEYS, COLUMNS
from ablate.report.rows import AblationTable
from ablate.report.search_view import legend_lines, spec_text, title

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
    "$\\Delta$ 95\\% CI",
    "$p$",
    "PPL$_{paper}$",
    "BLEU",
    "$\\Delta$ 95\\% CI",
    "$p$",
    "BLEU$_{paper}$",
    "params",
    "params$_{paper}$",
    "runs",
]
_LATEX_BLEU = ("BLEU", "$\\Delta$ 95\\% CI", "$p$", "BLEU$_{paper}$")  # a language model has none


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
    "†": "\\dag{}",
    "–": "--",
    "≥": "$\\geq$",
    "×": "$\\times$",
    "α": "$\\alpha$",
    "≈": "$\\approx$",
    "°": "$^\\circ$",
    "≤": "$\\leq$",
    "Δ": "$\\Delta$",
}


def _tex(text: str) -> str:
    return "".join(_TEX.get(c, c) for c in text)


def _latex_headers(table: AblationTable) -> list[str]:
    """The paper's ten setting headers in its notation, the table's extra columns as text, then the results."""
    n = 2 + len(COLUMNS)
    extra = [_tex(header) for key, header in table.columns if key not in COLUMN_KEYS]
    return [*_LATEX_HEADERS[:n], *extra, *_LATEX_HEADERS[n:]]


def render_latex(table: AblationTable) -> str:
    heads, body = drop_paper_columns(table, _latex_headers(table), table_cells(table))
    heads, body = extras.with_columns(table, heads, body, "latex", _LATEX_BLEU, _tex)
    lines = [
        "% " + title(table),
        *([f"% each row at its {spec_text(table.search)}"] if table.search is not None else []),
        *(f"% tuned {r.name}: {r.search.params_text} ({r.search.counts})" for r in table.rows if r.search),
        "% needs \\usepackage{booktabs}, \\usepackage{amsmath} and \\usepackage{graphicx}",
        # 24 columns are wider than a landscape page even at \\tiny: scaled to the text width
        "\\resizebox{\\linewidth}{!}{%",
        "\\begin{tabular}{ll" + "c" * len(table.columns) + "r" * (len(heads) - 2 - len(table.columns)) + "}",
        "\\toprule",
        " & ".join(heads) + " \\\\",
        "\\midrule",
    ]
    for i, cells in enumerate(body):
        if i and cells[0]:  # a new group starts: rule between groups, as in the paper
            lines.append("\\midrule")
        lines.append(" & ".join(_tex(c) for c in cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}}"]
    # what the marks mean (level, correction, unit) printed under the table, not only in comments
    lines += ["", "\\par\\smallskip{\\footnotesize " + _tex(verdict_legend(table)) + "}"]
    lines += [f"% {note}" for note in (*notes(table, fidelity(table)), *legend_lines(table), *extras.notes(table))]
    return "\n".join(lines) + "\n"
