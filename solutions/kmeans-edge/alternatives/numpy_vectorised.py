"""Alternative: NumPy inside. Distances by the expansion |p|^2 - 2 p.c + |c|^2 (as scikit-learn
computes them), argmin (first minimum on ties), means by np.add.at / counts, results converted back
to Python lists. Groups are built from the original point objects by index. Differs in everything
but the contract: vectorised, another formula for distances, another summation order."""

import numpy as np


def kmeans(points, init, max_iter=100, tol=1e-9):
    if max_iter < 1:
        raise ValueError("max_iter must be at least 1")
    if len(points) == 0 or len(init) == 0:
        raise ValueError("points and init must be non-empty")
    dim = len(points[0])
    if any(len(p) != dim for p in points) or any(len(c) != dim for c in init):
        raise ValueError("all points and initial centroids must have the same dimension")

    X = np.array(points, dtype=np.float64)  # copies: the inputs are never written
    C = np.array(init, dtype=np.float64)
    k = len(C)
    x_sq = (X * X).sum(axis=1)[:, None]
    for _ in range(max_iter):
        d = x_sq - 2.0 * X @ C.T + (C * C).sum(axis=1)[None, :]
        labels = d.argmin(axis=1)  # first minimum: lowest index on ties
        counts = np.bincount(labels, minlength=k)
        sums = np.zeros_like(C)
        np.add.at(sums, labels, X)
        new = C.copy()
        filled = counts > 0
        new[filled] = sums[filled] / counts[filled, None]
        shift = ((new - C) ** 2).sum(axis=1).max()
        C = new
        if shift <= tol:
            break
    groups = [[points[i] for i in np.flatnonzero(labels == j)] for j in range(k)]
    return C.tolist(), groups
