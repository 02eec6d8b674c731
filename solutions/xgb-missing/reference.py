"""Reference for `xgb-missing`: XGBoost's exact split search on one feature with missing values.

The present values are sorted once; prefix sums of g and h over them give, for every threshold
between two distinct values (and for the two thresholds that put every present row on one side),
the gradient and hessian sums of the present rows on the left. The missing rows are then sent left
and right in turn (XGBoost's learned default direction), so every candidate costs O(1) and the whole
search O(n log n).
"""

import numpy as np

NO_SPLIT = (None, False, -np.inf)


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
    x = np.asarray(x, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    missing = np.isnan(x)
    n, n_missing = x.size, int(missing.sum())
    # The totals include the missing rows: wherever they go, they are in one of the two children.
    G, H = g.sum(), h.sum()
    G_missing, H_missing = g[missing].sum(), h[missing].sum()

    present = ~missing
    order = np.argsort(x[present], kind="stable")
    xs, gs, hs = x[present][order], g[present][order], h[present][order]
    # Rows with equal x always go to the same side: cut only where the value changes.
    values, starts = np.unique(xs, return_index=True)
    cut = np.append(starts, xs.size)  # present rows left of each threshold
    thresholds = np.append(values, np.inf)  # x < values[j] keeps values[:j] left; inf keeps them all
    GL_present = np.concatenate([[0.0], np.cumsum(gs)])[cut]
    HL_present = np.concatenate([[0.0], np.cumsum(hs)])[cut]

    def score(G_side, H_side):
        return G_side**2 / (H_side + lam)

    best = NO_SPLIT
    for default_left in (False, True):
        GL = GL_present + (G_missing if default_left else 0.0)
        HL = HL_present + (H_missing if default_left else 0.0)
        n_left = cut + (n_missing if default_left else 0)
        valid = (n_left > 0) & (n_left < n)  # both children non-empty
        if not valid.any():
            continue
        gain = np.full(cut.size, -np.inf)
        GL, HL = GL[valid], HL[valid]  # an empty child may have H + lam = 0: never computed
        gain[valid] = 0.5 * (score(GL, HL) + score(G - GL, H - HL) - score(G, H)) - gamma
        j = int(np.argmax(gain))
        if gain[j] > best[2]:
            best = (float(thresholds[j]), default_left, float(gain[j]))
    return best
