"""Reference for ab-test: Welch's t-test on revenue per user, a delta-method z-test on click-through (a ratio
of sums over users, who were randomised), and the sample-ratio-mismatch check (chi-square, 1 df).

No SciPy: Student's t comes from the regularized incomplete beta function (its continued fraction), and its
quantile from a safeguarded Newton iteration on the upper tail."""

import math
from statistics import NormalDist

import numpy as np


def revenue_test(control, treatment, alpha=0.05):
    """Welch's two-sample t-test of mean revenue per user, treatment minus control, two-sided.

    Returns (diff, ci_low, ci_high, p_value): diff = mean(treatment) - mean(control), the (1 - alpha)
    confidence interval diff -/+ t_{1 - alpha/2, df} * se, and the two-sided p-value, with
    se = sqrt(s_c^2 / n_c + s_t^2 / n_t) (sample variances, ddof = 1) and df by Welch-Satterthwaite.
    Raises ValueError when an arm has fewer than 2 users, when alpha is not in (0, 1), or when both arms
    are constant (se = 0)."""
    c = _sample(control, "control")
    t = _sample(treatment, "treatment")
    _check_alpha(alpha)
    n_c, n_t = len(c), len(t)
    v_c = c.var(ddof=1) / n_c
    v_t = t.var(ddof=1) / n_t
    se = math.sqrt(v_c + v_t)
    if se == 0:
        raise ValueError("revenue_test: both arms are constant, so the standard error is 0 and the test is undefined")
    df = (v_c + v_t) ** 2 / (v_c ** 2 / (n_c - 1) + v_t ** 2 / (n_t - 1))
    diff = float(t.mean() - c.mean())
    p_value = 2.0 * _t_sf(abs(diff) / se, df)
    half_width = _t_upper_quantile(alpha / 2, df) * se
    return diff, diff - half_width, diff + half_width, p_value


def ctr_test(clicks_c, views_c, clicks_t, views_t, alpha=0.05):
    """Difference in click-through rate, treatment minus control, where each arm's CTR is the ratio of sums
    sum(clicks) / sum(views) over its users, and its variance comes from the delta method over users (the
    unit of randomisation), not over impressions. Two-sided z-test.

    Returns (diff, ci_low, ci_high, p_value). Raises ValueError when an arm's clicks and views differ in
    length, when an arm has fewer than 2 users or no views, when alpha is not in (0, 1), or when the
    standard error is 0."""
    r_c, var_c = _ratio_of_sums(clicks_c, views_c, "control")
    r_t, var_t = _ratio_of_sums(clicks_t, views_t, "treatment")
    _check_alpha(alpha)
    se = math.sqrt(var_c + var_t)
    if se == 0:
        raise ValueError("ctr_test: the standard error is 0 (every user's clicks are exactly CTR times views), so the test is undefined")
    diff = r_t - r_c
    p_value = math.erfc(abs(diff) / se / math.sqrt(2.0))
    half_width = NormalDist().inv_cdf(1.0 - alpha / 2) * se
    return diff, diff - half_width, diff + half_width, p_value


def srm_p_value(n_c, n_t, ratio=0.5):
    """Sample ratio mismatch: the p-value of Pearson's chi-square goodness-of-fit test (1 degree of freedom,
    no continuity correction) of the counts (n_c, n_t) against the design's split, where `ratio` is the share
    of users meant for control. Raises ValueError for negative counts, no users at all, or ratio not in (0, 1)."""
    for name, n in (("n_c", n_c), ("n_t", n_t)):
        if n < 0:
            raise ValueError(f"srm_p_value: {name} = {n} is negative")
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"srm_p_value: ratio = {ratio} must be in (0, 1)")
    total = n_c + n_t
    if total == 0:
        raise ValueError("srm_p_value: no users in either arm")
    expected_c = total * ratio
    expected_t = total * (1.0 - ratio)
    chi2 = (n_c - expected_c) ** 2 / expected_c + (n_t - expected_t) ** 2 / expected_t
    return math.erfc(math.sqrt(chi2 / 2.0))  # P(chi-square with 1 df > chi2) = P(|Z| > sqrt(chi2))


# -- the pieces --------------------------------------------------------------------------------------

def _sample(values, arm):
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or len(x) < 2:
        raise ValueError(f"revenue_test: the {arm} arm needs a 1-D array of at least 2 users, got shape {x.shape}")
    return x


def _check_alpha(alpha):
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha = {alpha} must be in (0, 1)")


def _ratio_of_sums(clicks, views, arm):
    """(CTR, its delta-method variance) of one arm: R = sum(x) / sum(y) over its n users, and
    Var(R) ~ Var(x - R y) / (n * mean(y)^2), with Var over users (ddof = 1); users without views count."""
    x = np.asarray(clicks, dtype=np.float64)
    y = np.asarray(views, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"ctr_test: the {arm} arm's clicks and views must be 1-D arrays of one length, got shapes {x.shape} and {y.shape}")
    n = len(x)
    if n < 2:
        raise ValueError(f"ctr_test: the {arm} arm needs at least 2 users, got {n}")
    total_views = y.sum()
    if total_views <= 0:
        raise ValueError(f"ctr_test: the {arm} arm has no views")
    r = x.sum() / total_views
    s2 = np.sum((x - r * y) ** 2) / (n - 1)  # the sample variance of the linearised metric x - R y, whose mean is 0
    mean_views = total_views / n
    return float(r), float(s2 / (n * mean_views ** 2))


def _t_sf(t, df):
    """P(T > t) for t >= 0: half the regularized incomplete beta I_x(df/2, 1/2) at x = df / (df + t^2)."""
    return 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t), t * t / (df + t * t))


def _t_pdf(t, df):
    return math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi) - (df + 1) / 2 * math.log1p(t * t / df))


def _t_upper_quantile(tail, df):
    """The t >= 0 with P(T > t) = tail, for 0 < tail < 1/2: Newton on log P(T > t), kept inside a bracket."""
    target = math.log(tail)
    z = NormalDist().inv_cdf(1.0 - tail)
    # The Cornish-Fisher expansion in 1/df (Abramowitz & Stegun 26.7.5): exact to rounding for large df, a start for small.
    t = z + ((z ** 3 + z) / 4 + ((5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96 + ((3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
             + (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160 / df) / df) / df) / df
    lo, hi = 0.0, math.inf
    for _ in range(200):
        sf = _t_sf(t, df)
        if sf > tail:
            lo = t
        else:
            hi = t
        step = (math.log(sf) - target) * sf / _t_pdf(t, df)
        if abs(step) <= 1e-12 * t:  # quadratic convergence: the next step would not move it
            return t + step
        t += step
        if not lo < t < hi:  # overshot the bracket: bisect instead
            t = 0.5 * (lo + hi) if hi < math.inf else 2.0 * lo + 1.0
    return t


def _betainc(a, b, x, y):
    """I_x(a, b) with y = 1 - x given separately (it may be tiny): the continued fraction on whichever side converges."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, y) / b


def _beta_cf(a, b, x):
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for coefficient in (even, odd):
            d = 1.0 + coefficient * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + coefficient / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h
