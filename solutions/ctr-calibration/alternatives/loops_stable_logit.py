"""Written the long way: the correction in logit space (log p - log1p(-p) + log w, then a sigmoid that
never exponentiates a positive number), with p = 0 and p = 1 handled before any log; the ECE by a
Python loop over the bins, each bin's rows selected by comparing p with its edges."""

import math

import numpy as np


def correct_downsampled(p, w):
    if w <= 0 or w > 1:
        raise ValueError("w, the fraction of negatives kept, must be in (0, 1]")
    p = np.asarray(p)
    p64 = p.astype(np.float64)
    q = p64.copy()  # p = 0 and p = 1 stay as they are
    inner = (p64 > 0) & (p64 < 1)
    z = np.log(p64[inner]) - np.log1p(-p64[inner]) + math.log(w)
    e = np.exp(-np.abs(z))
    q[inner] = np.where(z >= 0, 1 / (1 + e), e / (1 + e))
    return q.astype(p.dtype)


def expected_calibration_error(y, p, bins):
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    if bins < 1:
        raise ValueError("bins must be at least 1")
    if y.shape != p.shape or p.size == 0:
        raise ValueError("y and p must have the same non-zero length")
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = (p >= lo) & ((p < hi) if b < bins - 1 else (p <= 1.0))
        n_b = int(members.sum())
        if n_b == 0:
            continue
        total += n_b / len(p) * abs(y[members].mean() - p[members].mean())
    return total
