"""Plain Python loops over the users (two passes: the means, then the squared deviations), the distributions
from scipy.special (stdtr and stdtrit for Student's t, ndtri for the normal, chdtrc for the chi-square)."""

import math

from scipy import special


def _check_alpha(alpha):
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")


def _mean_and_variance(values):
    values = [float(v) for v in values]
    n = len(values)
    if n < 2:
        raise ValueError("an arm needs at least 2 users")
    total = 0.0
    for v in values:
        total += v
    mean = total / n
    squares = 0.0
    for v in values:
        squares += (v - mean) ** 2
    return n, mean, squares / (n - 1)


def revenue_test(control, treatment, alpha=0.05):
    n_c, mean_c, var_c = _mean_and_variance(control)
    n_t, mean_t, var_t = _mean_and_variance(treatment)
    _check_alpha(alpha)
    se2 = var_c / n_c + var_t / n_t
    if se2 == 0:
        raise ValueError("both arms are constant")
    se = math.sqrt(se2)
    df = se2 ** 2 / ((var_c / n_c) ** 2 / (n_c - 1) + (var_t / n_t) ** 2 / (n_t - 1))
    diff = mean_t - mean_c
    p_value = 2.0 * float(special.stdtr(df, -abs(diff) / se))
    q = float(special.stdtrit(df, 1.0 - alpha / 2.0))
    return diff, diff - q * se, diff + q * se, p_value


def _arm(clicks, views):
    clicks, views = [float(c) for c in clicks], [float(v) for v in views]
    if len(clicks) != len(views):
        raise ValueError("clicks and views differ in length")
    n = len(clicks)
    if n < 2:
        raise ValueError("an arm needs at least 2 users")
    total_clicks = total_views = 0.0
    for c, v in zip(clicks, views):
        total_clicks += c
        total_views += v
    if total_views == 0:
        raise ValueError("an arm has no views")
    ratio = total_clicks / total_views
    linearised = 0.0
    for c, v in zip(clicks, views):
        linearised += (c - ratio * v) ** 2
    mean_views = total_views / n
    return ratio, linearised / (n - 1) / (n * mean_views ** 2)


def ctr_test(clicks_c, views_c, clicks_t, views_t, alpha=0.05):
    r_c, var_c = _arm(clicks_c, views_c)
    r_t, var_t = _arm(clicks_t, views_t)
    _check_alpha(alpha)
    if var_c + var_t == 0:
        raise ValueError("the standard error is 0")
    se = math.sqrt(var_c + var_t)
    diff = r_t - r_c
    z = float(special.ndtri(1.0 - alpha / 2.0))
    return diff, diff - z * se, diff + z * se, math.erfc(abs(diff) / se / math.sqrt(2.0))


def srm_p_value(n_c, n_t, ratio=0.5):
    if n_c < 0 or n_t < 0:
        raise ValueError("negative count")
    if not 0 < ratio < 1:
        raise ValueError("ratio must be in (0, 1)")
    total = n_c + n_t
    if total == 0:
        raise ValueError("no users")
    statistic = 0.0
    for observed, share in ((n_c, ratio), (n_t, 1.0 - ratio)):
        expected = total * share
        statistic += (observed - expected) ** 2 / expected
    return float(special.chdtrc(1, statistic))
