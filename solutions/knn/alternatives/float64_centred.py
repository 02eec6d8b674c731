"""Alternative for `knn`: float64 throughout, centred on the mean of X, chunk sizes from a flat
per-pair cost.

How it differs from the reference: every dtype (float32 included) is converted to float64 chunk by
chunk, so there is no float32 fast path; the distance block is built with plain out-of-place
arithmetic (several temporaries, paid for by a larger per-pair allowance); chunks of X are sized
from the budget alone, with one query batch per budget; and candidates are merged with
np.partition on the distances followed by a boolean mask, rather than with index bookkeeping
through argpartition. Ties at the k-th distance are resolved by position.
"""

import numpy as np

PAIR_BYTES = 64  # float64 distance block plus its temporaries and argpartition's int64 indices


def knn(X, Q, k, max_bytes=64 * 2**20):
    X = np.asarray(X)
    Q = np.asarray(Q)
    if X.ndim != 2 or Q.ndim != 2:
        raise ValueError("X and Q must be 2-D")
    if len(X) == 0 or len(Q) == 0:
        raise ValueError("X and Q must not be empty")
    if X.shape[1] != Q.shape[1]:
        raise ValueError(f"dimension mismatch: X has {X.shape[1]} columns, Q has {Q.shape[1]}")
    if k < 1:
        raise ValueError("k must be positive")
    N, D = X.shape
    M = len(Q)
    k = min(k, N)

    mu = np.mean(X, axis=0, dtype=np.float64)

    usable = max_bytes // 3 - M * k * 24
    batch = int(min(M, 128))
    chunk = int(max(1, min(N, usable // (batch * PAIR_BYTES + 3 * D * 8))))
    while batch > 8 and chunk < min(N, 512):  # many tiny chunks cost more Python overhead than fewer queries
        batch //= 2
        chunk = int(max(1, min(N, usable // (batch * PAIR_BYTES + 3 * D * 8))))

    best_d = np.full((M, k), np.inf)
    best_i = np.zeros((M, k), dtype=np.int64)
    for x0 in range(0, N, chunk):
        x = np.asarray(X[x0:x0 + chunk], dtype=np.float64) - mu
        xx = np.einsum("nd,nd->n", x, x)
        for q0 in range(0, M, batch):
            q = np.asarray(Q[q0:q0 + batch], dtype=np.float64) - mu
            d = (np.einsum("md,md->m", q, q)[:, None] + xx[None, :]) - 2.0 * (q @ x.T)
            kk = min(k, d.shape[1])
            # The kk-th smallest value of each row; everything strictly below it is in, then ties fill up.
            kth = np.partition(d, kk - 1, axis=1)[:, kk - 1:kk]
            below = d < kth
            tie = (d == kth) & (np.cumsum(d == kth, axis=1) <= kk - below.sum(axis=1, keepdims=True))
            rows, cols = np.nonzero(below | tie)
            cand_d = d[rows, cols].reshape(len(q), kk)
            cand_i = (cols + x0).reshape(len(q), kk)
            all_d = np.concatenate([best_d[q0:q0 + batch], cand_d], axis=1)
            all_i = np.concatenate([best_i[q0:q0 + batch], cand_i], axis=1)
            pick = np.argpartition(all_d, k - 1, axis=1)[:, :k]
            best_d[q0:q0 + batch] = np.take_along_axis(all_d, pick, axis=1)
            best_i[q0:q0 + batch] = np.take_along_axis(all_i, pick, axis=1)

    order = np.argsort(best_d, axis=1)
    return np.take_along_axis(best_i, order, axis=1)
