"""A streaming standardizer. Fill in `Standardizer`; run `mlprep grade standardize` to grade it."""

import numpy as np


class Standardizer:
    """Population (ddof = 0) mean_ and var_, each a float array of shape (D,), of the rows passed to
    fit / partial_fit; transform standardizes with them.

    fit(X_train) forgets everything seen before and learns from X_train (N, D) alone; partial_fit(batch)
    merges the rows of batch (n, D) into what was seen so far (also after fit). Both return self.
    Streaming must stay accurate when the data sit far from the origin (mean 1e9, unit spread): keep a
    running mean and sum of squared deviations (Welford, or Chan's merge per batch), never the sum of
    squares. transform(X) returns a new float array (X - mean_) / sqrt(var_) computed with the learned
    statistics, 0 in columns whose var_ is 0 (no division by zero, no warning), and leaves X unchanged."""

    def __init__(self):
        raise NotImplementedError("Standardizer: start with no rows seen")

    def fit(self, X_train):
        raise NotImplementedError("fit: forget what was seen, learn mean_ and var_ from X_train, return self")

    def partial_fit(self, batch):
        raise NotImplementedError("partial_fit: merge this batch into the running mean and M2, return self")

    def transform(self, X):
        raise NotImplementedError("transform: (X - mean_) / sqrt(var_), 0 where var_ == 0")
