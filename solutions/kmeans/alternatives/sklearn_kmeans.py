"""scikit-learn's KMeans with one k-means++ start (greedy k-means++, Lloyd's algorithm).

sklearn reruns the assignment step after its last update unless the labels had already stopped
changing, so labels_ are nearest to cluster_centers_ either way; empty clusters are relocated to
far rows, never left NaN. Its tol stops the loop early, which the contract allows.
"""

from sklearn.cluster import KMeans


def kmeans(X, k, iters=100, seed=0):
    model = KMeans(n_clusters=k, init="k-means++", n_init=1, max_iter=iters, random_state=seed, algorithm="lloyd").fit(X)
    return model.cluster_centers_, model.labels_
