"""Build the Table 3 report from a sweep's trial results: one row per sweep row, the paper beside it.

Each sweep row (all seeds of one ``rows:`` entry) becomes a :class:`ReportRow`:

* its Table 3 settings, and the cells that differ from our base row (the paper's layout leaves the
  unchanged cells blank), computed from the trials' resolved configs, not from the sweep's overrides,
  so a change made through the experiment file or a layer shows up too;
* our dev PPL / BLEU as mean and sample std over the seeds that finished, the parameter count, and
  each row's delta against our base next to the paper's delta against its base;
* how many of its trials are done, and which are still waiting, running or have failed;
* how sure each delta is (docs/trust.md): the test over seeds (:mod:`ablate.stats.seeds`, through
  :func:`ablate.report.verdicts.decide`: paired by seed where row and base share >= 2 seeds, else
  Welch's with n >= 2 on both sides), the paired bootstraps over dev sentences and the "learned nothing" checks
  attached afterwards by :mod:`ablate.report.evidence` (they read the run directories).

Rendering lives in :mod:`ablate.report.render`, the fidelity summary in :mod:`ablate.report.fidelity`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ablate.family import FAMILIES, families_of
from ablate.report.columns import OTHER_KEY, flat_changes, flat_config, slot_settings
from ablate.report.errors import ReportError
from ablate.report.lengths import row_lengths
from ablate.report.paper import PAPER, settings_of
from ablate.report.published import published_for
from ablate.report.rows import AblationTable, ReportRow, Stat, TrialLike
from ablate.report.verdicts import decide

# The metrics the table reads from a trial (keys written by training; see docs/architecture.md).
PPL_KEY = "val/ppl"
BLEU_KEY = "val/bleu"


def _number(value: Any) -> float | None:
    """A finite float, or None for missing / NaN values (a diverged run has no PPL to average)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out and out not in (float("inf"), float("-inf")) else None


def _ordered_rows(results: Sequence[TrialLike], row_order: Sequence[str] | None) -> list[str]:
    names = list(dict.fromkeys(row_order or ()))
    for r in results:  # rows the spec does not list (e.g. an older version of the file) still show
        if r.row not in names:
            names.append(r.row)
    return names


def _pick_base(names: Sequence[str], by_row: Mapping[str, list[TrialLike]], groups: Mapping[str, str]) -> str:
    """Our base row: the one reproducing the paper's base, else the one in group base, else the first."""
    for name in names:
        if any(t.paper == "base" for t in by_row.get(name, ())):
            return name
    for name in names:
        if groups.get(name) == "base":
            return name
    return names[0]


def _row_meta(
    names: Sequence[str], by_row: Mapping[str, list[TrialLike]], row_info: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, str], dict[str, str | None]]:
    """(group, paper key) of each row, from its trials, else the sweep file, else the paper's row."""
    groups: dict[str, str] = {}
    papers: dict[str, str | None] = {}
    for n in names:
        trials = by_row[n]
        info = row_info.get(n, {})
        papers[n] = next((t.paper for t in trials if t.paper), None) or info.get("paper")
        paper_group = PAPER[papers[n]].group if papers[n] in PAPER else None
        groups[n] = next((t.group for t in trials if t.group), None) or info.get("group") or paper_group or ""
        if papers[n] is not None and papers[n] not in PAPER:
            raise ReportError(f"row {n!r}: unknown paper row {papers[n]!r} (valid: {', '.join(PAPER)})")
    return groups, papers


def _settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    return {**settings_of(config), **slot_settings(config)} if config else {}


# The base row as every other row is compared with it: (its settings, its flattened config), found once.
BaseView = tuple[dict[str, Any], dict[str, Any]]


def _base_view(config: Mapping[str, Any] | None) -> BaseView | None:
    return (_settings(config), flat_config(config)) if config else None


