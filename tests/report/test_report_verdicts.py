"""Verdicts over a whole table (ablate.report.verdicts): Holm against its worked example, BH against
scipy, and by simulation the table-wide false-positive rate under the null (no row differs from base)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ablate.report.rows import AblationTable, ReportRow, Stat
from ablate.report.verdicts import decide
from ablate.stats.correction import adjust, holm

ALPHA = 0.05


def test_holm_matches_the_worked_example() -> None:
    # Holm's procedure on four hypotheses, p = (0.01, 0.04, 0.03, 0.005) at alpha 0.05: H1 and H4 are
    # rejected (0.005 <= 0.05/4, 0.01 <= 0.05/3), then 0.03 > 0.05/2 stops it.
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [p < ALPHA for p in adjusted] == [True, False, False, True]


def test_bh_is_scipys_and_none_is_identity() -> None:
    from scipy.stats import false_discovery_control

    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205]
    assert adjust(p, "bh") == pytest.approx(list(false_discovery_control(p, method="bh")))
    assert adjust(p, "none") == p
    with pytest.raises(ValueError, match="holm, bh, none"):
        adjust(p, "bonferroni")


def _table(rows: int, seeds: int, effects: dict[int, float], rng: np.random.Generator) -> AblationTable:
    """A table of base + ``rows`` rows, ``seeds`` paired seeds each: log PPL = 2.5 + seed noise (shared by
    every row at that seed) + noise of the run + the row's effect. Built from rows directly: build_table's
    settings columns cost 50 ms a table, and these simulations need thousands of tables."""
    shared = rng.normal(0, 0.02, seeds)

    def stat(effect: float) -> Stat:
        values = np.exp(2.5 + shared + rng.normal(0, 0.01, seeds) + effect)
        return Stat.of(values.tolist(), list(range(1, seeds + 1)))

    base = ReportRow("base", "base", None, {}, {}, ppl=stat(0.0), is_base=True)
    others = [ReportRow(f"r{r}", "X", None, {}, {}, ppl=stat(effects.get(r, 0.0))) for r in range(rows)]
    return AblationTable("sim", [base, *others])


def _false_marks(correction: str, tables: int, rows: int = 20, seeds: int = 3) -> float:
    rng = np.random.default_rng(11)
    hit = 0
    for _ in range(tables):
        table = _table(rows, seeds, {}, rng)
        decide(table, correction)
        hit += any(r.ppl_ev.significant() for r in table.rows if not r.is_base)
    return hit / tables


def _within(rate: float, tables: int) -> bool:
    """rate <= alpha, within 3 binomial standard errors over ``tables`` draws."""
    return rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / tables)


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_under_the_null_a_table_of_20_rows_is_marked_at_most_alpha_of_the_time(correction: str) -> None:
    """200 simulated 20-row tables, 3 paired seeds, no row different from base: the share of tables with
    any mark (the family-wise rate; for BH under this null it equals the false discovery rate) <= alpha,
    within 3 binomial standard errors (+4.6 points). The slow tier repeats it over 2,000 tables."""
    assert _within(_false_marks(correction, tables=200), 200)


@pytest.mark.slow
@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_under_the_null_over_2000_tables(correction: str) -> None:
    """As above over 2,000 tables (tolerance +1.46 points)."""
    assert _within(_false_marks(correction, tables=2000), 2000)


def test_without_correction_the_same_tables_are_marked_far_more_often() -> None:
    """The control is not vacuous: uncorrected, 20 tests at 0.05 mark a null table far more often than
    alpha (fewer than 1 - 0.95^20 = 64%: the rows share base's noise, so their tests are correlated)."""
    assert _false_marks("none", tables=150) > 3 * ALPHA


def test_a_real_effect_is_found_and_named() -> None:
    rng = np.random.default_rng(5)
    table = _table(4, 5, {0: 0.10, 1: -0.10}, rng)  # r0: 10% higher PPL, r1: 10% lower
    decide(table, "holm", {"ppl": 0.02, "bleu": 0.3})
    verdicts = {r.name: r.ppl_ev.verdict for r in table.rows if not r.is_base}
    assert verdicts["r0"] == "worse" and verdicts["r1"] == "better"
    assert all(r.ppl_ev.unit == "seeds" for r in table.rows if not r.is_base)


def test_one_seed_per_row_gives_no_seed_level_verdict() -> None:
    table = _table(3, 1, {0: 0.5}, np.random.default_rng(0))
    decide(table)
    assert all(r.ppl_ev.verdict is None and r.ppl_ev.seeds is None for r in table.rows)
