"""Student's t distribution without scipy: the regularized incomplete beta function (Numerical Recipes'
continued fraction, Lentz's method), the two-sided tail, the CDF and the quantile (by bisection).
Used by Welch's test over seeds (:func:`ablate.eval.significance.welch_seeds`); scipy is only a dev
dependency, which the tests use to cross-check these values.
"""

from __future__ import annotations

import math


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes 6.4)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            delta = c * d
            h *= delta
        if abs(delta - 1.0) < eps:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})")


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if a <= 0 or b <= 0:
        raise ValueError(f"betainc needs a, b > 0, got a={a}, b={b}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1, got {x}")
    if x == 0.0 or x == 1.0:
        return x
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    # The fraction converges fast for x < (a + 1) / (a + b + 2); otherwise use I_x(a, b) = 1 - I_{1-x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf2(t: float, df: float) -> float:
    """Two-sided tail of Student's t with ``df`` degrees of freedom: P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2)."""
    if df <= 0:
        raise ValueError(f"df must be > 0, got {df}")
    if math.isinf(df):
        return math.erfc(abs(t) / math.sqrt(2.0))
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def t_cdf(t: float, df: float) -> float:
    """Student's t cumulative distribution function P(T <= t)."""
    tail = 0.5 * t_sf2(t, df)
    return 1.0 - tail if t > 0 else tail


def t_ppf(q: float, df: float) -> float:
    """Quantile of Student's t (inverse of :func:`t_cdf`), by bisection on the two-sided tail."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    if q == 0.5:
        return 0.0
    alpha = 2.0 * min(q, 1.0 - q)  # two-sided tail mass beyond the quantile
    if math.isinf(df):
        lo, hi = 0.0, 1.0
        while t_sf2(hi, df) > alpha:
            hi *= 2.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):  # converged to float precision
                break
            lo, hi = (mid, hi) if t_sf2(mid, df) > alpha else (lo, mid)
        t = 0.5 * (lo + hi)
    else:
        # Solve I_x(df/2, 1/2) = alpha for x = df / (df + t^2): I_x grows with x, and t shrinks with x.
        lo, hi = 0.0, 1.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):  # converged to float precision
                break
            lo, hi = (mid, hi) if betainc(df / 2.0, 0.5, mid) < alpha else (lo, mid)
        x = 0.5 * (lo + hi)
        t = math.sqrt(df * (1.0 - x) / x)
    return t if q > 0.5 else -t
