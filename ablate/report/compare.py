"""Does it transfer? ``ablate compare A.yaml B.yaml [...]``: the same rows in two or more sweeps.

Rows are matched by name, else by their ``paper:`` key; rows found in only some sweeps are listed.
Each row's effect is against its own sweep's base: the relative change of dev PPL, the estimate of the
sweep's own test with that test's 95% interval (over seeds where there are >= 2: exp of the mean log
ratio - 1, paired by seed else Welch; else the paired bootstrap's over dev sentences, relative to the
base it resampled; ``row / base - 1`` of the means where there is no test), so a point never sits
outside its interval; the change of BLEU in points (the difference of the means); and the verdict
(better / worse / equivalent / undecided, as ``ablate table`` decides them). The paper is one more
column where a row has a paper row, and Narang et al. (2021)'s BLEU change another where a row makes a
change they measured (directions only: their BLEU against our PPL).

Per pair of sweeps (and each sweep against the paper): Spearman's correlation of the PPL effects over
the rows both have, how many effects point the same way, and the rows whose verdicts disagree (one
says better where the other says worse, or one decided where the other found them equivalent).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ablate.report.fidelity import spearman
from ablate.report.paper import PAPER
from ablate.report.rows import AblationTable, ReportRow

DECIDED = ("better", "worse")


@dataclass(frozen=True)
class Effect:
    """One row's effect in one sweep, against that sweep's base."""

    ppl: float | None  # relative change of dev PPL (-0.05: 5% lower than base)
    ppl_low: float | None  # 95% interval of it (seeds, else bootstrap), relative
    ppl_high: float | None
    bleu: float | None  # change of dev BLEU in points
    verdict: str  # better | worse | equivalent | undecided | n/a
    unit: str | None  # seeds | sentences | None


@dataclass
class Comparison:
    """Two or more sweeps side by side (see the module docstring)."""

    names: list[str]
    rows: list[str]  # matched rows, in the first sweep's order
    effects: dict[str, list[Effect | None]]  # row -> one effect per sweep (None: not finished there)
    paper: dict[str, float | None]  # row -> the paper's relative PPL change
    unmatched: dict[str, list[str]] = field(default_factory=dict)  # sweep -> its rows no other sweep has
    published: dict[str, float | None] = field(default_factory=dict)  # row -> Narang et al.'s BLEU change

    @property
    def has_paper(self) -> bool:
        return any(v is not None for v in self.paper.values())

    @property
    def has_published(self) -> bool:
        return any(v is not None for v in self.published.values())


def effect_of(table: AblationTable, row: ReportRow) -> Effect | None:
    base = table.base
    if row.ppl is None or base is None or base.ppl is None or base.ppl.mean == 0:
        return None
    ev = row.ppl_ev
    ppl, low, high = row.ppl.mean / base.ppl.mean - 1, None, None
    if ev.seeds is not None:  # the test's own estimate beside its interval (the means may differ from it)
        ppl, low, high = ev.seeds.delta, ev.seeds.low, ev.seeds.high
    elif ev.boot is not None:
        m = ev.boot.base or base.ppl.mean  # relative to the base the bootstrap resampled (seed-matched pairs)
        ppl, low, high = ev.boot.delta / m, ev.boot.low / m, ev.boot.high / m
    bleu = row.bleu_delta if not table.bleu_withheld else None
    verdict = ev.verdict or ("n/a" if ev.withheld else "undecided")
    return Effect(ppl, low, high, bleu, verdict, ev.unit)


def compare_tables(tables: list[AblationTable]) -> Comparison:
    """Match the rows of ``tables`` (by name, else by paper key) and collect each row's effects."""
    by_table: list[dict[str, ReportRow]] = []
    for t in tables:
        by_table.append({r.name: r for r in t.rows if not r.is_base})
    by_paper = [{r.paper.id: r for r in rows.values() if r.paper is not None} for rows in by_table]
    matched: dict[str, list[ReportRow | None]] = {}
    for name, row in by_table[0].items():
        found = [
            rows.get(name) or (paper.get(row.paper.id) if row.paper else None)
            for rows, paper in zip(by_table, by_paper)
        ]
        if all(f is not None for f in found):
            matched[name] = found
    used = [{r.name for found in matched.values() for r in [found[i]] if r is not None} for i in range(len(tables))]
    unmatched = {t.name: sorted(set(rows) - used[i]) for i, (t, rows) in enumerate(zip(tables, by_table))}
    effects = {name: [effect_of(t, r) for t, r in zip(tables, found)] for name, found in matched.items()}
    paper = {name: _paper_effect(found[0]) for name, found in matched.items()}
    published = {name: _published(found[0]) for name, found in matched.items()}
    unmatched = {k: v for k, v in unmatched.items() if v}
    return Comparison([t.name for t in tables], list(matched), effects, paper, unmatched, published)


