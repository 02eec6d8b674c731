"""PSI as the symmetric KL divergence KL(prod || train) + KL(train || prod), with scipy.special.rel_entr;
edges by np.quantile's inverted_cdf method, bins by np.digitize(right=True) (a value on an edge goes to
the lower bin)."""

import numpy as np
from scipy.special import rel_entr


def psi(train, prod, bins=10):
    edges = np.quantile(train, np.arange(1, bins) / bins, method="inverted_cdf")
    p = np.maximum(np.bincount(np.digitize(train, edges, right=True), minlength=bins) / np.size(train), 1e-4)
    q = np.maximum(np.bincount(np.digitize(prod, edges, right=True), minlength=bins) / np.size(prod), 1e-4)
    return float(np.sum(rel_entr(q, p) + rel_entr(p, q)))
