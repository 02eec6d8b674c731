"""A/B tests on revenue and click-through. Fill in the three functions; run `mlprep grade ab-test` to grade them."""

import math

import numpy as np


def revenue_test(control, treatment, alpha=0.05):
    """Welch's t-test of mean revenue per user, treatment minus control, two-sided.

    control, treatment: 1-D NumPy arrays of revenue per user (floats or ints), at least 2 users each.
    Returns (diff, ci_low, ci_high, p_value) as floats. Raises ValueError when an arm has fewer than
    2 users, when alpha is not in (0, 1), or when both arms are constant."""
    raise NotImplementedError("revenue_test: each arm's own variance, Welch-Satterthwaite df, Student's t")


def ctr_test(clicks_c, views_c, clicks_t, views_t, alpha=0.05):
    """Difference in click-through rate, treatment minus control, users randomised; two-sided z-test.

    clicks_*, views_*: 1-D integer arrays, one entry per user of the arm. Each arm's CTR is
    sum(clicks) / sum(views), its variance by the delta method over users. Returns (diff, ci_low,
    ci_high, p_value) as floats. Raises ValueError when an arm's clicks and views differ in length,
    an arm has fewer than 2 users or no views, alpha is not in (0, 1), or the standard error is 0."""
    raise NotImplementedError("ctr_test: a ratio of sums per arm, its variance by the delta method over users")


def srm_p_value(n_c, n_t, ratio=0.5):
    """Sample ratio mismatch: the p-value of Pearson's chi-square goodness-of-fit test of the user
    counts (n_c, n_t) against the design, where ratio is the share of users meant for control.
    Raises ValueError for a negative count, n_c + n_t == 0, or ratio not in (0, 1)."""
    raise NotImplementedError("srm_p_value: chi-square goodness of fit, 1 degree of freedom")
