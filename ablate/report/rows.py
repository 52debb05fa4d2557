"""The report's table types: a trial as the report reads it, a row of Table 3, the table itself.

Built by :mod:`ablate.report.table`; changed in place by the checks that follow it (verdicts over
seeds, :mod:`ablate.report.verdicts`; learning, :mod:`ablate.report.training_checks`; the evidence over dev
sentences, :mod:`ablate.report.evidence`), and read by the renderers. Kept apart so that those
modules take these types without importing the builder, which calls them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ablate.family import FAMILIES, ModelFamily
from ablate.report.columns import table_columns
from ablate.report.paper import PaperRow, paper_delta
from ablate.stats.seeds import SeedComparison
from ablate.stats.significance import Comparison

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
    run_dir: str  # where the trial's files are (read through ablate.rundir.RunDir)


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
    unit: str | None = None  # what the verdict rests on: "seeds" (the architecture) or "sentences" (two models; a
    # language model's dev blocks)
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
    # a language model's dev PPL at lengths beyond its training block, and their marks (report/lengths.py)
    lengths: dict[int, Any] = field(default_factory=dict)
    length_marks: dict[int, str] = field(default_factory=dict)

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
class AblationTable:
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
    bleu_note: str | None = None  # what BLEU on this dev text means (already tokenized: not comparable to papers)
    undertrained: str | None = None  # base was still improving when training stopped (ablate.report.training_checks)
    not_translating: str | None = None  # base's dev outputs are not translations yet: no verdicts
    base_chrf: float | None = None  # base's dev chrF (sacreBLEU), the figure behind not_translating
    search: Any = None  # a search sweep's SearchSpec: each row at its best config (ablate.report.search_view)
    # the kind of model its trials are (ablate.family): BLEU or not, PPL per length, what the bootstrap resamples
    family: ModelFamily = field(default_factory=lambda: FAMILIES.get("encdec"))
    block_size: int | None = None  # a per-length family's training block L (data.block_size), when all rows share it
    base_config: dict[str, Any] = field(default_factory=dict)  # the base row's resolved config (its data, recipe)
    plan_notes: list[str] = field(default_factory=list)  # what the sweep's plans say under the table

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
