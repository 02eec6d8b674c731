"""Reference for `kmeans`: Lloyd's algorithm from a k-means++ start, in NumPy.

k-means++ picks the first centre uniformly at random and every next one with probability
proportional to D(x)^2, the squared distance from x to its nearest centre so far; once every row
coincides with a centre (fewer distinct rows than k), the remaining centres are drawn uniformly.
Distances use ||c||^2 - 2 x.c (the ||x||^2 term does not change which centroid is nearest), so the
largest temporary is an (N, k) matrix, never an (N, k, D) array of differences. An empty cluster
keeps its centroid. All randomness comes from np.random.default_rng(seed).
"""

import numpy as np


def kmeans(X, k, iters=100, seed=0):
    """k-means on the rows of X (N, D) float64 with k-means++ initialisation and at most `iters`
    Lloyd iterations (assign every row to its nearest centroid, move every centroid to the mean
    of its rows; an empty cluster keeps its centroid). Returns (C, labels): C (k, D) float64,
    labels (N,) int64 with labels[i] the index of a nearest row of the returned C (the rows are
    reassigned after the last update). All randomness comes from np.random.default_rng(seed):
    the same seed gives the same result whatever the global NumPy RNG state. Works with fewer
    distinct rows than k. 1 <= k <= N. X is left unchanged."""
    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(seed)
    C = plus_plus(X, k, rng)
    for _ in range(iters):
        new = centroid_means(X, nearest(X, C), C)
        if np.array_equal(new, C):  # a fixed point: further iterations change nothing
            break
        C = new
    return C, nearest(X, C)


def plus_plus(X, k, rng):
    """k initial centres chosen among the rows of X by k-means++ (D^2 sampling)."""
    N = len(X)
    x_sq = np.einsum("ij,ij->i", X, X)
    C = np.empty((k, X.shape[1]))
    C[0] = X[rng.integers(N)]
    d2 = sq_dist_to(X, x_sq, C[0])
    for j in range(1, k):
        total = d2.sum()
        # Every row already sits on a centre: D^2 is 0 everywhere, so any row will do.
        i = rng.choice(N, p=d2 / total) if total > 0 else rng.integers(N)
        C[j] = X[i]
        np.minimum(d2, sq_dist_to(X, x_sq, C[j]), out=d2)
    return C


def sq_dist_to(X, x_sq, c):
    """Squared distances from every row of X to c, as ||x||^2 - 2 x.c + ||c||^2 (one matrix-vector
    product instead of an (N, D) array of differences), clipped at 0 against rounding."""
    d2 = X @ c
    d2 *= -2.0
    d2 += x_sq
    d2 += c @ c
    return np.maximum(d2, 0.0, out=d2)


def nearest(X, C):
    """Index of a nearest centroid for every row of X: argmin over ||c||^2 - 2 x.c, an (N, k) matrix."""
    d = X @ C.T
    d *= -2.0
    d += (C * C).sum(axis=1)
    return d.argmin(axis=1)


def centroid_means(X, labels, C):
    """The mean of each cluster's rows; an empty cluster keeps its centroid from C."""
    k, D = C.shape
    counts = np.bincount(labels, minlength=k)
    sums = np.stack([np.bincount(labels, weights=X[:, j], minlength=k) for j in range(D)], axis=1)
    new = C.copy()
    filled = counts > 0
    new[filled] = sums[filled] / counts[filled, None]
    return new
