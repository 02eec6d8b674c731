"""Alternative: AdaBoost written with plain loops, stumps as dicts.

The weights are never renormalised: err is the misclassified weight divided by the total weight,
which is the same number. Thresholds are the data values themselves (rows with x <= threshold go
to the "low" side); a stump's error is computed directly for every candidate. A perfect stump is
handled by capping err at 1e-12, and training continues.
"""

import math

import numpy as np


def _predict(stump, X):
    low = np.asarray(X)[:, stump["feature"]] <= stump["threshold"]
    return np.where(low, stump["low"], -stump["low"])


def _best_stump(X, y, w):
    best, best_err = None, math.inf
    for j in range(X.shape[1]):
        for threshold in np.unique(X[:, j]):
            low = X[:, j] <= threshold
            for low_label in (-1.0, 1.0):
                pred = np.where(low, low_label, -low_label)
                err = w[pred != y].sum() / w.sum()
                if err < best_err:
                    best, best_err = {"feature": j, "threshold": float(threshold), "low": low_label}, err
    return best


def fit(X, y, rounds):
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.ones(len(y))
    stumps, alphas = [], []
    for _ in range(rounds):
        stump = _best_stump(X, y, w)
        pred = _predict(stump, X)
        err = w[pred != y].sum() / w.sum()
        if err >= 0.5:
            break
        err = max(err, 1e-12)
        alpha = 0.5 * math.log((1 - err) / err)
        w = w * np.exp(-alpha * y * pred)
        stumps.append(stump)
        alphas.append(alpha)
    return tuple(stumps), alphas


def margins(X, y, stumps, alphas):
    total = np.zeros(len(X))
    for stump, alpha in zip(stumps, alphas):
        total = total + alpha * _predict(stump, X)
    return np.asarray(y) * total
