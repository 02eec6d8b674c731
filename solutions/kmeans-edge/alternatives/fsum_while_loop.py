"""Alternative: math.fsum for every sum, a while loop with an explicit iteration counter, and the
argmin as min() over (distance, index) pairs (a tie compares the indices, so the lowest wins).
Centroids and groups come back as tuples. Differs from the reference in the loop structure, the
summation (exactly rounded) and the containers."""

import math


def _sqdist(p, q):
    return math.fsum((a - b) * (a - b) for a, b in zip(p, q))


def kmeans(points, init, max_iter=100, tol=1e-9):
    if not points or not init:
        raise ValueError("points and init must be non-empty")
    if max_iter < 1:
        raise ValueError("max_iter must be >= 1")
    dims = {len(p) for p in points} | {len(c) for c in init}
    if len(dims) != 1:
        raise ValueError(f"points and init mix dimensions {sorted(dims)}")

    k = len(init)
    centroids = [tuple(c) for c in init]
    iteration = 0
    while True:
        iteration += 1
        labels = [min((_sqdist(p, c), j) for j, c in enumerate(centroids))[1] for p in points]
        groups = tuple([p for p, lab in zip(points, labels) if lab == j] for j in range(k))
        moved = []
        for j in range(k):
            if groups[j]:
                m = len(groups[j])
                moved.append(tuple(math.fsum(col) / m for col in zip(*groups[j])))
            else:
                moved.append(centroids[j])
        largest = max(_sqdist(a, b) for a, b in zip(centroids, moved))
        centroids = moved
        if largest <= tol or iteration >= max_iter:
            return tuple(centroids), groups
