"""How faithfully a sweep reproduces Table 3: rank correlation and agreement in the direction of effects.

Absolute numbers cannot match at a smaller scale (another corpus, fewer steps, smaller dims), but the
ordering of the rows and the direction of each change against base can. Two measures:

* Spearman's rank correlation between our dev PPL (and BLEU) and the paper's, across the rows that
  have both (ties get the average rank, as in scipy.stats.spearmanr);
* the share of rows whose delta against base has the paper's sign, PPL and BLEU separately. Rows
  where the paper's delta is exactly 0 (e.g. row E's PPL, row A3's BLEU) carry no direction and are
  not counted; an exact 0 on our side against a non-zero paper delta counts as a disagreement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ablate.report.table import Table3

# With fewer rows a rank correlation says nothing (two points always give +1 or -1).
MIN_ROWS_FOR_SPEARMAN = 3


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson correlation of the ranks); None if undefined (too few rows, all tied)."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} values against {len(y)}")
    if len(x) < MIN_ROWS_FOR_SPEARMAN:
        return None
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


@dataclass(frozen=True)
class Fidelity:
    """The fidelity summary of one table (``n`` = rows that entered each number)."""

    spearman_ppl: float | None
    n_ppl: int
    spearman_bleu: float | None
    n_bleu: int
    sign_ppl: tuple[int, int]  # (rows agreeing with the paper's direction, rows counted)
    sign_bleu: tuple[int, int]

    def lines(self) -> list[str]:
        """The summary as plain-text lines (shown under the table)."""

        def rho(value: float | None, n: int) -> str:
            return f"{value:+.2f} (n={n})" if value is not None else f"n/a (n={n}, needs {MIN_ROWS_FOR_SPEARMAN}+)"

        def share(agree: int, n: int) -> str:
            return f"{agree}/{n} ({100 * agree / n:.0f}%)" if n else "n/a (n=0)"

        return [
            f"Spearman rank correlation with the paper: PPL {rho(self.spearman_ppl, self.n_ppl)}, "
            f"BLEU {rho(self.spearman_bleu, self.n_bleu)}",
            f"Delta vs base has the paper's sign: PPL {share(*self.sign_ppl)}, BLEU {share(*self.sign_bleu)} "
            "(rows where the paper's delta is 0 are not counted)",
        ]

    def as_dict(self) -> dict[str, object]:
        return {
            "spearman_ppl": self.spearman_ppl,
            "n_ppl": self.n_ppl,
            "spearman_bleu": self.spearman_bleu,
            "n_bleu": self.n_bleu,
            "sign_agree_ppl": self.sign_ppl[0],
            "sign_n_ppl": self.sign_ppl[1],
            "sign_agree_bleu": self.sign_bleu[0],
            "sign_n_bleu": self.sign_bleu[1],
        }


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def fidelity(table: Table3) -> Fidelity:
    """Compare our rows with the paper's across the rows that have both values."""
    ppl_pairs = [(r.ppl.mean, r.paper.ppl) for r in table.rows if r.paper and r.ppl]
    bleu_pairs = [(r.bleu.mean, r.paper.bleu) for r in table.rows if r.paper and r.bleu]
    sign_ppl = [0, 0]
    sign_bleu = [0, 0]
    for r in table.rows:
        paper = r.paper_delta
        if paper is None:
            continue
        for ours, theirs, tally in ((r.ppl_delta, paper[0], sign_ppl), (r.bleu_delta, paper[1], sign_bleu)):
            if ours is None or theirs == 0:
                continue
            tally[1] += 1
            tally[0] += _sign(ours) == _sign(theirs)
    return Fidelity(
        spearman_ppl=spearman(*zip(*ppl_pairs)) if len(ppl_pairs) >= MIN_ROWS_FOR_SPEARMAN else None,
        n_ppl=len(ppl_pairs),
        spearman_bleu=spearman(*zip(*bleu_pairs)) if len(bleu_pairs) >= MIN_ROWS_FOR_SPEARMAN else None,
        n_bleu=len(bleu_pairs),
        sign_ppl=(sign_ppl[0], sign_ppl[1]),
        sign_bleu=(sign_bleu[0], sign_bleu[1]),
    )
