"""Render a :class:`~ablate.report.rows.AblationTable` as markdown, CSV, LaTeX or JSON.

Markdown and LaTeX follow the paper's layout: a group label on the first row of each group, the base
row with all its settings, the other rows with only the cells they change (blank = as base), and
each result as "ours (delta vs our base)" with its significance mark, the bootstrap's 95% interval of
the delta and the p-values, beside "paper (delta vs the paper's base)". CSV and JSON carry the same
content as plain numbers for scripts. The cells and the legend are in :mod:`ablate.report.cells`;
the narrow layout for a terminal (``text``, the default of `ablate table`) in :mod:`ablate.report.terminal`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

from ablate.family import FAMILIES
from ablate.report import extras
from ablate.report.cells import (
    drop_paper_columns,
    metric_withheld,
    notes,
    shown_settings,
    table_cells,
)
from ablate.report.columns import OTHER_KEY
from ablate.report.errors import ReportError
from ablate.report.fidelity import fidelity
from ablate.report.paper import CITATION, COLUMN_KEYS
from ablate.report.provider import LAST, REFERENCES, SCORES
from ablate.report.rows import AblationTable, Evidence, ReportRow
from ablate.report.search_view import CSV_FIELDS as SEARCH_CSV_FIELDS
from ablate.report.search_view import csv_record, legend_lines, spec_record, spec_text, title
from ablate.report.terminal import render_text
from ablate.report.training_checks import STILL_IMPROVING

FORMATS = ("text", "md", "csv", "latex", "json")


RESULT_HEADERS = [
    "PPL (Δ)",
    "ΔPPL boot [95% CI]",
    "p boot / seeds",
    "paper PPL (Δ)",
    "BLEU (Δ)",
    "ΔBLEU boot [95% CI]",
    "p boot / seeds",
    "paper BLEU (Δ)",
    "params M",
    "paper M",
    "runs",
]
MD_BLEU = ("BLEU (Δ)", "ΔBLEU boot [95% CI]", "p boot / seeds", "paper BLEU (Δ)")  # a language model has none


def headers(table: AblationTable) -> list[str]:
    """The md / LaTeX header: group, row, the settings columns the table has, then the results."""
    return ["", "row", *(header for _, header in table.columns), *RESULT_HEADERS]


# ----------------------------------------------------------------------------------------------
# Formats
# ----------------------------------------------------------------------------------------------


def _search_cells(table: AblationTable, body: list[list[str]]) -> list[str]:
    """A search table's extra md columns (the best params, the search's counts) added to the headers."""
    if table.search is None:
        return headers(table)
    for cells, row in zip(body, table.rows):
        s = row.search
        best = f"best #{s.best_number} of " if s is not None and s.best_number is not None else ""
        cells += [s.params_text, best + s.counts] if s is not None else ["", ""]
    return [*headers(table), "tuned (best params)", "search"]


def render_md(table: AblationTable) -> str:
    body = table_cells(table)
    heads, body = drop_paper_columns(table, _search_cells(table, body), body)
    heads, body = extras.with_columns(table, heads, body, "md", MD_BLEU)
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(heads)]
    # right-align numbers, as a reader scans them by column; "other changes" and a search's columns are text
    text = {dict(table.columns).get(OTHER_KEY), "tuned (best params)", "search"}  # the rest are numbers
    numeric = {i for i, h in enumerate(heads) if i >= 2 and h not in text}

    def line(cells: list[str]) -> str:
        padded = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in numeric else "-" * (w + 2) for i, w in enumerate(widths)) + "|"
    lines = [f"## {title(table)}", ""]
    if table.search is not None:
        ranges = "; ".join(p.describe() for p in table.search.params)
        lines += [f"Each row at its {spec_text(table.search)}. Searched: {ranges}.", ""]
    lines += [line(heads), rule, *(line(r) for r in body), ""]
    lines += [f"- {note}" for note in (*notes(table, fidelity(table)), *legend_lines(table), *extras.notes(table))]
    return "\n".join(lines) + "\n"


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def _evidence(ev: Evidence, metric: str, withheld: bool) -> dict[str, Any]:
    boot = None if withheld else ev.boot
    seeds = None if withheld else ev.seeds
    return {
        f"{metric}_delta_boot": _r(boot.delta) if boot else None,  # delta of the pooled seed-matched pairs
        f"{metric}_delta_low": _r(boot.low) if boot else None,  # its 95% bootstrap interval
        f"{metric}_delta_high": _r(boot.high) if boot else None,
        f"{metric}_p_boot": _r(boot.p_value) if boot else None,
        f"{metric}_boot_sentences": boot.n if boot else None,
        f"{metric}_p_seeds": _r(seeds.p_value) if seeds else None,  # the test over seeds (paired t, else Welch)
        f"{metric}_seed_test": seeds.method if seeds else None,
        f"{metric}_seeds_delta": _r(seeds.delta) if seeds else None,  # PPL: relative change; BLEU: points
        f"{metric}_seeds_low": _r(seeds.low) if seeds else None,  # its 95% interval over seeds
        f"{metric}_seeds_high": _r(seeds.high) if seeds else None,
        f"{metric}_p_equiv": _r(seeds.p_equiv) if seeds and seeds.p_equiv is not None else None,
        f"{metric}_p_adjusted": None if withheld else _r(ev.p_adjusted),  # over the table's rows
        f"{metric}_unit": None if withheld else ev.unit,  # seeds (architectures) | sentences (two models)
        f"{metric}_verdict": None if withheld else ev.verdict,  # better | worse | equivalent | undecided
    }


def row_record(row: ReportRow, table: AblationTable | None = None) -> dict[str, Any]:
    """One row as plain JSON-able values (CSV flattens it); BLEU is None where ``table`` withholds it."""
    pd = row.paper_delta
    alpha = table.alpha if table is not None else 0.05
    no_bleu = table is not None and metric_withheld(table, "bleu")
    return {
        "group": row.group,
        "row": row.name,
        "paper": row.paper.id if row.paper else None,
        "is_base": row.is_base,
        "settings": row.settings,
        "changed": row.changed,
        "ppl": _r(row.ppl.mean) if row.ppl else None,
        "ppl_std": _r(row.ppl.std) if row.ppl else None,
        "ppl_n": row.ppl.n if row.ppl else 0,
        "ppl_delta": _r(row.ppl_delta),
        **_evidence(row.ppl_ev, "ppl", False),
        "ppl_significant": row.ppl_ev.significant(alpha),
        "paper_ppl": row.paper.ppl if row.paper else None,
        "paper_ppl_delta": pd[0] if pd else None,
        "bleu": _r(row.bleu.mean) if row.bleu and not no_bleu else None,
        "bleu_std": _r(row.bleu.std) if row.bleu and not no_bleu else None,
        "bleu_n": row.bleu.n if row.bleu and not no_bleu else 0,
        "bleu_delta": None if no_bleu else _r(row.bleu_delta),
        **_evidence(row.bleu_ev, "bleu", no_bleu),
        "bleu_significant": None if no_bleu else row.bleu_ev.significant(alpha),
        "paper_bleu": row.paper.bleu if row.paper else None,
        "paper_bleu_delta": pd[1] if pd else None,
        "learned": row.learned,
        **extras.record(table, row, (SCORES, REFERENCES)),  # a language model's lengths and Press et al.'s
        "ppl_last_quarter_drop": _r(row.still_improving),  # share dev PPL fell over the last quarter of training
        "learning": learning_note(table, row),  # does not translate yet | undertrained | still improving | None
        "params": row.params,
        "paper_params_m": row.paper.params_m if row.paper else None,
        **extras.record(table, row, (LAST,)),  # another study's figure for the change
        "n_done": row.n_done,
        "n_trials": row.n_trials,
        "status": row.pending or ("done" if row.n_done == row.n_trials else "partial"),
        "correction": table.correction if table is not None else None,
        "failures": row.failures,
        "no_bootstrap": {m: ev.why for m, ev in (("ppl", row.ppl_ev), ("bleu", row.bleu_ev)) if ev.why} or None,
        **({"search": row.search.record() if row.search is not None else None} if _tuned(row, table) else {}),
    }


def learning_note(table: AblationTable | None, row: ReportRow) -> str | None:
    """One word on whether the model learned the task, for a row of CSV / JSON (the legend has the figures)."""
    if table is not None and table.not_translating:
        return "does not translate yet"
    if table is not None and table.undertrained:
        return "undertrained (base still improving)"
    if row.still_improving is not None and row.still_improving > STILL_IMPROVING:
        return "still improving"
    return None


def _tuned(row: ReportRow, table: AblationTable | None) -> bool:
    """Whether a row record carries a "search" entry: a row of a search table (or one that has a search)."""
    return row.search is not None or (table is not None and table.search is not None)


def render_json(table: AblationTable) -> str:
    data = {
        "sweep": table.name,
        "paper": CITATION,
        "base_row": table.base.name if table.base else None,
        "alpha": table.alpha,
        "correction": table.correction,  # error control of the verdicts over the table's rows
        "looks": table.looks,  # adaptive seeds: alpha above is per look, spread over this many
        "equivalence_margins": table.margins,  # ppl: relative, bleu: points
        "pairing": FAMILIES.get("encdec").pairing,  # the translator's, for every table (the notes have the family's)
        "unigram_floor": _r(table.floor),
        "floor_note": table.floor_note,
        "bleu_withheld": table.bleu_withheld,
        "undertrained": table.undertrained,  # base still improving when training stopped (None: no)
        "not_translating": table.not_translating,  # base's outputs are not translations yet (None: they are)
        "base_chrf": _r(table.base_chrf),
        "rows": [row_record(r, table) for r in table.rows],
        "fidelity": {k: _r(v) if isinstance(v, float) else v for k, v in fidelity(table).as_dict().items()},
        **extras.table_record(table),  # Press et al.'s direction summaries, where they apply
        "notes": [*notes(table, fidelity(table)), *legend_lines(table), *extras.notes(table)],
    }
    if table.search is not None:  # a tuned table: every row at its best configuration
        data = {"sweep": table.name, "tuned": True, "search": spec_record(table.search), **data}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_STAT_FIELDS = (
    "delta_boot",
    "delta_low",
    "delta_high",
    "p_boot",
    "p_seeds",
    "seeds_delta",
    "seeds_low",
    "seeds_high",
    "p_adjusted",
    "unit",
    "verdict",
    "significant",
)
CSV_FIELDS = [
    "group",
    "row",
    "paper",
    *COLUMN_KEYS,
    *(
        name
        for m in ("ppl", "bleu")
        for name in (
            m,
            f"{m}_std",
            f"{m}_n",
            f"{m}_delta",
            *(f"{m}_{f}" for f in _STAT_FIELDS),
            f"paper_{m}",
            f"paper_{m}_delta",
        )
    ),
    "learned",
    "ppl_last_quarter_drop",
    "learning",
    "params",
    "paper_params_m",
    "n_done",
    "n_trials",
    "status",
    "correction",
]


def render_csv(table: AblationTable) -> str:
    buf = io.StringIO()
    columns = table.columns  # found once: each look scans every row
    extra = [key for key, _ in columns if key not in COLUMN_KEYS]  # the slot / "other" columns it has
    fields = CSV_FIELDS[: 3 + len(COLUMN_KEYS)] + extra + CSV_FIELDS[3 + len(COLUMN_KEYS) :]
    fields += SEARCH_CSV_FIELDS if table.search is not None else []
    fields += extras.fields(table)
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in table.rows:
        rec = row_record(row, table)
        shown = shown_settings(row)
        rec.update({key: shown.get(key, "") for key, _ in columns})
        rec.update(csv_record(row))
        writer.writerow({k: "" if v is None else v for k, v in rec.items()})
    return buf.getvalue()


def _latex(table: AblationTable) -> str:
    from ablate.report.latex import render_latex

    return render_latex(table)


RENDERERS: dict[str, Callable[[AblationTable], str]] = {
    "md": render_md,
    "csv": render_csv,
    "latex": _latex,
    "json": render_json,
    "text": render_text,
}


def render(table: AblationTable, fmt: str = "md") -> str:
    """The table in ``fmt`` (text: the terminal's narrow layout; md, csv, latex or json)."""
    try:
        return RENDERERS[fmt](table)
    except KeyError:
        raise ReportError(f"unknown table format {fmt!r} (valid: {', '.join(FORMATS)})") from None
