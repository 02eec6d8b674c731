"""k-means with a Python loop over the clusters, as a learner writes it first (without the (N, k, D) array).

The seeding draws with rng.choice(p=...) over rows not chosen yet; an empty cluster is reseeded at
the row farthest from its centroid, which is also allowed.
"""

import numpy as np


def kmeans(X, k, iters=100, seed=0):
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    chosen = [int(rng.integers(n))]
    closest = ((X - X[chosen[0]]) ** 2).sum(axis=1)
    for _ in range(k - 1):
        if closest.sum() > 0:
            nxt = int(rng.choice(n, p=closest / closest.sum()))
        else:
            nxt = int(rng.integers(n))
        chosen.append(nxt)
        closest = np.minimum(closest, ((X - X[nxt]) ** 2).sum(axis=1))
    C = X[chosen].copy()

    def labels_for(C):
        dist = np.stack([((X - c) ** 2).sum(axis=1) for c in C], axis=1)
        return dist.argmin(axis=1), dist

    for _ in range(iters):
        labels, dist = labels_for(C)
        new = C.copy()
        for j in range(k):
            members = X[labels == j]
            if len(members):
                new[j] = members.mean(axis=0)
            else:
                new[j] = X[dist[np.arange(n), labels].argmax()]
        moved = np.abs(new - C).max()
        C = new
        if moved == 0:
            break
    labels, _ = labels_for(C)
    return C, labels
