"""XGBoost split finding with a learned default direction for missing values. Fill in `best_split`; run
`mlprep grade xgb-missing` to grade it."""

import numpy as np


def best_split(x, g, h, lam, gamma):
    """The best split of one feature for a gradient-boosted tree, with missing values (NaN).

    x, g, h: 1-D float arrays of equal length n >= 1 (x may hold NaN; h > 0); lam >= 0, gamma >= 0.
    Present rows with x < threshold go left, the others right; missing rows go left if default_left
    else right. Returns (threshold, default_left, gain) of the candidate with the largest
    gain = 0.5 * [G_L^2/(H_L + lam) + G_R^2/(H_R + lam) - G^2/(H + lam)] - gamma, over every
    threshold between distinct present values and both default directions, plus the candidates
    that put all present rows on one side and the missing rows alone on the other. The best is
    returned whatever its sign; (None, False, -inf) when no split exists (both children must be
    non-empty). Leaves its inputs unchanged."""
    raise NotImplementedError("best_split: sort the present values, keep prefix sums of g and h, try the missing rows on both sides")
