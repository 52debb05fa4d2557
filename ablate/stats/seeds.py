"""Is a row different from base as an architecture? Tests over training runs (seeds), not over sentences.

A trained model is one draw of its architecture: initialisation, batch order and dropout move its dev
score. The unit of evidence about the architecture is therefore the seed: one dev figure per seed and
row. scipy's tests, applied to those figures:

- **paired** when the row and base share seeds (seed s of the row against seed s of base: the same batch
  order and dropout stream, so the noise they share cancels): a one-sample t-test of the per-seed
  differences (``scipy.stats.ttest_1samp``), its 95% interval from Student's t;
- **Welch's** unequal-variance t-test (``scipy.stats.ttest_ind(equal_var=False)``) when they share fewer
  than 2 seeds but each has 2 or more.

Perplexity is compared on the log scale (log PPL is the NLL per token, and a change of architecture
scales perplexity rather than shifting it): ``delta``, ``low`` and ``high`` are then relative changes
(``exp(mean log difference) - 1``). BLEU is compared as it is (points).

**Equivalence** ("the same as base within a margin") is a result too: two one-sided tests (TOST) of the
difference against ``-margin`` and ``+margin`` (relative for PPL, points for BLEU); ``p_equiv`` is the
larger of the two one-sided p-values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ablate.stats import student_t


@dataclass(frozen=True)
class SeedComparison:
    """A row's per-seed figures against base's (see the module docstring)."""

    base_mean: float  # mean of base's per-seed figures (PPL or BLEU)
    system_mean: float  # mean of the row's per-seed figures
    delta: float  # relative change for PPL (log scale), points for BLEU; > 0: the row's figure is higher
    low: float  # lower bound of the 95% interval of delta
    high: float  # upper bound of that interval
    p_value: float  # two-sided p-value of "no difference"
    df: float  # degrees of freedom of the t statistic (inf when every difference is the same)
    n_base: int  # seeds of base that entered the test
    n_system: int  # seeds of the row that entered the test
    method: str = "welch-t"  # "paired-t" (shared seeds) or "welch-t"
    p_equiv: float | None = None  # TOST p-value of "within the margin" (None: no margin given)
    margin: float | None = None  # the equivalence margin used (relative for PPL, points for BLEU)

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_value < alpha


def _scale(values: np.ndarray, log: bool) -> np.ndarray:
    return np.log(values) if log else values


def _unscale(x: float, log: bool) -> float:
    return math.expm1(x) if log else x


def _bound(margin: float | None, log: bool) -> float | None:
    if margin is None:
        return None
    return math.log1p(margin) if log else float(margin)


def compare_seeds(
    base: Mapping[int, float], system: Mapping[int, float], *, log: bool = False, margin: float | None = None
) -> SeedComparison | None:
    """The seed-level comparison of a row (``system``: seed -> figure) with base (seed -> figure).

    Paired over the seeds both have when there are at least 2 of them, else Welch's test when each side
    has at least 2 seeds, else None (one training run per side says nothing about the architecture).
    ``log``: compare on the log scale (perplexity). ``margin``: the equivalence margin (relative when
    ``log``), for ``p_equiv``.
    """
    shared = sorted(set(base) & set(system))
    if len(shared) >= 2:
        return _paired(base, system, shared, log, margin)
    if len(base) >= 2 and len(system) >= 2:
        return _welch(base, system, log, margin)
    return None


def _paired(
    base: Mapping[int, float], system: Mapping[int, float], seeds: list[int], log: bool, margin: float | None
) -> SeedComparison:
    b = _scale(np.array([base[s] for s in seeds], dtype=float), log)
    d = _scale(np.array([system[s] for s in seeds], dtype=float), log) - b
    n = len(d)
    means = float(np.mean([base[s] for s in seeds])), float(np.mean([system[s] for s in seeds]))
    test = _t_test(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n), float(n - 1), log, margin)
    return SeedComparison(*means, *test[:5], n, n, "paired-t", test[5], margin)


def _welch(base: Mapping[int, float], system: Mapping[int, float], log: bool, margin: float | None) -> SeedComparison:
    b = _scale(np.array(list(base.values()), dtype=float), log)
    r = _scale(np.array(list(system.values()), dtype=float), log)
    nb, nr = len(b), len(r)
    vb, vr = float(b.var(ddof=1)) / nb, float(r.var(ddof=1)) / nr
    se = math.sqrt(vb + vr)
    df = (vb + vr) ** 2 / (vb * vb / (nb - 1) + vr * vr / (nr - 1)) if se > 0 else math.inf  # Welch-Satterthwaite
    means = float(np.mean(list(base.values()))), float(np.mean(list(system.values())))
    test = _t_test(float(r.mean() - b.mean()), se, df, log, margin)
    return SeedComparison(*means, *test[:5], nb, nr, "welch-t", test[5], margin)


def _t_test(
    mean: float, se: float, df: float, log: bool, margin: float | None
) -> tuple[float, float, float, float, float, float | None]:
    """(delta, low, high, p, df, p_equiv) of a difference ``mean`` with standard error ``se`` on ``df``
    degrees of freedom, from Student's t distribution (:mod:`ablate.stats.student_t`, which agrees with
    ``scipy.stats.t`` to 1e-13: importing scipy.stats for it took 0.6 s of every ``ablate table``; the
    same statistic as ``ttest_1samp`` / ``ttest_ind(equal_var=False)``, computed here once).

    ``se == 0`` (every seed moved by the same amount): no spread to test against, so p is 1 for no
    difference and 0 otherwise, the interval is the point, and equivalence is whether it lies inside."""
    bound = _bound(margin, log)
    if se == 0.0:
        p, low, high = (1.0 if mean == 0 else 0.0), mean, mean
        p_eq = None if bound is None else (0.0 if abs(mean) < bound else 1.0)
        return _unscale(mean, log), _unscale(low, log), _unscale(high, log), p, math.inf, p_eq
    p = 2 * student_t.sf(abs(mean) / se, df)
    half = student_t.ppf(0.975, df) * se
    p_eq = None
    if bound is not None:  # TOST: H0 delta <= -bound (rejected when t is large) and delta >= +bound
        p_eq = max(student_t.sf((mean + bound) / se, df), student_t.cdf((mean - bound) / se, df))
    return _unscale(mean, log), _unscale(mean - half, log), _unscale(mean + half, log), p, df, p_eq
