"""Alternative for `knn`: argsort-based selection, queries outermost, fixed-width chunks of X.

How it differs from the reference: the loops are swapped (each batch of queries walks over all of X,
so X chunks are converted again for every batch); X is cut into chunks of 2048 rows (fewer only on
a tiny budget) and the budget sets the query batch; each block is fully sorted with argsort
(O(c log c) per row instead of argpartition's O(c)), and the running top-k list is kept sorted at
every merge, so no final sort is needed. The centre is accumulated chunk by chunk with explicit sums."""

import numpy as np

X_CHUNK = 2048


def knn(X, Q, k, max_bytes=64 * 2**20):
    X, Q = np.asarray(X), np.asarray(Q)
    if X.ndim != 2 or Q.ndim != 2 or X.shape[0] == 0 or Q.shape[0] == 0:
        raise ValueError("X and Q must be non-empty 2-D arrays")
    if X.shape[1] != Q.shape[1]:
        raise ValueError("X and Q have different numbers of columns")
    if k < 1:
        raise ValueError("k must be >= 1")
    n, dim = X.shape
    m = Q.shape[0]
    k = min(k, n)
    dtype = np.float32 if (X.dtype == np.float32 and Q.dtype == np.float32) else np.float64
    size = np.dtype(dtype).itemsize

    # Chunks are 2048 rows unless their converted copies would take more than a quarter of the budget.
    width = int(min(n, X_CHUNK, max(1, max_bytes // 4 // (3 * dim * size))))
    # Per query row: a block of distances, argsort's indices, and the sorted copies; plus the chunk.
    per_query = width * (2 * size + 2 * 8) + 4 * k * (size + 8) + dim * size
    total = np.zeros(dim)
    for s in range(0, n, width):
        total += X[s:s + width].sum(axis=0, dtype=np.float64)
    mean = (total / n).astype(dtype)

    room = max_bytes // 2 - width * (dim + 1) * size - m * k * 8
    rows = int(max(1, min(m, room // per_query)))

    out = np.empty((m, k), dtype=np.int64)
    for q_start in range(0, m, rows):
        q = Q[q_start:q_start + rows].astype(dtype) - mean
        q_norm = np.sum(q * q, axis=1, keepdims=True)
        top_d = np.full((len(q), k), np.inf, dtype=dtype)
        top_i = np.zeros((len(q), k), dtype=np.int64)
        for s in range(0, n, width):
            x = X[s:s + width].astype(dtype) - mean
            d = q_norm + np.sum(x * x, axis=1) - 2 * (q @ x.T)
            order = np.argsort(d, axis=1)[:, :k]
            both_d = np.hstack([top_d, np.take_along_axis(d, order, axis=1)])
            both_i = np.hstack([top_i, order + s])
            order = np.argsort(both_d, axis=1, kind="stable")[:, :k]
            top_d = np.take_along_axis(both_d, order, axis=1)
            top_i = np.take_along_axis(both_i, order, axis=1)
        out[q_start:q_start + rows] = top_i
    return out
