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

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ablate.report.columns import OTHER_KEY, other_changes, slot_settings, table_columns
from ablate.report.errors import ReportError
from ablate.report.paper import PAPER, PaperRow, paper_delta, settings_of
from ablate.report.published import published_for
from ablate.report.verdicts import decide
from ablate.stats.seeds import SeedComparison
from ablate.stats.significance import Comparison

# The metrics the table reads from a trial (keys written by training; see docs/architecture.md).
PPL_KEY = "val/ppl"
BLEU_KEY = "val/bleu"
DEFAULT_ALPHA = 0.05  # a change vs base is marked when its adjusted p < alpha (`ablate table --alpha`)


class TrialLike(Protocol):
    """The fields of ``ablate.sweep.store.state.TrialView`` (the store's trial-state view) the report reads."""

    row: str
    group: str | None
    paper: str | None
    seed: int
    state: str  # done | running | waiting | failed
    config: Mapping[str, Any]
    params: int | None
    metrics: Mapping[str, Any]
    failure: str | None


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation over the seeds that finished (std None for one seed)."""

    mean: float
    std: float | None
    n: int
    values: tuple[float, ...] = ()  # the per-seed values (for the seed-level test against base)
    seeds: tuple[int, ...] = ()  # the seed of each value (rows are paired with base by seed)

    @classmethod
    def of(cls, values: Sequence[float], seeds: Sequence[int] = ()) -> Stat | None:
        if not values:
            return None
        std = statistics.stdev(values) if len(values) > 1 else None
        return cls(statistics.fmean(values), std, len(values), tuple(values), tuple(seeds))

    def by_seed(self) -> dict[int, float]:
        """seed -> value (values without a seed are numbered from -1 down: they never pair)."""
        seeds = self.seeds if len(self.seeds) == len(self.values) else tuple(-1 - i for i in range(len(self.values)))
        return dict(zip(seeds, self.values))


@dataclass
class Evidence:
    """How sure one metric's delta vs base is (ablate.report.verdicts decides the verdict from it)."""

    seeds: SeedComparison | None = None  # the seed-level test (paired by seed, else Welch; None: < 2 seeds)
    boot: Comparison | None = None  # paired bootstrap over dev sentences (seed-matched pairs pooled)
    why: str | None = None  # why there is no bootstrap (no saved dev outputs, ...)
    withheld: bool = False  # no statistics at all (the row or base learned nothing, BLEU withheld): see why
    unit: str | None = None  # what the verdict rests on: "seeds" (the architecture) or "sentences" (two models)
    p_adjusted: float | None = None  # the test's p-value adjusted over the table's rows (the table's correction)
    p_equiv_adjusted: float | None = None  # the equivalence test's, adjusted likewise (seeds only)
    verdict: str | None = None  # better | worse | equivalent | undecided (None: no test)

    def significant(self, alpha: float | None = None) -> bool | None:
        """Whether the verdict is a difference (better or worse) after the table's correction; None: no test.
        ``alpha`` is the table's (the verdict was decided at it); kept for callers that pass it."""
        if self.verdict is None:
            return None
        return self.verdict in ("better", "worse")


@dataclass
class ReportRow:
    """One row of our Table 3."""

    name: str  # the sweep row's name
    group: str  # base, A..E, big or the sweep's own group
    paper: PaperRow | None  # the paper's row this one reproduces, if any
    settings: dict[str, Any]  # the ten Table 3 settings and the slots (empty when no trial has a config yet)
    changed: dict[str, Any]  # the settings that differ from our base row; "other": the rest, as text
    ppl: Stat | None = None
    bleu: Stat | None = None
    params: int | None = None
    ppl_delta: float | None = None  # our mean PPL minus our base's (None on the base row itself)
    bleu_delta: float | None = None
    is_base: bool = False
    states: dict[str, int] = field(default_factory=dict)  # trial state -> count
    failures: list[str] = field(default_factory=list)  # "seed 2: loss became NaN at step 300"
    ppl_ev: Evidence = field(default_factory=Evidence)  # how sure ppl_delta is (empty on base)
    bleu_ev: Evidence = field(default_factory=Evidence)
    learned: bool | None = None  # PPL below 0.8 x the unigram floor (None: no floor or no PPL)
    still_improving: float | None = None  # share dev PPL fell over the last quarter of training (mean over seeds)
    curves: list[list[tuple[int, float]]] = field(default_factory=list)  # (step, dev PPL) per finished seed
    search: Any = None  # a search sweep's row: its ablate.report.search_view.TunedRow (None: a grid row)
    published: Any = None  # another study's figure for the same change (ablate.report.published), if any

    @property
    def n_trials(self) -> int:
        return sum(self.states.values())

    @property
    def n_done(self) -> int:
        return self.states.get("done", 0)

    @property
    def pending(self) -> str | None:
        """What the row is waiting for when no seed has finished: running, waiting or failed."""
        if self.n_done:
            return None
        for state in ("running", "waiting", "failed"):
            if self.states.get(state):
                return state
        return "waiting"  # listed in the sweep file but not yet in the store

    @property
    def paper_delta(self) -> tuple[float, float] | None:
        if self.paper is None or self.is_base or self.paper.id == "base":
            return None
        return paper_delta(self.paper.id)

    @property
    def runs(self) -> str:
        """``"1/1"``, ``"2/3 (1 failed)"``: seeds done out of the row's trials, and what the rest are doing."""
        if not self.n_trials:  # listed in the sweep file, not in the store yet
            return "not started"
        rest = [f"{self.states[s]} {s}" for s in ("running", "waiting", "failed") if self.states.get(s)]
        text = f"{self.n_done}/{self.n_trials}"
        return f"{text} ({', '.join(rest)})" if rest else text


