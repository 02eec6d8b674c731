"""Alternative for `cv-leakage`: scikit-learn's StratifiedKFold(k, shuffle=True, random_state=seed), as in the
source's pipeline snippet.

StratifiedKFold deals each class's rows over the folds evenly (floor or ceil of n_c / k per fold) after
shuffling them with its own RandomState(seed), never the global one. It only warns when a class has
fewer than k rows (and raises only when every class does), so that case is checked here first.
"""

import numpy as np
from sklearn.model_selection import StratifiedKFold


def cross_val_score(make_model, X, y, k, seed):
    X, y = np.asarray(X), np.asarray(y)
    if k < 2:
        raise ValueError(f"k = {k}: need at least 2 folds")
    if len(X) != len(y):
        raise ValueError("X and y differ in length")
    _, counts = np.unique(y, return_counts=True)
    if counts.min() < k:
        raise ValueError(f"the smallest class has {counts.min()} rows, fewer than k = {k}")
    scores = []
    for train, val in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(X, y):
        model = make_model()
        model.fit(X[train], y[train])
        scores.append(model.score(X[val], y[val]))
    return scores
