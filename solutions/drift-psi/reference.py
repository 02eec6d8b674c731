"""Population stability index of a production sample against a training sample, on bins cut at the
training quantiles, each bin's share floored at 1e-4."""

import numpy as np

FLOOR = 1e-4  # the smallest share a bin may have: an empty bin would make the log infinite


def _shares(values, edges):
    """Each bin's share of values: bin k holds edges[k-1] <= v < edges[k], the first and last bins
    open-ended (everything below the first edge, everything from the last edge up), floored at FLOOR."""
    counts = np.bincount(np.searchsorted(edges, values, side="right"), minlength=edges.size + 1)
    return np.maximum(counts / values.size, FLOOR)


def psi(train, prod, bins=10):
    """sum over the bins of (p_prod - p_train) * ln(p_prod / p_train); the bins - 1 interior edges are the
    training quantiles at 1/bins, ..., (bins - 1)/bins."""
    train, prod = np.asarray(train, dtype=np.float64), np.asarray(prod, dtype=np.float64)
    edges = np.quantile(train, np.linspace(0, 1, bins + 1)[1:-1])
    p_train, p_prod = _shares(train, edges), _shares(prod, edges)
    return float(np.sum((p_prod - p_train) * np.log(p_prod / p_train)))
