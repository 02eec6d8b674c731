"""masked_ce with the counted rows selected first and the smoothed target written out as a matrix:
loss = -sum(target * log_softmax(z)) per row, target = (1 - eps) * one_hot + eps / V."""

import numpy as np
from scipy.special import log_softmax


def masked_ce(logits, y, mask, eps=0.1, T=1.0):
    keep = np.flatnonzero(np.asarray(mask))
    if keep.size == 0:
        return np.float64(0.0)
    logp = log_softmax(np.asarray(logits)[keep] / T, axis=1)
    V = logp.shape[1]
    target = np.full(logp.shape, eps / V)
    target[np.arange(keep.size), np.asarray(y)[keep]] += 1 - eps
    return -(target * logp).sum(axis=1).mean()
