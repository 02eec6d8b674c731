"""Statistics for graders of experiments and simulations, judge side: the distributions a test's expected
values need (Student's t, the chi-square, the normal) without SciPy, which is a test dependency only, and
the bands a rate counted over simulated runs must fall in.

    lo, hi = binomial_band(3000, 0.05)                  # holds Binomial(3000, 0.05) with probability 1 - 1e-7
    expect_rate(false_positives, 3000, 0.05, what="A/A runs with p_value < alpha", scenario="...")
    p = 2 * student_t_sf(abs(t), df)                    # a two-sided p-value
    bound = chi_square_quantile(1 - 1e-7, df=255)        # a uniformity statistic above this fails

A statistical check runs a fixed, seeded simulation, so its verdict is the same on every grade; the band
says how rare the verdict "fail" is for a correct solution: a count of events that each happen with
probability p falls outside binomial_band(n, p, error_rate) with probability at most error_rate (half of
it on each side), whatever seed the simulation had. The distribution functions agree with SciPy's to
about 1e-10 relative (continued fractions of the incomplete beta and gamma functions, as Numerical
Recipes writes them; the quantiles by bisection on them), far tighter than any check's tolerance.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from mlprep.grading.checks import fail, joined

ERROR_RATE = 1e-7  # of a band: how often a correct solution's count falls outside it, at most
_EPS, _TINY, _MAX_TERMS = 1e-15, 1e-300, 10_000


# -- the normal --------------------------------------------------------------------------------------

def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z, accurate in the far tail too."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_quantile(p: float) -> float:
    """The z with P(Z <= z) = p, for 0 < p < 1."""
    return NormalDist().inv_cdf(p)


# -- Student's t, through the regularized incomplete beta function -------------------------------------

def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz), converging fast for x < (a + 1) / (a + b + 2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"the incomplete beta fraction did not converge (a = {a}, b = {b}, x = {x})")


def regularized_beta(x: float, a: float, b: float, *, complement: float | None = None) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1; `complement` is 1 - x when it
    is known more precisely than by subtracting (the tail of a t-distribution)."""
    y = 1.0 - x if complement is None else complement
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, y) / b


def student_t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom (any real df > 0, as Welch's test needs)."""
    if df <= 0 or math.isnan(t):
        raise ValueError(f"student_t_sf needs df > 0 and a number t, got t = {t}, df = {df}")
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * regularized_beta(df / (df + t * t), df / 2.0, 0.5, complement=t * t / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def student_t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, for 0 < p < 1 (by bisection on student_t_sf, to the last bits)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"student_t_quantile needs 0 < p < 1, got {p}")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    upper = 1.0 - p  # P(T > t) sought
    lo, hi = 0.0, 1.0
    while student_t_sf(hi, df) > upper:
        lo, hi = hi, 2.0 * hi
    return _bisect(lambda t: student_t_sf(t, df) > upper, lo, hi)


def _bisect(below: Any, lo: float, hi: float) -> float:
    """The point between lo and hi where `below(x)` turns from True to False, to float64's resolution."""
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        lo, hi = (mid, hi) if below(mid) else (lo, mid)
    return 0.5 * (lo + hi)


# -- the chi-square, through the regularized incomplete gamma function ---------------------------------

def _gamma_q(a: float, x: float) -> float:
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function, for a > 0, x >= 0."""
    if x <= 0.0:
        return 1.0
    front = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1.0:  # the series of P converges fast here
        term = total = 1.0 / a
        ap = a
        for _ in range(_MAX_TERMS):
            ap += 1.0
            term *= x / ap
            total += term
            if abs(term) < abs(total) * _EPS:
                return 1.0 - front * total
        raise ArithmeticError(f"the incomplete gamma series did not converge (a = {a}, x = {x})")
    b = x + 1.0 - a  # the continued fraction of Q (modified Lentz)
    c, d = 1.0 / _TINY, 1.0 / b
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = b + an / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return front * h
    raise ArithmeticError(f"the incomplete gamma fraction did not converge (a = {a}, x = {x})")


def chi_square_sf(x: float, df: float) -> float:
    """P(X > x) for a chi-square X with `df` degrees of freedom."""
    if df <= 0 or math.isnan(x):
        raise ValueError(f"chi_square_sf needs df > 0 and a number x, got x = {x}, df = {df}")
    return _gamma_q(df / 2.0, x / 2.0) if x > 0 else 1.0


def chi_square_quantile(p: float, df: float) -> float:
    """The x with P(X <= x) = p, for 0 < p < 1: chi_square_quantile(1 - 1e-7, df) bounds a goodness-of-fit
    statistic that a correct solution exceeds once in ten million."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"chi_square_quantile needs 0 < p < 1, got {p}")
    upper = 1.0 - p
    lo, hi = 0.0, max(1.0, df)
    while chi_square_sf(hi, df) > upper:
        lo, hi = hi, 2.0 * hi
    return _bisect(lambda x: chi_square_sf(x, df) > upper, lo, hi)


# -- bands for counted rates ---------------------------------------------------------------------------

def binomial_band(n: int, p: float, error_rate: float = ERROR_RATE) -> tuple[int, int]:
    """The narrowest [lo, hi] with P(X < lo) <= error_rate / 2 and P(X > hi) <= error_rate / 2 for X ~ Binomial(n, p):
    a count of n independent events of probability p lands outside it at most `error_rate` of the time. Exact
    (the binomial's own terms, summed in float64 from each end)."""
    if not (n >= 1 and 0.0 < p < 1.0 and 0.0 < error_rate < 1.0):
        raise ValueError(f"binomial_band needs n >= 1, 0 < p < 1 and 0 < error_rate < 1, got n = {n}, p = {p}, error_rate = {error_rate}")
    log_p, log_q, log_n = math.log(p), math.log1p(-p), math.lgamma(n + 1)

    def pmf(k: int) -> float:
        return math.exp(log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q)

    half = error_rate / 2.0
    lo, below = 0, 0.0  # below: P(X < lo)
    while below + pmf(lo) <= half:
        below += pmf(lo)
        lo += 1
    hi, above = n, 0.0  # above: P(X > hi)
    while above + pmf(hi) <= half:
        above += pmf(hi)
        hi -= 1
    return lo, hi


def rate_text(count: int, n: int) -> str:
    return f"{count:,} of {n:,} ({100.0 * count / n:.3g}%)"


def expect_rate(count: int, n: int, p: float, *, what: str, scenario: str, error_rate: float = ERROR_RATE, hint: str = "", **details: Any) -> None:
    """Fail unless `count`, the number of n simulated runs in which an event of probability p happened (a false
    positive, a confidence interval that missed), lies in binomial_band(n, p, error_rate). The message says the
    count, the rate it should have and the band; details record `what` and the count as `got`, so that two runs
    of the same behaviour compare equal."""
    lo, hi = binomial_band(n, p, error_rate)
    if lo <= count <= hi:
        return
    side = "too many" if count > hi else "too few"
    fail(joined(f"{what} ({scenario}): {rate_text(count, n)}, {side}; expected about {100.0 * p:.3g}%, between {lo:,} and {hi:,}"
                f" of {n:,} (a Binomial({n:,}, {p:g}) count falls outside that band with probability below {error_rate:g}).", hint),
         what=what, got=count, expected=f"{lo}..{hi}", first_index="", band=[lo, hi], runs=n, rate=p, error_rate=error_rate, **details)
