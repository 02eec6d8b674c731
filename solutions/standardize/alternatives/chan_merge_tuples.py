"""Alternative for `standardize`: Chan's merge of (count, mean, M2) triples, in the input's float dtype.

How it differs from the reference: fit computes its statistics directly with np.mean / np.var (two
passes) instead of going through partial_fit; the merged mean is the count-weighted average of the
two means rather than an increment; float32 data stay float32 (statistics and output), which the
contract allows; transform builds a safe divisor (1 where the std is 0) and zeroes those columns.
"""

import numpy as np


def _stats(X):
    mean = X.mean(axis=0)
    return len(X), mean, ((X - mean) ** 2).sum(axis=0)


def _merge(a, b):
    n_a, mean_a, m2_a = a
    n_b, mean_b, m2_b = b
    n = n_a + n_b
    delta = mean_b - mean_a
    mean = (n_a * mean_a + n_b * mean_b) / n
    return n, mean, m2_a + m2_b + delta * delta * (n_a / n) * n_b


def _as_float(X):
    X = np.asarray(X)
    return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)


class Standardizer:
    def __init__(self):
        self._state = None

    def fit(self, X_train):
        X = _as_float(X_train)
        self._state = (len(X), X.mean(axis=0), X.var(axis=0) * len(X))
        self._publish()
        return self

    def partial_fit(self, batch):
        part = _stats(_as_float(batch))
        self._state = part if self._state is None else _merge(self._state, part)
        self._publish()
        return self

    def _publish(self):
        n, mean, m2 = self._state
        self.mean_, self.var_ = mean, m2 / n

    def transform(self, X):
        X = _as_float(X)
        std = np.sqrt(self.var_)
        zero = std == 0
        out = (X - self.mean_) / np.where(zero, 1, std).astype(std.dtype)
        out[:, zero] = 0
        return out
