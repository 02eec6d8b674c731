"""Reference for `knn`: exact k-nearest-neighbour search in blocks, within a memory budget.

Squared distances come from ||q||^2 + ||x||^2 - 2 q.x, so one block of distances is one matrix
product. The work runs over chunks of X (each converted, centred and normed once) and, inside each
chunk, over batches of queries; every block keeps only its k best candidates and merges them into a
running top-k list per query. Only the last step sorts, and only k values per query.
"""

import numpy as np

# argpartition returns an int64 index for every entry of the block it ranks.
_INDEX_BYTES = 8
# Query rows per block unless the budget asks for fewer.
_QUERY_BATCH = 256


def knn(X, Q, k, max_bytes=64 * 2**20):
    """Indices (M, k) int64 of the k nearest rows of X (N, D) for each row of Q (M, D), nearest
    first, Euclidean distance; each row holds k distinct indices in range. k larger than N is
    clipped to N; k < 1, an empty X or Q, or mismatched D raises ValueError. Everything the call
    allocates except the returned array counts against max_bytes: batch the queries, and when
    X itself or one batch row of distances is too big, work on chunks of X (convert, centre and
    take norms chunk by chunk) and merge partial top-k lists. Distances must stay accurate when
    the data sit far from the origin (centre the data, or re-rank candidates in higher
    precision)."""
    X = np.asarray(X)
    Q = np.asarray(Q)
    if X.ndim != 2 or Q.ndim != 2:
        raise ValueError(f"X and Q must be 2-D arrays, got shapes {X.shape} and {Q.shape}")
    N, D = X.shape
    M = Q.shape[0]
    if N == 0 or M == 0:
        raise ValueError(f"X and Q must have at least one row, got shapes {X.shape} and {Q.shape}")
    if Q.shape[1] != D:
        raise ValueError(f"X and Q must have the same number of columns, got {D} and {Q.shape[1]}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = min(int(k), N)

    # float32 data stays float32 (twice the BLAS speed, and accurate enough once centred); float64
    # and integer data are ranked in float64: integer arithmetic would wrap or overflow.
    work = np.result_type(X.dtype, Q.dtype, np.float32)
    # Distances do not change under a shift, but the expansion above cancels catastrophically when
    # the data sit far from the origin: measure everything from the mean of X. The float64
    # reduction is buffered, so it does not copy X.
    centre = X.mean(axis=0, dtype=np.float64).astype(work)

    batch, chunk = _block_sizes(N, M, D, k, np.dtype(work).itemsize, max_bytes)
    best_d = np.full((M, k), np.inf, dtype=work)
    best_i = np.zeros((M, k), dtype=np.int64)
    for start in range(0, N, chunk):
        xc = X[start:start + chunk].astype(work)  # converts this chunk only, never all of X
        xc -= centre
        x_sq = np.einsum("ij,ij->i", xc, xc)
        for q0 in range(0, M, batch):
            rows = slice(q0, q0 + batch)
            qc = Q[rows].astype(work)
            qc -= centre
            d = qc @ xc.T
            d *= -2.0
            d += np.einsum("ij,ij->i", qc, qc)[:, None]
            d += x_sq
            np.maximum(d, 0.0, out=d)  # rounding can push an exact match slightly below 0
            part = _k_smallest(d, min(k, d.shape[1]))
            cand_d = np.concatenate([best_d[rows], np.take_along_axis(d, part, axis=1)], axis=1)
            cand_i = np.concatenate([best_i[rows], part + start], axis=1)
            keep = _k_smallest(cand_d, k)
            best_d[rows] = np.take_along_axis(cand_d, keep, axis=1)
            best_i[rows] = np.take_along_axis(cand_i, keep, axis=1)

    # Partial selection leaves each row's k neighbours in no particular order: sort them now.
    order = np.argsort(best_d, axis=1, kind="stable")
    return np.take_along_axis(best_i, order, axis=1)


def _k_smallest(d, k):
    """Column indices of the k smallest entries of each row of d, in no particular order.
    argpartition is O(width) per row where a full sort would be O(width log width)."""
    return np.argpartition(d, k - 1, axis=1)[:, :k]


def _block_sizes(N, M, D, k, itemsize, max_bytes):
    """(query batch, X chunk) sizes whose working set fits in about half of max_bytes."""
    # The running top-k lists and the final sort's order exist for the whole call.
    fixed = M * k * (itemsize + 2 * _INDEX_BYTES)
    # The other half is headroom for what this estimate leaves out (small temporaries, NumPy's
    # own buffers).
    budget = (max_bytes - fixed) // 2
    batch = min(M, _QUERY_BATCH)
    while True:
        # Per batch: its converted queries and norms, and the merge's candidate lists.
        per_batch = batch * ((D + 1) * itemsize + 4 * k * (itemsize + 2 * _INDEX_BYTES))
        # Per row of X in a chunk: the converted row, its norm, and a column of the distance block
        # with argpartition's indices.
        per_x_row = (D + 1) * itemsize + batch * (itemsize + _INDEX_BYTES)
        chunk = (budget - per_batch) // per_x_row
        if chunk >= 1 or batch == 1:
            return batch, int(min(N, max(chunk, 1)))
        batch //= 2
