"""The table's display strings, shared by every layout: numbers, deltas, marks, intervals, the legend.

The paper prints PPL with 2 decimals, BLEU with 1, params in millions. Marks (explained in the legend
under every table):

* after a delta, the row's verdict against base (:mod:`ablate.report.verdicts`: error controlled over the
  table's rows): ``*`` differs over seeds (the architecture), ``≈`` equivalent within the margin over
  seeds, ``°`` differs over dev sentences only (one seed: two trained models, not the architectures);
* ``†`` after a PPL: *not learned* - the row's dev PPL is not below 0.8 x the unigram floor.

Rows none of whose trials has finished show what they wait for: "…" (waiting), "running", "failed".
"""

from __future__ import annotations

from typing import Any

from ablate.report import extras
from ablate.report.columns import paper_deviations
from ablate.report.fidelity import Fidelity
from ablate.report.numbers import MARKERS, fmt_stat, signed
from ablate.report.paper import CITATION
from ablate.report.rows import AblationTable, Evidence, ReportRow, Stat
from ablate.report.training_checks import STILL_IMPROVING
from ablate.stats.learning import LEARNED_RATIO
from ablate.stats.significance import Comparison

SIGNIFICANT = "*"  # differs from base over seeds
SENTENCES_ONLY = "°"  # differs over dev sentences only: two trained models, not two architectures
EQUIVALENT = "≈"  # the same as base within the equivalence margin, over seeds
CORRECTION_TEXT = {
    "holm": "Holm-corrected over the table's rows (family-wise error ≤ α)",
    "bh": "Benjamini-Hochberg over the table's rows (false discovery rate ≤ α)",
    "none": "not corrected for the table's many rows",
}
NOT_LEARNED = "†"
IMPROVING = "‡"  # dev PPL still falling when training stopped (ablate.report.training_checks)
NO_PAPER = "No row names a paper row (`paper:` in the sweep file): the deltas are against our base only."
WITHHELD = "withheld"


