"""Seed-level tests (ablate.stats.seeds): against scipy on fixed data, equivalence on constructed cases, and
the coverage of the paired interval by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ablate.stats.seeds import compare_seeds


def _seeds(values: list[float], first: int = 1) -> dict[int, float]:
    return {first + i: v for i, v in enumerate(values)}


@pytest.mark.parametrize(
    "base, system",
    [
        ([25.1, 25.4, 24.9], [26.0, 25.7]),
        ([27.3, 27.1], [27.2, 27.6, 26.8, 27.0, 27.4]),
        ([10.0, 10.1, 9.9], [10.0, 10.05, 9.95]),
    ],
)
def test_welch_when_no_seeds_are_shared_matches_scipy(base: list[float], system: list[float]) -> None:
    ours = compare_seeds(_seeds(base, 1), _seeds(system, 100))  # disjoint seeds: nothing to pair
    ref = stats.ttest_ind(system, base, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert ours is not None and ours.method == "welch-t"
    assert ours.delta == pytest.approx(np.mean(system) - np.mean(base))
    assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)
    assert ours.df == pytest.approx(float(ref.df), rel=1e-12)
    assert (ours.low, ours.high) == pytest.approx((float(ci.low), float(ci.high)), rel=1e-9)


def test_paired_over_shared_seeds_matches_scipy_ttest_rel() -> None:
    base, system = [12.28, 12.04, 12.14], [12.47, 11.92, 12.44]  # N=2 of the mini recipe at seeds 1-3
    ours = compare_seeds(_seeds(base), _seeds(system), log=True)
    ref = stats.ttest_rel(np.log(system), np.log(base))
    ci = ref.confidence_interval(0.95)
    assert ours is not None and ours.method == "paired-t" and ours.n_base == ours.n_system == 3
    assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)
    assert ours.delta == pytest.approx(math.expm1(np.mean(np.log(system) - np.log(base))))
    assert (ours.low, ours.high) == pytest.approx((math.expm1(ci.low), math.expm1(ci.high)), rel=1e-9)
    assert ours.p_value > 0.05  # the sign flips from seed to seed: not a difference


def test_pairing_removes_the_noise_the_seeds_share() -> None:
    shared = [0.0, 0.8, -0.6, 0.3, -0.4]  # each seed moves both rows alike
    base = _seeds([10.0 + n for n in shared])
    system = _seeds([10.2 + n + e for n, e in zip(shared, [0.01, -0.02, 0.02, 0.0, -0.01])])
    paired = compare_seeds(base, system)
    unpaired = compare_seeds(base, {s + 100: v for s, v in system.items()})
    assert paired.method == "paired-t" and unpaired.method == "welch-t"
    assert paired.p_value < 0.001 < 0.05 < unpaired.p_value
    assert paired.high - paired.low < (unpaired.high - unpaired.low) / 10


def test_one_seed_on_a_side_gives_no_seed_test() -> None:
    assert compare_seeds({1: 25.0}, {1: 26.0}) is None
    assert compare_seeds({1: 25.0}, {1: 26.0, 2: 26.5}) is None
    assert compare_seeds({1: 25.0, 2: 25.5}, {1: 26.0, 2: 26.5}) is not None


def test_identical_seeds_are_equivalent_and_a_constant_shift_is_not() -> None:
    same = compare_seeds({1: 3.0, 2: 3.1}, {1: 3.0, 2: 3.1}, log=True, margin=0.02)
    assert same.p_value == 1.0 and same.p_equiv == 0.0
    apart = compare_seeds({1: 3.0, 2: 3.1}, {1: 3.3, 2: 3.41}, log=True, margin=0.02)  # +10% at each seed
    assert apart.p_value == 0.0 and apart.p_equiv == 1.0 and apart.delta == pytest.approx(0.1)


@pytest.mark.parametrize(
    "shift, expect_equivalent",
    [(0.0, True), (0.005, True), (0.05, False), (-0.05, False)],
)
def test_equivalence_on_constructed_cases(shift: float, expect_equivalent: bool) -> None:
    """Eight paired seeds with 0.5% noise: within a 2% margin when the row moves by 0 or 0.5%, not by 5%."""
    rng = np.random.default_rng(3)
    base = {s: 10.0 * math.exp(rng.normal(0, 0.02)) for s in range(8)}
    system = {s: v * math.exp(shift + rng.normal(0, 0.005)) for s, v in base.items()}
    test = compare_seeds(base, system, log=True, margin=0.02)
    assert (test.p_equiv < 0.05) is expect_equivalent


def test_the_paired_interval_covers_the_true_effect_95_percent_of_the_time() -> None:
    """2,000 simulated rows of 3 paired seeds (true log effect 0.03, seed noise 0.02, pair noise 0.01).
    Binomial tolerance: 95% +- 4 standard errors of a proportion over 2,000 draws (+-1.95 points)."""
    rng = np.random.default_rng(7)
    hits, n = 0, 2000
    for _ in range(n):
        shared = rng.normal(0, 0.02, 3)
        base = {s: math.exp(2.5 + shared[s]) for s in range(3)}
        system = {s: math.exp(2.5 + 0.03 + shared[s] + rng.normal(0, 0.01)) for s in range(3)}
        test = compare_seeds(base, system, log=True)
        hits += math.log1p(test.low) <= 0.03 <= math.log1p(test.high)
    tolerance = 4 * math.sqrt(0.95 * 0.05 / n)
    assert abs(hits / n - 0.95) <= tolerance
