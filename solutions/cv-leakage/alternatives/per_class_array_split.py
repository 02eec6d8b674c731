"""Alternative for `cv-leakage`: per-class shuffles split with np.array_split, folds as index lists.

Each class's row indices are shuffled with a Generator seeded by seed and cut into k nearly equal parts
(np.array_split: sizes floor or ceil of n_c / k, the larger ones first); fold i is the union of part i of
every class. The parts are rotated per class, so that the larger parts do not all land in the first folds.
"""

import numpy as np


def cross_val_score(make_model, X, y, k, seed):
    X = np.asarray(X)
    y = np.asarray(y)
    if k < 2:
        raise ValueError("k must be >= 2")
    if X.shape[0] != y.shape[0]:
        raise ValueError("X and y must have the same number of rows")
    rng = np.random.default_rng(seed)
    folds = [[] for _ in range(k)]
    for shift, c in enumerate(np.unique(y)):
        rows = np.flatnonzero(y == c)
        if len(rows) < k:
            raise ValueError(f"class {c!r} has only {len(rows)} rows; need at least k = {k}")
        for i, part in enumerate(np.array_split(rng.permutation(rows), k)):
            folds[(i + shift) % k].extend(part.tolist())
    everything = np.arange(len(y))
    scores = []
    for val in folds:
        val = np.sort(np.array(val, dtype=np.int64))
        train = np.setdiff1d(everything, val)
        model = make_model().fit(X[train], y[train])
        scores.append(model.score(X[val], y[val]))
    return np.array(scores, dtype=np.float64)
