"""Alternative: XGBoost's sparsity-aware scan (Chen & Guestrin 2016, Algorithm 3).

Two passes over the sorted present rows: left to right with the missing rows on the right (G_L
accumulates), and right to left with them on the left (G_R accumulates). Thresholds are midpoints;
the result comes back as a list of NumPy scalars.
"""

import numpy as np


def best_split(x, g, h, lam, gamma):
    x = np.asarray(x, dtype=np.float64)
    missing = np.isnan(x)
    G, H = np.sum(g), np.sum(h)
    n = x.size
    n_present = n - int(missing.sum())
    idx = np.flatnonzero(~missing)[np.argsort(x[~missing])]
    xs = x[idx]

    def gain(GL, HL):
        GR, HR = G - GL, H - HL
        return np.float64(0.5) * (GL**2 / (HL + lam) + GR**2 / (HR + lam) - G**2 / (H + lam)) - gamma

    best = [None, np.False_, np.float64(-np.inf)]

    def consider(threshold, default_left, GL, HL, n_left):
        value = gain(GL, HL)
        if 0 < n_left < n and value > best[2]:
            best[:] = [np.float64(threshold), np.bool_(default_left), value]

    # Missing rows right: the left child grows from the smallest present value.
    GL = HL = 0.0
    for k, i in enumerate(idx):
        GL, HL = GL + g[i], HL + h[i]
        last = k == n_present - 1
        if last or xs[k + 1] > xs[k]:
            consider(np.inf if last else (xs[k] + xs[k + 1]) / 2, False, GL, HL, k + 1)
    # Missing rows left: the right child grows from the largest present value.
    GR = HR = 0.0
    for k in range(n_present - 1, -1, -1):
        GR, HR = GR + g[idx[k]], HR + h[idx[k]]
        first = k == 0
        if first or xs[k - 1] < xs[k]:
            consider(-np.inf if first else (xs[k - 1] + xs[k]) / 2, True, G - GR, H - HR, n - (n_present - k))
    return best
