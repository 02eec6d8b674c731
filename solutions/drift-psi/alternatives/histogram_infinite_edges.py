"""np.percentile for the edges and np.histogram with -inf and +inf as the outer edges (open-ended outer bins)."""

import numpy as np


def psi(train, prod, bins=10):
    edges = np.percentile(train, 100 * np.arange(1, bins) / bins)
    edges = np.concatenate([[-np.inf], edges, [np.inf]])
    expected = np.histogram(train, edges)[0] / len(train)
    actual = np.histogram(prod, edges)[0] / len(prod)
    expected, actual = np.clip(expected, 1e-4, None), np.clip(actual, 1e-4, None)
    return np.sum((actual - expected) * np.log(actual / expected))
