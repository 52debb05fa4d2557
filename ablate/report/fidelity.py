"""How faithfully a sweep reproduces Table 3: rank correlation and agreement in the direction of effects.

Absolute numbers cannot match at a smaller scale (another corpus, fewer steps, smaller dims), but the
ordering of the rows and the direction of each change against base can. Two measures:

* Spearman's rank correlation between our dev PPL (and BLEU) and the paper's, across the rows that
  have both (ties get the average rank, as in scipy.stats.spearmanr);
* the share of rows whose delta against base has the paper's sign, PPL and BLEU separately, over the
  rows where the paper's |delta| is at least a threshold (default 0.1 PPL / 0.1 BLEU: row E's PPL
  and row A3's BLEU are 0, A3's PPL is -0.01 - no direction to match), with how many of our deltas
  there are significant (the table's marks); an exact 0 on our side counts as a disagreement.

Rows marked "not learned" (dev PPL near the unigram floor) enter neither measure, and BLEU enters none
when the table withholds it (docs/trust.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ablate.report.rows import AblationTable, ReportRow

# With fewer rows a rank correlation says nothing (two points always give +1 or -1).
MIN_ROWS_FOR_SPEARMAN = 3
# Sign agreement counts only rows where the paper's |delta| reaches these (its own printed precision
# and noise: a 0.01 PPL change in the paper carries no direction worth matching).
MIN_PAPER_DELTA_PPL = 0.1
MIN_PAPER_DELTA_BLEU = 0.1


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: the Pearson correlation of the ranks, ties given their average rank (what
    ``scipy.stats.spearmanr`` computes; tests/report/test_report_fidelity.py compares the two). None if
    undefined (fewer than MIN_ROWS_FOR_SPEARMAN rows, or one side all tied).

    Not scipy's: importing ``scipy.stats`` to rank twenty numbers took 2.5 of the 5.9 s of a profiled
    ``ablate table``, most of it parsing its distributions' docstrings."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} values against {len(y)}")
    if len(x) < MIN_ROWS_FOR_SPEARMAN or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    rx, ry = _ranks(x), _ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks of ``values``, each run of equal values given the average of its ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


@dataclass(frozen=True)
class Fidelity:
    """The fidelity summary of one table (``n`` = rows that entered each number)."""

    spearman_ppl: float | None
    n_ppl: int
    spearman_bleu: float | None
    n_bleu: int
    sign_ppl: tuple[int, int]  # (rows agreeing with the paper's direction, rows counted)
    sign_bleu: tuple[int, int]
    significant_ppl: int = 0  # of the rows counted in sign_ppl, how many of our deltas are significant
    significant_bleu: int = 0
    min_delta_ppl: float = MIN_PAPER_DELTA_PPL  # rows where the paper's |delta| is smaller are not counted
    min_delta_bleu: float = MIN_PAPER_DELTA_BLEU
    alpha: float = 0.05
    bleu_withheld: bool = False

    def lines(self) -> list[str]:
        """The summary as plain-text lines (shown under the table)."""

        def rho(value: float | None, n: int) -> str:
            return f"{value:+.2f} (n={n})" if value is not None else f"n/a (n={n}, needs {MIN_ROWS_FOR_SPEARMAN}+)"

        def share(agree: int, n: int) -> str:
            return f"{agree}/{n} ({100 * agree / n:.0f}%)" if n else "n/a (n=0)"

        bleu_rho = "withheld" if self.bleu_withheld else rho(self.spearman_bleu, self.n_bleu)
        bleu_sign = "withheld" if self.bleu_withheld else share(*self.sign_bleu)
        bleu_sig = "" if self.bleu_withheld else f", BLEU {self.significant_bleu}/{self.sign_bleu[1]}"
        return [
            f"Spearman rank correlation with the paper: PPL {rho(self.spearman_ppl, self.n_ppl)}, BLEU {bleu_rho}",
            f"Delta vs base has the paper's sign: PPL {share(*self.sign_ppl)}, BLEU {bleu_sign} "
            f"(rows where the paper's |Δ| ≥ {self.min_delta_ppl:g} PPL / {self.min_delta_bleu:g} BLEU); "
            f"of those, a difference after the correction (adjusted p < {self.alpha:g}): "
            f"PPL {self.significant_ppl}/{self.sign_ppl[1]}{bleu_sig}",
        ]

    def as_dict(self) -> dict[str, object]:
        return {
            "spearman_ppl": self.spearman_ppl,
            "n_ppl": self.n_ppl,
            "spearman_bleu": self.spearman_bleu,
            "n_bleu": self.n_bleu,
            "sign_agree_ppl": self.sign_ppl[0],
            "sign_n_ppl": self.sign_ppl[1],
            "sign_significant_ppl": self.significant_ppl,
            "sign_agree_bleu": self.sign_bleu[0],
            "sign_n_bleu": self.sign_bleu[1],
            "sign_significant_bleu": self.significant_bleu,
            "sign_min_paper_delta_ppl": self.min_delta_ppl,
            "sign_min_paper_delta_bleu": self.min_delta_bleu,
            "alpha": self.alpha,
            "bleu_withheld": self.bleu_withheld,
        }


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _counted(table: AblationTable) -> list[ReportRow]:
    """Rows whose statistics may be compared: not the ones marked "not learned" (nor all, when base is)."""
    base = table.base
    if base is not None and base.learned is False:
        return []
    return [r for r in table.rows if r.learned is not False]


def fidelity(
    table: AblationTable, min_delta_ppl: float = MIN_PAPER_DELTA_PPL, min_delta_bleu: float = MIN_PAPER_DELTA_BLEU
) -> Fidelity:
    """Compare our rows with the paper's across the rows that have both values.

    Sign agreement counts only rows where the paper's |delta| is at least ``min_delta_*`` (smaller
    changes are within the paper's own rounding and run-to-run noise), and says how many of our deltas
    there are significant. Rows marked "not learned" and withheld BLEU figures enter nothing.
    """
    rows = _counted(table)
    no_bleu = table.bleu_withheld is not None
    ppl_pairs = [(r.ppl.mean, r.paper.ppl) for r in rows if r.paper and r.ppl]
    bleu_pairs = [] if no_bleu else [(r.bleu.mean, r.paper.bleu) for r in rows if r.paper and r.bleu]
    tallies = {"ppl": [0, 0, 0], "bleu": [0, 0, 0]}  # agree, counted, significant
    for r in rows:
        paper = r.paper_delta
        if paper is None:
            continue
        for metric, theirs, least in (("ppl", paper[0], min_delta_ppl), ("bleu", paper[1], min_delta_bleu)):
            ours = getattr(r, f"{metric}_delta")
            if ours is None or abs(theirs) < least - 1e-9 or theirs == 0 or (metric == "bleu" and no_bleu):
                continue
            tally = tallies[metric]
            tally[0] += _sign(ours) == _sign(theirs)
            tally[1] += 1
            tally[2] += bool(getattr(r, f"{metric}_ev").significant(table.alpha))
    return Fidelity(
        spearman_ppl=spearman(*zip(*ppl_pairs)) if len(ppl_pairs) >= MIN_ROWS_FOR_SPEARMAN else None,
        n_ppl=len(ppl_pairs),
        spearman_bleu=spearman(*zip(*bleu_pairs)) if len(bleu_pairs) >= MIN_ROWS_FOR_SPEARMAN else None,
        n_bleu=len(bleu_pairs),
        sign_ppl=(tallies["ppl"][0], tallies["ppl"][1]),
        sign_bleu=(tallies["bleu"][0], tallies["bleu"][1]),
        significant_ppl=tallies["ppl"][2],
        significant_bleu=tallies["bleu"][2],
        min_delta_ppl=min_delta_ppl,
        min_delta_bleu=min_delta_bleu,
        alpha=table.alpha,
        bleu_withheld=no_bleu,
    )
