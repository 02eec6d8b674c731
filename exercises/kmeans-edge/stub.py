"""k-means edge cases, in pure Python. Fill in `kmeans`; run `mlprep grade kmeans-edge` to grade it."""


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
    raise NotImplementedError("kmeans: validate, then alternate assignment and update steps")
