"""Reference for `standardize`: a streaming standardizer with Chan's parallel merge.

Each call of partial_fit computes the batch's own mean and sum of squared deviations in two passes
over the batch (accurate whatever the offset), then merges them into the running (n, mean, M2) with
Chan, Golub and LeVeque's pairwise update: delta = batch mean - running mean,
M2 = M2_a + M2_b + delta**2 * n_a * n_b / n. No quantity of the size of mean**2 is ever formed, so
data with mean 1e9 and unit spread keep their digits. fit is partial_fit from an empty state.
"""

import numpy as np


class Standardizer:
    """Population (ddof = 0) mean_ and var_ of the data passed to fit / partial_fit; transform
    standardizes with them, and zero-variance columns come out as 0."""

    def __init__(self):
        self.n_samples_seen_ = 0
        self.mean_ = None
        self.var_ = None
        self._m2 = None

    def fit(self, X_train):
        """Statistics of X_train (N, D) alone: whatever was seen before is forgotten."""
        self.n_samples_seen_ = 0
        return self.partial_fit(X_train)

    def partial_fit(self, batch):
        """Merge the rows of batch (n, D) into the statistics seen so far (also after fit)."""
        batch = np.asarray(batch, dtype=np.float64)
        n_b = batch.shape[0]
        mean_b = batch.mean(axis=0)
        m2_b = ((batch - mean_b) ** 2).sum(axis=0)
        n_a = self.n_samples_seen_
        if n_a == 0:
            mean, m2 = mean_b, m2_b
        else:
            n = n_a + n_b
            delta = mean_b - self.mean_
            mean = self.mean_ + delta * (n_b / n)
            m2 = self._m2 + m2_b + delta**2 * (n_a * n_b / n)
        self.n_samples_seen_ = n_a + n_b
        self.mean_, self._m2 = mean, m2
        self.var_ = m2 / self.n_samples_seen_
        return self

    def transform(self, X):
        """(X - mean_) / sqrt(var_) with the fitted statistics; 0 in columns whose var_ is 0."""
        X = np.asarray(X, dtype=np.float64)
        std = np.sqrt(self.var_)
        return np.divide(X - self.mean_, std, out=np.zeros(X.shape), where=std > 0)
