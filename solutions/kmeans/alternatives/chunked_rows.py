"""k-means over blocks of rows: distances for a block of rows at a time, means from sorted labels.

Another way to stay off the (N, k, D) array: exact differences for a block of 1024 rows at a time
(1024 x k x D numbers), the block's labels written into one vector. The seeding keeps each row's
squared distance to its nearest centre and samples by inverting its cumulative sum.
"""

import numpy as np

BLOCK = 1024


def kmeans(X, k, iters=100, seed=0):
    rng = np.random.default_rng(seed)
    N = len(X)
    centres = [X[rng.integers(N)]]
    d2 = np.einsum("ij,ij->i", X - centres[0], X - centres[0])
    while len(centres) < k:
        cumulative = np.cumsum(d2)
        if cumulative[-1] > 0:
            i = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
            i = min(i, N - 1)
        else:
            i = int(rng.integers(N))
        centres.append(X[i])
        diff = X - X[i]
        np.minimum(d2, np.einsum("ij,ij->i", diff, diff), out=d2)
    C = np.array(centres, dtype=np.float64)
    for _ in range(iters):
        labels = assign(X, C)
        order = np.argsort(labels, kind="stable")
        counts = np.bincount(labels, minlength=k)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        new = C.copy()
        for j in np.flatnonzero(counts):
            new[j] = X[order[starts[j]:starts[j] + counts[j]]].mean(axis=0)
        if np.allclose(new, C, rtol=0.0, atol=1e-12):
            C = new
            break
        C = new
    return C, assign(X, C)


def assign(X, C):
    labels = np.empty(len(X), dtype=np.int64)
    for s in range(0, len(X), BLOCK):
        block = X[s:s + BLOCK]
        labels[s:s + BLOCK] = ((block[:, None, :] - C[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
    return labels
