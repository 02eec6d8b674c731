"""Population stability index. Fill in `psi`; run `mlprep grade drift-psi` to grade it."""

import numpy as np


def psi(train, prod, bins=10):
    """Population stability index of the production sample `prod` against the training sample `train`
    (1-D NumPy arrays of real numbers, any lengths). The bins are cut at the training quantiles 1/bins,
    2/bins, ..., (bins - 1)/bins (bins - 1 interior edges, any quantile method); the first and last bins
    are open-ended, so every value of either sample falls in some bin. Each bin's share is
    max(count / n, 1e-4), n the sample's length (no renormalisation), and
    PSI = sum over the bins of (p_prod - p_train) * ln(p_prod / p_train). Returns a float."""
    raise NotImplementedError("psi: edges = training quantiles, count both samples per bin, floor the shares, sum the terms")
