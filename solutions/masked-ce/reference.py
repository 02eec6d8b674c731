"""Reference for `masked_ce`: label-smoothed cross-entropy with temperature, averaged over the
rows the mask counts.

The whole batch goes through one stable log-softmax (the row maximum subtracted first, so a logit
of 1e4 cannot overflow exp). Ignored labels such as -100 are swapped for a valid class before any
indexing and their rows are then left out of the sum; the count is guarded, so an all-masked
batch is 0 / 1 = 0.0 with no 0 / 0 on the way.
"""

import numpy as np


def masked_ce(logits, y, mask, eps=0.1, T=1.0):
    """Mean over the counted rows (mask != 0) of the cross-entropy of softmax(logits / T) against
    the smoothed target (1 - eps) * one_hot(y) + eps / V, as
    F.cross_entropy(logits[c] / T, y[c], label_smoothing=eps); 0.0 when no row counts.
    logits (N, V) float, y (N,) int, mask (N,) bool, int or float."""
    z = np.asarray(logits) / T
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    counted = np.asarray(mask) != 0
    safe_y = np.where(counted, y, 0)  # ignored labels (-100...) never index: their rows are dropped below
    nll = -logp[np.arange(len(safe_y)), safe_y]
    smooth = -logp.mean(axis=-1)  # the uniform part of the target: eps / V on each of the V classes
    loss = (1 - eps) * nll + eps * smooth
    n = np.count_nonzero(counted)
    return loss[counted].sum() / max(n, 1)
