"""Alternative for `knn`: a float32 shortlist, re-ranked with exact float64 distances.

How it differs from the reference: distances are first computed in float32 whatever the input dtype
(integers and float64 included), measured from the first row of X rather than from the mean (any
point near the data keeps the expansion from cancelling); each query keeps a shortlist of 2k + 8
candidates; at the end the shortlist is re-ranked with distances computed directly as
sum((q - x)**2) in float64 from the original values, so the final order is exact even for near-ties.
The budget is split between the shortlist pass and the re-ranking pass, which never overlap.
"""

import numpy as np


def _check(X, Q, k):
    if X.ndim != 2 or Q.ndim != 2:
        raise ValueError("expected 2-D X and Q")
    if X.shape[0] < 1 or Q.shape[0] < 1:
        raise ValueError("empty X or Q")
    if X.shape[1] != Q.shape[1]:
        raise ValueError("X and Q differ in dimension")
    if k < 1:
        raise ValueError("k must be >= 1")


def knn(X, Q, k, max_bytes=64 * 2**20):
    X = np.asarray(X)
    Q = np.asarray(Q)
    _check(X, Q, k)
    n, d = X.shape
    m = Q.shape[0]
    k = min(k, n)
    short = min(n, 2 * k + 8)

    anchor = X[0].astype(np.float64)
    # The shortlists (a float32 distance and an int64 index each) live throughout; the rest of half the
    # budget goes to one pass at a time.
    room = max(max_bytes // 2 - m * short * 12, 0)
    # Shortlist pass: per (query, row of X) pair three float32 temporaries and argpartition's int64
    # index; per row of X its float64 and float32 copies.
    batch = int(min(m, 256))
    chunk = int(max(1, min(n, room // (batch * 20 + d * 12 + 8))))
    while batch > 1 and chunk < min(n, 64):
        batch //= 2
        chunk = int(max(1, min(n, room // (batch * 20 + d * 12 + 8))))

    cand_d = np.full((m, short), np.inf, dtype=np.float32)
    cand_i = np.zeros((m, short), dtype=np.int64)
    for x0 in range(0, n, chunk):
        x32 = (X[x0:x0 + chunk] - anchor).astype(np.float32)
        x_sq = (x32 * x32).sum(axis=1)
        for q0 in range(0, m, batch):
            q32 = (Q[q0:q0 + batch] - anchor).astype(np.float32)
            dist = (q32 * q32).sum(axis=1)[:, None] + x_sq - 2 * (q32 @ x32.T)
            take = min(short, dist.shape[1])
            part = np.argpartition(dist, take - 1, axis=1)[:, :take]
            both_d = np.concatenate([cand_d[q0:q0 + batch], np.take_along_axis(dist, part, axis=1)], axis=1)
            both_i = np.concatenate([cand_i[q0:q0 + batch], part + x0], axis=1)
            keep = np.argpartition(both_d, short - 1, axis=1)[:, :short]
            cand_d[q0:q0 + batch] = np.take_along_axis(both_d, keep, axis=1)
            cand_i[q0:q0 + batch] = np.take_along_axis(both_i, keep, axis=1)

    # Re-rank pass: exact distances of the shortlist, from the original values. The gathered rows and
    # their float64 temporaries cost about 4 * short * d * 8 bytes per query.
    out = np.empty((m, k), dtype=np.int64)
    rerank_rows = int(max(1, min(m, room // (short * (32 * d + 24)))))
    for q0 in range(0, m, rerank_rows):
        q64 = Q[q0:q0 + rerank_rows].astype(np.float64)
        idx = cand_i[q0:q0 + rerank_rows]
        exact = ((X[idx].astype(np.float64) - q64[:, None, :]) ** 2).sum(axis=2)
        order = np.argsort(exact, axis=1, kind="stable")[:, :k]
        out[q0:q0 + rerank_rows] = np.take_along_axis(idx, order, axis=1)
    return out
