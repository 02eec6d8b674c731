"""Closed forms in NumPy, no SciPy and no resampling: the moments from sums and sums of squares, the delta
method in its three-term form (Var(x) - 2 R Cov(x, y) + R^2 Var(y)), Student's t through the power series of
the incomplete beta function and its quantile by Newton's method on the tail, and the sample-ratio check as the
equivalent two-sided z-test of a proportion."""

import math
from statistics import NormalDist

import numpy as np


def _alpha_ok(alpha):
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def _mean_var(values):
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n < 2:
        raise ValueError("each arm needs at least 2 users")
    mean = x.sum() / n
    var = 0.0 if np.ptp(x) == 0 else (np.dot(x, x) - n * mean * mean) / (n - 1)
    return n, mean, var


def _betainc_series(a, b, x, y):
    """I_x(a, b) = x^a y^b / (a B(a, b)) * sum_k (a + b)_k / (a + 1)_k x^k, for x below the mode (where it converges fast)."""
    front = math.exp(a * math.log(x) + b * math.log(y) - math.log(a) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    chunk = int(min(max(64.0, -40.0 / math.log(x)), 1e6))  # about the number of terms until x^k < 1e-17
    total, term, k = 0.0, 1.0, 0
    while True:
        ks = np.arange(k, k + chunk, dtype=np.float64)
        terms = term * np.cumprod(np.concatenate(([1.0], (a + b + ks[:-1]) / (a + 1.0 + ks[:-1]) * x)))
        total += terms.sum()
        term = terms[-1] * (a + b + ks[-1]) / (a + 1.0 + ks[-1]) * x
        k += chunk
        if term < 1e-17 * total:
            return front * total


def _t_sf(t, df):
    """P(T > t), t >= 0: half of I_x(df/2, 1/2) at x = df / (df + t^2)."""
    x, y = df / (df + t * t), t * t / (df + t * t)
    a, b = df / 2.0, 0.5
    if y == 0.0:
        return 0.5
    if x < (a + 1.0) / (a + b + 2.0):
        return 0.5 * _betainc_series(a, b, x, y)
    return 0.5 * (1.0 - _betainc_series(b, a, y, x))


def _t_pdf(t, df):
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))


def _t_isf(tail, df):
    """The t with P(T > t) = tail (0 < tail < 1/2): Newton on the tail from the normal's quantile, inside a bracket."""
    lo, hi = 0.0, math.inf
    t = NormalDist().inv_cdf(1.0 - tail)  # the t quantile is larger: Newton from below
    for _ in range(500):
        gap = _t_sf(t, df) - tail
        if gap > 0:
            lo = t
        else:
            hi = t
        new = t + gap / _t_pdf(t, df)
        if not lo <= new <= hi:
            new = 0.5 * (lo + hi) if hi < math.inf else 2.0 * lo
        if abs(new - t) <= 1e-13 * t:
            return new
        t = new
    return t


def revenue_test(control, treatment, alpha=0.05):
    n_c, mean_c, var_c = _mean_var(control)
    n_t, mean_t, var_t = _mean_var(treatment)
    _alpha_ok(alpha)
    a, b = var_c / n_c, var_t / n_t
    if a + b == 0:
        raise ValueError("both arms are constant: the standard error is 0")
    se = math.sqrt(a + b)
    df = (a + b) ** 2 / (a ** 2 / (n_c - 1) + b ** 2 / (n_t - 1))
    diff = mean_t - mean_c
    q = _t_isf(alpha / 2.0, df)
    return float(diff), float(diff - q * se), float(diff + q * se), float(2.0 * _t_sf(abs(diff) / se, df))


def _ctr_arm(clicks, views):
    x, y = np.asarray(clicks, dtype=np.float64), np.asarray(views, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError("an arm's clicks and views differ in length")
    n = x.size
    if n < 2:
        raise ValueError("an arm needs at least 2 users")
    sx, sy = x.sum(), y.sum()
    if sy == 0:
        raise ValueError("an arm has no views")
    r, mx, my = sx / sy, sx / n, sy / n
    var_x = (np.dot(x, x) - n * mx * mx) / (n - 1)
    var_y = (np.dot(y, y) - n * my * my) / (n - 1)
    cov = (np.dot(x, y) - n * mx * my) / (n - 1)
    return r, max(var_x - 2.0 * r * cov + r * r * var_y, 0.0) / (n * my * my)


def ctr_test(clicks_c, views_c, clicks_t, views_t, alpha=0.05):
    r_c, v_c = _ctr_arm(clicks_c, views_c)
    r_t, v_t = _ctr_arm(clicks_t, views_t)
    _alpha_ok(alpha)
    if v_c + v_t == 0:
        raise ValueError("the standard error is 0")
    se = math.sqrt(v_c + v_t)
    diff = r_t - r_c
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    return float(diff), float(diff - z * se), float(diff + z * se), math.erfc(abs(diff) / se / math.sqrt(2.0))


def srm_p_value(n_c, n_t, ratio=0.5):
    if min(n_c, n_t) < 0 or n_c + n_t == 0 or not 0 < ratio < 1:
        raise ValueError("counts must be >= 0 with a positive total, and ratio in (0, 1)")
    n = n_c + n_t
    z = (n_c - n * ratio) / math.sqrt(n * ratio * (1.0 - ratio))  # z^2 is Pearson's chi-square with 1 df
    return math.erfc(abs(z) / math.sqrt(2.0))
