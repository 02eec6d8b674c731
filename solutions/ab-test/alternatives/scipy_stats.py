"""SciPy's own tests: ttest_ind(equal_var=False) and its confidence_interval for revenue, the normal for the
delta method's z-test, chisquare for the sample-ratio check. The ValueErrors SciPy does not raise are raised first."""

import numpy as np
from scipy import stats


def _alpha_ok(alpha):
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def revenue_test(control, treatment, alpha=0.05):
    control, treatment = np.asarray(control, dtype=float), np.asarray(treatment, dtype=float)
    if control.size < 2 or treatment.size < 2:
        raise ValueError("each arm needs at least 2 users")
    _alpha_ok(alpha)
    if np.ptp(control) == 0 and np.ptp(treatment) == 0:
        raise ValueError("both arms are constant")
    result = stats.ttest_ind(treatment, control, equal_var=False)
    interval = result.confidence_interval(confidence_level=1 - alpha)
    return float(treatment.mean() - control.mean()), float(interval.low), float(interval.high), float(result.pvalue)


def _delta_method(clicks, views):
    x, y = np.asarray(clicks, dtype=float), np.asarray(views, dtype=float)
    if x.shape != y.shape:
        raise ValueError("clicks and views differ in length")
    if x.size < 2:
        raise ValueError("an arm needs at least 2 users")
    if y.sum() == 0:
        raise ValueError("an arm has no views")
    ratio = x.sum() / y.sum()
    cov = np.cov(x, y, ddof=1)
    var = (cov[0, 0] - 2 * ratio * cov[0, 1] + ratio ** 2 * cov[1, 1]) / (x.size * y.mean() ** 2)
    return ratio, max(var, 0.0)


def ctr_test(clicks_c, views_c, clicks_t, views_t, alpha=0.05):
    r_c, var_c = _delta_method(clicks_c, views_c)
    r_t, var_t = _delta_method(clicks_t, views_t)
    _alpha_ok(alpha)
    se = np.sqrt(var_c + var_t)
    if se == 0:
        raise ValueError("the standard error is 0")
    diff = r_t - r_c
    z = stats.norm.isf(alpha / 2)
    return float(diff), float(diff - z * se), float(diff + z * se), float(2 * stats.norm.sf(abs(diff) / se))


def srm_p_value(n_c, n_t, ratio=0.5):
    if n_c < 0 or n_t < 0 or n_c + n_t == 0 or not 0 < ratio < 1:
        raise ValueError("counts must be >= 0 with a positive total, and ratio in (0, 1)")
    total = n_c + n_t
    return float(stats.chisquare([n_c, n_t], [total * ratio, total * (1 - ratio)]).pvalue)