def _changed(
    config: Mapping[str, Any] | None,
    settings: dict[str, Any],
    base: BaseView | None,
    paper: str | None,
    ignore: Sequence[str],
) -> dict[str, Any]:
    """The settings a row changes against base; without both configs, the paper's cells of its row."""
    if base is None or not config:
        return dict(PAPER[paper].changes) if paper in PAPER else {}
    base_settings, base_flat = base
    changed = {key: settings.get(key) for key in settings if settings.get(key) != base_settings.get(key)}
    other = flat_changes(flat_config(config), base_flat, ignore)
    return {**changed, OTHER_KEY: other} if other else changed


def _stat(done: list[TrialLike], key: str) -> Stat | None:
    pairs = [(t.seed, v) for t in done if (v := _number(t.metrics.get(key))) is not None]
    return Stat.of([v for _, v in pairs], [s for s, _ in pairs])


def _report_row(
    name: str,
    trials: list[TrialLike],
    group: str,
    paper: str | None,
    base: BaseView | None,
    is_base: bool,
    ignore: Sequence[str],
) -> ReportRow:
    config = next((t.config for t in trials if t.config), None)
    done = [t for t in trials if t.state == "done"]
    states: dict[str, int] = {}
    for t in trials:
        states[t.state] = states.get(t.state, 0) + 1
    params = next((p for p in (t.params or _number(t.metrics.get("params")) for t in trials) if p), None)
    settings = _settings(config)
    return ReportRow(
        name=name,
        group=group,
        paper=PAPER.get(paper) if paper else None,
        settings=settings,
        changed=_changed(config, settings, base, paper, ignore),
        ppl=_stat(done, PPL_KEY),
        bleu=_stat(done, BLEU_KEY),
        params=int(params) if params else None,
        is_base=is_base,
        states=states,
        failures=[f"seed {t.seed}: {t.failure or 'failed'}" for t in trials if t.state == "failed"],
        lengths=row_lengths(done),
    )


def build_table(
    results: Iterable[TrialLike],
    row_order: Sequence[str] | None = None,
    name: str = "",
    row_info: Mapping[str, Mapping[str, Any]] | None = None,
    ignore: Sequence[str] = (),
) -> AblationTable:
    """Aggregate trial results into report rows, in the sweep file's row order.

    ``row_info`` (row name -> ``{group, paper}``) describes rows of the sweep file that have no trial
    in the store yet, so they still show, marked as waiting. ``ignore``: config keys (dotted) that the
    "other changes" column leaves out (a search's parameters, which its own column shows).
    """
    results = list(results)
    names = _ordered_rows(results, row_order)
    if not names:
        raise ReportError(f"sweep {name or '?'} has no rows and no results; run `ablate sweep` first")
    by_row: dict[str, list[TrialLike]] = {n: [] for n in names}
    for r in results:
        by_row[r.row].append(r)
    groups, papers = _row_meta(names, by_row, row_info or {})
    base_name = _pick_base(names, by_row, groups)
    base_config = next((t.config for t in by_row[base_name] if t.config), None)
    view = _base_view(base_config)
    rows = [_report_row(n, by_row[n], groups[n], papers[n], view, n == base_name, ignore) for n in names]
    base = next(r for r in rows if r.is_base)
    for row in rows:
        if row.is_base:
            continue
        row.published = published_for(row.changed) if row.paper is None else None
        if row.ppl and base.ppl:
            row.ppl_delta = row.ppl.mean - base.ppl.mean
        if row.bleu and base.bleu:
            row.bleu_delta = row.bleu.mean - base.bleu.mean
    # one family for the table: a mixed one (or one with no config yet) reads as the translator's
    family = families_of([t.config or {} for t in results]) or FAMILIES.get("encdec")
    blocks = {((t.config or {}).get("data") or {}).get("block_size") for t in results if t.config}
    block = int(next(iter(blocks))) if family.per_length and len(blocks) == 1 and None not in blocks else None
    table = AblationTable(name=name, rows=rows, family=family, block_size=block, base_config=dict(base_config or {}))
    decide(table)  # seed-level tests and verdicts; load_table decides again with the bootstrap attached
    return table
