"""Student's t without scipy (ablate/stats/student_t.py) against scipy.stats.t: CDF, survival function
and quantile on a grid of degrees of freedom and points, tails included."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from ablate.stats import student_t

DFS = [0.5, 1, 1.5, 2, 3, 4.7, 7.3, 10, 30, 49.9, 50.1, 100, 1000]
POINTS = [-40.0, -8.0, -3.0, -1.96, -0.2, 0.0, 0.5, 1.0, 2.2, 5.0, 12.7, 60.0]
QUANTILES = [1e-12, 1e-9, 0.001, 0.025, 0.05, 0.3, 0.5, 0.7, 0.95, 0.975, 0.999, 1 - 1e-9]


def _close(ours: float, theirs: float, tol: float) -> bool:
    """Relative error in a tail (where the value is small), absolute elsewhere."""
    return abs(ours - theirs) <= tol * (abs(theirs) if abs(theirs) < 0.5 else 1.0)


@pytest.mark.parametrize("df", DFS)
def test_cdf_sf_and_ppf_agree_with_scipy(df: float) -> None:
    for x in POINTS:
        assert _close(student_t.cdf(x, df), float(stats.t.cdf(x, df)), 1e-13), (df, x)
        assert _close(student_t.sf(x, df), float(stats.t.sf(x, df)), 1e-13), (df, x)
    for q in QUANTILES:
        ours, theirs = student_t.ppf(q, df), float(stats.t.ppf(q, df))
        assert abs(ours - theirs) <= 1e-13 * max(1.0, abs(theirs)), (df, q)


def test_large_and_infinite_degrees_of_freedom_approach_the_normal() -> None:
    for df in (1e5, 1e7):
        assert _close(student_t.sf(2.2, df), float(stats.t.sf(2.2, df)), 1e-9)
        assert abs(student_t.ppf(0.975, df) - float(stats.t.ppf(0.975, df))) < 1e-9
    assert _close(student_t.sf(12.7, math.inf), float(stats.norm.sf(12.7)), 1e-13)
    assert abs(student_t.ppf(0.975, math.inf) - float(stats.norm.ppf(0.975))) < 1e-15


def test_edges() -> None:
    assert student_t.cdf(math.inf, 3) == 1.0 and student_t.cdf(-math.inf, 3) == 0.0
    assert student_t.ppf(0.0, 3) == -math.inf and student_t.ppf(1.0, 3) == math.inf
    assert student_t.ppf(0.5, 3) == 0.0 and student_t.cdf(0.0, 3) == 0.5
    assert all(math.isnan(v) for v in (student_t.cdf(1.0, 0), student_t.ppf(1.5, 3), student_t.cdf(math.nan, 3)))
