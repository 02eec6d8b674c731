"""Alternative: the argmin as min(range(k), key=...) (min returns the first minimal item, so ties go
to the lowest index), groups gathered in a dict of index -> points, the update written as an
explicit for loop with the convergence test inside a for-else. Returns tuples of tuples."""


def _check(points, init, max_iter):
    if max_iter < 1:
        raise ValueError("max_iter < 1")
    if not len(points):
        raise ValueError("no points")
    if not len(init):
        raise ValueError("no initial centroids")
    d = len(points[0])
    bad = [row for row in list(points) + list(init) if len(row) != d]
    if bad:
        raise ValueError(f"dimension mismatch: {bad[0]!r} has {len(bad[0])} coordinates, expected {d}")


def kmeans(points, init, max_iter=100, tol=1e-9):
    _check(points, init, max_iter)
    k = len(init)
    cents = [tuple(c) for c in init]

    def dist2(p, c):
        total = 0
        for a, b in zip(p, c):
            total += (a - b) ** 2
        return total

    for _ in range(max_iter):
        members = {j: [] for j in range(k)}
        for p in points:
            members[min(range(k), key=lambda j: dist2(p, cents[j]))].append(tuple(p))
        worst = 0
        for j in range(k):
            g = members[j]
            if not g:
                continue
            mean = tuple(sum(p[i] for p in g) / len(g) for i in range(len(cents[j])))
            worst = max(worst, dist2(mean, cents[j]))
            cents[j] = mean
        if worst <= tol:
            break
    return tuple(cents), tuple(tuple(members[j]) for j in range(k))
