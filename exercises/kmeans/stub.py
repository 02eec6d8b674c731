"""k-means with k-means++ initialisation, in NumPy. Fill in `kmeans`; run `mlprep grade kmeans` to grade it."""

import numpy as np


def kmeans(X, k, iters=100, seed=0):
    """k-means on the rows of X (N, D) float64 with k-means++ initialisation and at most `iters`
    Lloyd iterations (assign every row to its nearest centroid, move every centroid to the mean
    of its rows; an empty cluster keeps its centroid). Returns (C, labels): C (k, D) float64,
    labels (N,) int64 with labels[i] the index of a nearest row of the returned C (the rows are
    reassigned after the last update). All randomness comes from np.random.default_rng(seed):
    the same seed gives the same result whatever the global NumPy RNG state. Works with fewer
    distinct rows than k. 1 <= k <= N. X is left unchanged."""
    raise NotImplementedError("kmeans: seed the centres by k-means++, then alternate assignment and update steps")
