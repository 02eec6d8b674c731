"""Alternative for `standardize`: Welford's update, one row at a time, in plain Python loops over rows.

How it differs from the reference: no per-batch statistics at all; every row updates the running
count, mean and M2 (delta = x - mean; mean += delta / n; M2 += delta * (x - mean)), so fit and
partial_fit are the same loop (fit resets first). transform masks the zero-variance columns with
boolean indexing instead of np.divide(where=...).
"""

import numpy as np


class Standardizer:
    def __init__(self):
        self._reset()

    def _reset(self):
        self.n = 0
        self._mean = None
        self._m2 = None

    @property
    def mean_(self):
        return self._mean.copy()

    @property
    def var_(self):
        return self._m2 / self.n

    def fit(self, X_train):
        self._reset()
        return self.partial_fit(X_train)

    def partial_fit(self, batch):
        rows = np.asarray(batch, dtype=np.float64)
        if self._mean is None:
            self._mean = np.zeros(rows.shape[1])
            self._m2 = np.zeros(rows.shape[1])
        for x in rows:
            self.n += 1
            delta = x - self._mean
            self._mean += delta / self.n
            self._m2 += delta * (x - self._mean)
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=np.float64)
        var = self.var_
        keep = var > 0
        out = np.zeros(X.shape)
        out[:, keep] = (X[:, keep] - self._mean[keep]) / np.sqrt(var[keep])
        return out