def fmt_setting(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key == "train_steps" and isinstance(value, int) and value >= 1000 and value % 1000 == 0:
        return f"{value // 1000}K"
    return str(value)


def fmt_params(params: float | None) -> str:
    """Millions with 3-4 significant digits (mini models have well under a million parameters)."""
    if params is None:
        return ""
    m = params / 1e6
    digits = 0 if m >= 100 else 1 if m >= 10 else 2 if m >= 1 else 3
    return f"{m:.{digits}f}"


def fmt_p(p: float | None) -> str:
    if p is None:
        return ""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def row_label(row: ReportRow) -> str:
    """The row's name, with the paper's row id when the name does not say it (``h=1 [A1]``)."""
    return f"{row.name} [{row.paper.id}]" if row.paper and row.paper.id != row.name else row.name


def group_label(group: str) -> str:
    return group if group in ("base", "big", "") else f"({group})"


def shown_settings(row: ReportRow) -> dict[str, Any]:
    """The Table 3 cells a row prints: all of base's, only the changed ones elsewhere."""
    return row.settings if row.is_base and row.settings else row.changed


def metric_withheld(table: AblationTable, metric: str) -> bool:
    return metric == "bleu" and table.bleu_withheld is not None


def mark(table: AblationTable, row: ReportRow, metric: str) -> str:
    """The verdict's mark: ``*`` differs over seeds, ``°`` over sentences only, ``≈`` equivalent, else none."""
    ev: Evidence = getattr(row, f"{metric}_ev")
    if ev.verdict == "equivalent":
        return EQUIVALENT
    if ev.verdict in ("better", "worse"):
        return SIGNIFICANT if ev.unit == "seeds" else SENTENCES_ONLY
    return ""


def units(table: AblationTable) -> str:
    """What the bootstrap resamples: a translator's dev sentences, a language model's dev blocks."""
    return table.family.resamples


def verdict_legend(table: AblationTable) -> str:
    """What the marks mean for this table: level, correction, unit, margins."""
    m = table.margins
    resting = {getattr(r, f"{k}_ev").unit for r in table.rows for k in ("ppl", "bleu")} - {None}
    one_seed = any(r.n_done == 1 for r in table.rows)
    text = (
        f"Marks after Δ (α = {table.alpha:g}, {CORRECTION_TEXT.get(table.correction, table.correction)}): "
        f"{SIGNIFICANT} = differs from base over seeds (paired by seed, else Welch: the architecture's effect); "
        f"{EQUIVALENT} = equivalent to base over seeds (within ±{m.get('ppl', 0):.0%} PPL"
        + (f", ±{m.get('bleu', 0):g} BLEU" if table.family.has_bleu else "")
        + f"); {SENTENCES_ONLY} = differs over dev {units(table)} only."
    )
    if "sentences" in resting or one_seed:
        text += (
            f" A row (or base) with one seed is tested over dev {units(table)} ({SENTENCES_ONLY}): that compares two "
            "trained models on this dev set, not the architectures; run ≥ 2 seeds per row for a seed-level verdict."
        )
    return text


def result_cell(table: AblationTable, row: ReportRow, metric: str, digits: int, std: bool = True) -> str:
    """``8.20 ± 0.28 (+0.80)*``: ours, mean ± std over seeds, delta vs base, significance mark."""
    if row.pending:
        return MARKERS[row.pending]
    stat: Stat | None = getattr(row, metric)
    if stat is None:
        return "n/a"  # finished, but this metric was not recorded (e.g. BLEU switched off)
    if metric_withheld(table, metric):
        return WITHHELD
    text = fmt_stat(stat, digits) if std else f"{stat.mean:.{digits}f}"
    delta = getattr(row, f"{metric}_delta")
    if delta is not None:
        text += f" ({signed(delta, digits)}){mark(table, row, metric)}"
    if metric == "ppl" and row.learned is False:
        text += f" {NOT_LEARNED}"
    if metric == "ppl" and row.still_improving is not None and row.still_improving > STILL_IMPROVING:
        text += f" {IMPROVING}"
    return text


def paper_cell(row: ReportRow, metric: str, digits: int) -> str:
    if row.paper is None:
        return ""
    value = getattr(row.paper, metric)
    pd = row.paper_delta
    delta = None if pd is None else pd[0 if metric == "ppl" else 1]
    text = f"{value:.{digits}f}"
    return f"{text} ({signed(delta, digits)})" if delta is not None else text


def interval_cell(table: AblationTable, row: ReportRow, metric: str, digits: int) -> str:
    """``+0.81 [+0.42, +1.20]``: the bootstrap's delta (on the pooled seed-matched pairs) and its 95%
    interval; on base's row, the unigram floor."""
    if row.is_base:
        return f"floor {table.floor:.{digits}f}" if metric == "ppl" and table.floor is not None else ""
    boot: Comparison | None = getattr(row, f"{metric}_ev").boot
    if boot is None or metric_withheld(table, metric):
        return ""
    return f"{signed(boot.delta, digits)} [{signed(boot.low, digits)}, {signed(boot.high, digits)}]"


def p_cell(row: ReportRow, metric: str) -> str:
    """``0.002 / 0.031 → 0.12``: the bootstrap's p-value / the seed-level test's (where there is one) and,
    after the arrow, the p-value the verdict used, adjusted over the table's rows."""
    ev: Evidence = getattr(row, f"{metric}_ev")
    boot = fmt_p(ev.boot.p_value) if ev.boot else ("–" if ev.seeds else "")
    text = f"{boot} / {fmt_p(ev.seeds.p_value)}" if ev.seeds else boot
    return f"{text} → {fmt_p(ev.p_adjusted)}" if ev.p_adjusted is not None else text


def _why_lines(table: AblationTable) -> list[str]:
    """One line per row whose bootstrap is missing, grouped by reason."""
    by_reason: dict[str, list[str]] = {}
    for row in table.rows:
        for metric in ("ppl", "bleu"):
            why = getattr(row, f"{metric}_ev").why
            no_bleu = metric == "bleu" and (table.bleu_withheld or not any(r.bleu for r in table.rows))  # an LM's
            if why and not no_bleu:
                by_reason.setdefault(why, []).append(f"{row.name} {metric.upper()}")
    return [f"no bootstrap ({why}): {', '.join(names)}" for why, names in by_reason.items()]


def legend(table: AblationTable, terminal: bool = False) -> list[str]:
    """The lines under every table: how to read it, the floor, withheld figures (``terminal``: the narrow
    layout, which leaves the intervals and p-values to ``--format md``)."""
    base = table.base
    floor = (
        f"Unigram floor (dev PPL of a unigram model of the training targets): {table.floor:.2f}; "
        f"{NOT_LEARNED} = not learned (PPL ≥ {LEARNED_RATIO:g} × floor = {LEARNED_RATIO * table.floor:.2f}), "
        "its statistics withheld."
        if table.floor is not None
        else f"Unigram {table.floor_note or 'floor: n/a'}."
    )
    lines = [
        f"Ours: dev {table.family.score_label}, mean ± std over seeds; "
        f"Δ = against our base row ({base.name if base else '?'}). "
        + (f"Paper: {CITATION}; Δ against its base. " if table.has_paper else "")
        + "Blank settings = as base. … = waiting.",
        verdict_legend(table),
        (
            "Intervals and p-values: `ablate table --format md` (or json). "
            if terminal
            else "Δ boot [95% CI] = Δ of the pooled seed-matched pairs and its bootstrap interval; "
            "p = bootstrap over sentences / test over seeds (paired t, else Welch; – = none) → adjusted. "
        )
        + f"Bootstrap pairs: {table.family.pairing}.",
        floor,
    ]
    if table.bleu_withheld:
        lines.append(f"BLEU withheld: {table.bleu_withheld}.")
    if table.bleu_note:
        lines.append(table.bleu_note)
    lines += learning_lines(table) + extras.legend(table)
    if table.looks:
        lines.append(
            f"Adaptive seeds: rows got more seeds while undecided, deciding at up to {table.looks} looks, each at "
            f"α/{table.looks} = {table.alpha:.3g}, so the chance of marking any row that does not differ stays ≤ "
            f"{table.alpha * table.looks:.3g} over all looks."
        )
    deviation = paper_deviations(base.settings) if base is not None and table.has_paper else None
    if deviation:  # e.g. the mini table's pre-norm recipe: say so wherever the table is read
        lines.append(
            f"Our base differs from the paper's base model in: {deviation}; the rows inherit it unless they change it."
        )
    lines += _why_lines(table)
    return lines


def learning_lines(table: AblationTable) -> list[str]:
    """Whether the models learned the task: undertrained (base still improving), rows still improving,
    outputs that are not translations yet; each with its figure."""
    lines = [f"DOES NOT TRANSLATE YET: {table.not_translating}."] if table.not_translating else []
    if table.undertrained:
        lines.append(f"UNDERTRAINED: {table.undertrained}.")
    rows = [r for r in table.rows if r.still_improving is not None and r.still_improving > STILL_IMPROVING]
    if rows:
        listed = ", ".join(f"{r.name} {r.still_improving:.1%}" for r in rows)
        lines.append(
            f"{IMPROVING} = still improving when training stopped (dev PPL fell > {STILL_IMPROVING:.0%} over the "
            f"last quarter): {listed}."
        )
    return lines


def fidelity_lines(table: AblationTable, fid: Fidelity) -> list[str]:
    """The fidelity summary, or one line saying there is nothing to compare when no row has a paper row."""
    return fid.lines() if table.has_paper else [NO_PAPER]


def drop_paper_columns(
    table: AblationTable, headers: list[str], body: list[list[str]]
) -> tuple[list[str], list[list[str]]]:
    """Without a row that reproduces the paper's, its columns would be empty: leave them out."""
    if table.has_paper:
        return headers, body
    keep = [i for i, h in enumerate(headers) if "paper" not in h]
    return [headers[i] for i in keep], [[r[i] for i in keep] for r in body]


def notes(table: AblationTable, fid: Fidelity) -> list[str]:
    lines = [*legend(table), *fidelity_lines(table, fid)]
    for row in table.rows:
        lines += [f"failed: {row.name} {failure}" for failure in row.failures]
    return lines + list(table.plan_notes)


def table_cells(table: AblationTable) -> list[list[str]]:
    """The md / LaTeX body: one list of display strings per row."""
    out = []
    previous_group = None
    columns = table.columns  # found once: each look scans every row
    for row in table.rows:
        shown = shown_settings(row)
        paper = row.paper
        out.append(
            [
                group_label(row.group) if row.group != previous_group else "",
                row_label(row),
                *(fmt_setting(key, shown.get(key)) if key in shown else "" for key, _ in columns),
                result_cell(table, row, "ppl", 2),
                interval_cell(table, row, "ppl", 2),
                p_cell(row, "ppl"),
                paper_cell(row, "ppl", 2),
                result_cell(table, row, "bleu", 1),
                interval_cell(table, row, "bleu", 1),
                p_cell(row, "bleu") if not table.bleu_withheld else "",
                paper_cell(row, "bleu", 1),
                fmt_params(row.params),
                f"{paper.params_m:g}" if paper and paper.params_m else "",  # printed as in the paper
                row.runs,
            ]
        )
        previous_group = row.group
    return out
