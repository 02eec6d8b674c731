"""Reference for `cv-leakage`: stratified, shuffled k-fold cross-validation that never leaks.

The folds are dealt like cards: one permutation of the rows drawn from np.random.default_rng(seed),
stable-sorted by class (so each class's rows stay in random order and sit together), then row number
r of that sequence goes to fold r % k. Each class occupies a run of consecutive positions, so every fold
gets floor or ceil of n_c / k of its rows (and the folds' sizes differ by at most one). The folds depend
on y, k and seed only; the global RNGs are never touched.

Preprocessing is the model's business: make_model() builds a fresh pipeline per fold, which is fitted on
that fold's raw training rows alone and scored on its validation rows, so no statistic of a validation
row reaches the fit.
"""

import numpy as np


def cross_val_score(make_model, X, y, k, seed):
    """Scores of k-fold cross-validation, stratified and shuffled with seed: for fold i, a fresh
    make_model() is fitted on the other folds' rows and scored on fold i's. Returns the k scores in
    fold order. Raises ValueError when k < 2, len(X) != len(y), or a class has fewer than k rows."""
    X, y = np.asarray(X), np.asarray(y)
    if k < 2:
        raise ValueError(f"k must be at least 2, got {k}")
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    if counts.min() < k:
        raise ValueError(f"class {classes[counts.argmin()]!r} has {counts.min()} rows, fewer than k = {k}: some fold would hold none")

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    order = order[np.argsort(codes[order], kind="stable")]  # grouped by class, shuffled within each class
    fold = np.empty(len(y), dtype=np.int64)
    fold[order] = np.arange(len(y)) % k  # dealt round-robin: each class spread evenly over the folds

    scores = []
    for i in range(k):
        train, val = np.flatnonzero(fold != i), np.flatnonzero(fold == i)
        model = make_model()
        model.fit(X[train], y[train])
        scores.append(float(model.score(X[val], y[val])))
    return scores
