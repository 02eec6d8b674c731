"""Reference for `adaboost`: discrete AdaBoost with decision stumps, labels -1/+1.

Each round fits the stump of least weighted error under the current weights (every feature, every
threshold between two distinct values, both signs, all at once from cumulative sums over the sorted
column), gives it alpha = 0.5 ln((1 - err) / err), and reweights w_i *= exp(-alpha y_i h(x_i)),
renormalised to sum to 1, so that err is always a weighted fraction. A stump of error 0 gets a
finite alpha and ends training; a best stump no better than chance (err >= 0.5) ends it before it
is added.
"""

import numpy as np

# alpha of a perfect stump: 0.5 ln((1 - err) / err) at err = 1e-10, instead of an infinite weight.
PERFECT_ALPHA = 0.5 * np.log((1 - 1e-10) / 1e-10)


def fit(X, y, rounds):
    """Discrete AdaBoost with decision stumps. X: (n, d) float array; y: (n,) labels -1/+1;
    rounds >= 1. Returns (stumps, alphas): two sequences of equal length between 1 and rounds,
    every alpha finite and > 0. Round t fits a stump to the weights w_i proportional to
    exp(-margin_i) of the stumps so far (renormalised to sum to 1), and gives it
    alpha_t = 0.5 ln((1 - err_t) / err_t), err_t its weighted error. A perfect stump (err_t = 0)
    gets a finite alpha and ends training (or its err is capped); it never divides by zero."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.full(len(y), 1.0 / len(y))
    stumps, alphas = [], []
    for _ in range(rounds):
        stump = best_stump(X, y, w)
        pred = stump_predict(stump, X)
        err = w[pred != y].sum()  # w sums to 1: a weighted fraction, exactly 0 when nothing is missed
        if err == 0:
            stumps.append(stump)
            alphas.append(PERFECT_ALPHA)
            break  # every row is right and stays right: nothing left to correct
        if err >= 0.5 and stumps:
            break  # no stump beats chance under these weights
        alpha = 0.5 * np.log((1 - err) / err)
        w = w * np.exp(-alpha * y * pred)
        w /= w.sum()
        stumps.append(stump)
        alphas.append(alpha)
    return stumps, np.array(alphas)


def margins(X, y, stumps, alphas):
    """(n,) float64 y * sum_t alpha_t h_t(x), unnormalised, for any X (training rows or new ones) and
    any slice of stumps with the matching alphas; h_t(x) is -1 or +1."""
    X = np.asarray(X, dtype=np.float64)
    score = np.zeros(len(X))
    for stump, alpha in zip(stumps, alphas):
        score += alpha * stump_predict(stump, X)
    return np.asarray(y, dtype=np.float64) * score


def stump_predict(stump, X):
    """+sign where X[:, feature] > threshold, -sign elsewhere."""
    feature, threshold, sign = stump
    return np.where(X[:, feature] > threshold, sign, -sign)


def best_stump(X, y, w):
    """(feature, threshold, sign) of least weighted error. Along each sorted column, a threshold after
    the first k rows misclassifies (for sign +1) the positives among them and the negatives after
    them; the error of sign -1 is the rest of the weight."""
    best, best_err = None, np.inf
    total = w.sum()
    for j in range(X.shape[1]):
        order = np.argsort(X[:, j], kind="stable")
        xs, ws, ys = X[order, j], w[order], y[order]
        pos_left = np.concatenate([[0.0], np.cumsum(ws * (ys > 0))])  # weight of positives among the first k rows
        neg_left = np.concatenate([[0.0], np.cumsum(ws * (ys < 0))])
        err_plus = pos_left + (neg_left[-1] - neg_left)
        # Thresholds only where the value changes (k = 0 and k = n are the constant stumps).
        k = np.flatnonzero(np.concatenate([[True], xs[1:] > xs[:-1], [True]]))
        for sign, errs in ((1.0, err_plus[k]), (-1.0, total - err_plus[k])):
            i = int(np.argmin(errs))
            if errs[i] < best_err:
                cut = k[i]
                threshold = -np.inf if cut == 0 else np.inf if cut == len(xs) else (xs[cut - 1] + xs[cut]) / 2
                best, best_err = (j, threshold, sign), errs[i]
    return best