@dataclass
class Table3:
    """The whole report: rows in the sweep's order, the name of the sweep, and how to read its statistics."""

    name: str
    rows: list[ReportRow]
    alpha: float = DEFAULT_ALPHA  # significance level of the marks
    correction: str = "holm"  # how the marks control the error over the table's rows (holm | bh | none)
    margins: dict[str, float] = field(default_factory=dict)  # equivalence margins: ppl (relative), bleu (points)
    looks: int | None = None  # adaptive seeds: the looks alpha was spread over (alpha here is per look)
    floor: float | None = None  # dev PPL of a unigram model of the training targets (None: unknown)
    floor_note: str | None = None  # why there is no floor
    bleu_withheld: str | None = None  # why BLEU figures are withheld (base BLEU < 1, degenerate output)
    undertrained: str | None = None  # base was still improving when training stopped (ablate.report.learning)
    not_translating: str | None = None  # base's dev outputs are not translations yet: no verdicts
    base_chrf: float | None = None  # base's dev chrF (sacreBLEU), the figure behind not_translating
    search: Any = None  # a search sweep's SearchSpec: each row at its best config (ablate.report.search_view)

    @property
    def base(self) -> ReportRow | None:
        return next((r for r in self.rows if r.is_base), None)

    @property
    def has_paper(self) -> bool:
        """Whether some row reproduces one of the paper's (``paper:``); if none, no paper columns or fidelity."""
        return any(r.paper is not None for r in self.rows)

    @property
    def columns(self) -> tuple[tuple[str, str], ...]:
        """(key, header) of the settings columns: the paper's ten, then the slots and "other" some row changes."""
        return table_columns(self.rows)


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


def _changed(
    config: Mapping[str, Any] | None, base_config: Mapping[str, Any] | None, paper: str | None, ignore: Sequence[str]
) -> dict[str, Any]:
    """The settings a row changes against base; without both configs, the paper's cells of its row."""
    if base_config is None or not config:
        return dict(PAPER[paper].changes) if paper in PAPER else {}
    mine, base = _settings(config), _settings(base_config)
    changed = {key: mine.get(key) for key in mine if mine.get(key) != base.get(key)}
    other = other_changes(config, base_config, ignore)
    return {**changed, OTHER_KEY: other} if other else changed


def _stat(done: list[TrialLike], key: str) -> Stat | None:
    pairs = [(t.seed, v) for t in done if (v := _number(t.metrics.get(key))) is not None]
    return Stat.of([v for _, v in pairs], [s for s, _ in pairs])


def _report_row(
    name: str,
    trials: list[TrialLike],
    group: str,
    paper: str | None,
    base_config: Mapping[str, Any] | None,
    is_base: bool,
    ignore: Sequence[str],
) -> ReportRow:
    config = next((t.config for t in trials if t.config), None)
    done = [t for t in trials if t.state == "done"]
    states: dict[str, int] = {}
    for t in trials:
        states[t.state] = states.get(t.state, 0) + 1
    params = next((p for p in (t.params or _number(t.metrics.get("params")) for t in trials) if p), None)
    return ReportRow(
        name=name,
        group=group,
        paper=PAPER.get(paper) if paper else None,
        settings=_settings(config),
        changed=_changed(config, base_config, paper, ignore),
        ppl=_stat(done, PPL_KEY),
        bleu=_stat(done, BLEU_KEY),
        params=int(params) if params else None,
        is_base=is_base,
        states=states,
        failures=[f"seed {t.seed}: {t.failure or 'failed'}" for t in trials if t.state == "failed"],
    )


def build_table(
    results: Iterable[TrialLike],
    row_order: Sequence[str] | None = None,
    name: str = "",
    row_info: Mapping[str, Mapping[str, Any]] | None = None,
    ignore: Sequence[str] = (),
) -> Table3:
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
    rows = [_report_row(n, by_row[n], groups[n], papers[n], base_config, n == base_name, ignore) for n in names]
    base = next(r for r in rows if r.is_base)
    for row in rows:
        if row.is_base:
            continue
        row.published = published_for(row.changed) if row.paper is None else None
        if row.ppl and base.ppl:
            row.ppl_delta = row.ppl.mean - base.ppl.mean
        if row.bleu and base.bleu:
            row.bleu_delta = row.bleu.mean - base.bleu.mean
    table = Table3(name=name, rows=rows)
    decide(table)  # seed-level tests and verdicts; load_table decides again with the bootstrap attached
    return table