def _published(row: ReportRow | None) -> float | None:
    p = getattr(row, "published", None)
    return p.bleu_delta if p is not None else None


def _paper_effect(row: ReportRow | None) -> float | None:
    if row is None or row.paper is None or row.paper.id not in PAPER or row.paper.id == "base":
        return None
    return row.paper.ppl / PAPER["base"].ppl - 1


def agreement(comp: Comparison, i: int, j: int | None) -> dict[str, Any]:
    """Spearman, sign agreement and disagreeing verdicts of sweep ``i`` against sweep ``j`` (None: the paper)."""
    pairs = []
    disagree = []
    for name in comp.rows:
        a = comp.effects[name][i]
        b = comp.paper[name] if j is None else (comp.effects[name][j].ppl if comp.effects[name][j] else None)
        if a is None or b is None:
            continue
        pairs.append((a.ppl, b))
        if j is not None:
            other = comp.effects[name][j]
            if _verdicts_disagree(a.verdict, other.verdict):
                disagree.append(f"{name} ({a.verdict} vs {other.verdict})")
    signs = [(x > 0) == (y > 0) for x, y in pairs if x != 0 and y != 0]
    return {
        "against": "paper" if j is None else comp.names[j],
        "n": len(pairs),
        "spearman_ppl": spearman([x for x, _ in pairs], [y for _, y in pairs]) if pairs else None,
        "sign_agree": sum(signs),
        "sign_n": len(signs),
        "verdicts_disagree": disagree,
    }


def _verdicts_disagree(a: str, b: str) -> bool:
    if a in DECIDED and b in DECIDED:
        return a != b
    return {a, b} in ({"better", "equivalent"}, {"worse", "equivalent"})


def published_agreement(comp: Comparison, i: int) -> dict[str, Any]:
    """Sweep ``i``'s PPL changes against Narang et al.'s BLEU changes: the same direction is a PPL that
    falls where their BLEU rose (and the reverse)."""
    pairs = [
        (e.ppl, b)
        for name in comp.rows
        if (e := comp.effects[name][i]) is not None and (b := comp.published.get(name)) is not None
    ]
    signs = [(x < 0) == (y > 0) for x, y in pairs if x != 0 and y != 0]
    agree = {"n": len(pairs), "sign_agree": sum(signs), "sign_n": len(signs)}
    return {"sweep": comp.names[i], "against": "Narang et al. (BLEU)", **agree}


def all_agreements(comp: Comparison) -> list[dict[str, Any]]:
    """Every pair of sweeps, then each sweep against the paper and against Narang et al. where they have rows."""
    out = [
        {"sweep": comp.names[i], **agreement(comp, i, j)} for i, j in itertools.combinations(range(len(comp.names)), 2)
    ]
    if comp.has_paper:
        out += [{"sweep": comp.names[i], **agreement(comp, i, None)} for i in range(len(comp.names))]
    if comp.has_published:
        out += [published_agreement(comp, i) for i in range(len(comp.names))]
    return out
