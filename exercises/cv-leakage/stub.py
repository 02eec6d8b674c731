"""Leak-free cross-validation. Fill in `cross_val_score`; run `mlprep grade cv-leakage` to grade it."""

import numpy as np


def cross_val_score(make_model, X, y, k, seed):
    """Stratified k-fold cross-validation, shuffled with seed. X: (N, D) array, y: (N,) class labels.

    make_model() returns a fresh, unfitted model (a pipeline that fits its own preprocessing) with
    fit(X, y) -> self and score(X, y) -> float. For fold i: model = make_model(), fitted once on the raw
    rows of the other k - 1 folds (X[train], y[train], no preprocessing of X outside the model) and
    scored once on fold i's rows; the i-th model made belongs to fold i. Every fold holds floor or ceil
    of n_c / k rows of every class c. The folds depend on y, k and seed only (shuffle with
    np.random.default_rng(seed); never touch the global random state). Returns the k scores in fold
    order (a list or a 1-D array). Raises ValueError when k < 2 or a class has fewer than k rows."""
    raise NotImplementedError("cross_val_score: deal each class's shuffled rows over k folds, then fit a fresh model per fold")
