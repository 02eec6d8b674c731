"""Reference for kmeans-edge: Lloyd's k-means from given initial centroids, in pure Python.

The loop itself is short; what is graded is its edge cases, so each rule lives in one
obvious place: ties in `_nearest`, empty clusters in the update line, the stopping rule
(squared shift, `<=`) right after the update.
"""


def _sqdist(p, q):
    return sum((a - b) ** 2 for a, b in zip(p, q))


def _nearest(p, cents):
    best, best_d = 0, _sqdist(p, cents[0])
    for j in range(1, len(cents)):
        d = _sqdist(p, cents[j])
        if d < best_d:  # strict: on a tie the lower index keeps the point
            best, best_d = j, d
    return best


def _assign(points, cents):
    groups = [[] for _ in cents]
    for p in points:  # in input order, so each group lists its points in input order
        groups[_nearest(p, cents)].append(p)
    return groups


def _mean(group):
    n = len(group)
    return [sum(xs) / n for xs in zip(*group)]


def _check_inputs(points, init, max_iter):
    if max_iter < 1:
        raise ValueError(f"max_iter must be at least 1, got {max_iter}")
    if len(points) == 0:
        raise ValueError("points is empty")
    if len(init) == 0:
        raise ValueError("init is empty: need at least one centroid")
    dim = len(points[0])
    # zip() would silently truncate a shorter point or centroid, so check every row.
    for name, rows in (("points", points), ("init", init)):
        for i, row in enumerate(rows):
            if len(row) != dim:
                raise ValueError(f"{name}[{i}] has {len(row)} coordinates, points[0] has {dim}")


def kmeans(points, init, max_iter=100, tol=1e-9):
    """points: a non-empty list of equal-length sequences of numbers; init: the k initial
    centroids. Returns (centroids, groups): k centroids (sequences of numbers), and for each
    centroid the list of points assigned to it in the last assignment step, in input order
    (compared by value). One iteration is an assignment followed by an update.
    A point equidistant from several centroids goes to the lowest index. An empty cluster
    keeps its previous centroid. Stop once the largest squared centroid shift is <= tol, or
    after max_iter iterations (max_iter >= 1). Empty points, empty init, max_iter < 1, or
    points and init of mixed dimensions (init included) raise ValueError. points and init are
    left unchanged."""
    _check_inputs(points, init, max_iter)
    cents = [list(c) for c in init]  # our own copies: the caller's init stays as it was
    for _ in range(max_iter):
        groups = _assign(points, cents)
        # An empty cluster keeps its previous centroid (no reseeding, no 0/0).
        new = [_mean(g) if g else c for c, g in zip(cents, groups)]
        shift = max(_sqdist(c, m) for c, m in zip(cents, new))
        cents = new
        # Checked after the update, so the returned centroids are always the means of the
        # returned groups: those groups are the ones this last update averaged.
        if shift <= tol:
            break
    return cents, groups
