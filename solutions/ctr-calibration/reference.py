"""Reference for `ctr-calibration`: undoing negative downsampling, and the expected calibration error.

Keeping a fraction w of the negatives multiplies the odds of a click by 1 / w, so a model trained on
the downsampled data predicts odds p / (1 - p) that are 1 / w times the true ones. Multiplying the
odds back by w, q = p w / (p w + 1 - p), is logit(q) = logit(p) + log(w) written without a logit:
its denominator is at least min(w, 1 - p + p w) > 0, so p = 0 and p = 1 map to 0 and 1 exactly
with no division by zero on the way.

The ECE sums, over equal-width bins, n_b / N * |mean y - mean p|, which is |sum y - sum p| / N per
bin: no division by a bin's count, so an empty bin adds 0 without a 0 / 0.
"""

import numpy as np


def correct_downsampled(p, w):
    """Probabilities on the original data from p predicted after keeping a fraction w in (0, 1] of
    the negatives: q = p w / (p w + 1 - p), i.e. logit(q) = logit(p) + log(w); q(0) = 0, q(1) = 1.
    p: array of any shape with values in [0, 1]; returns an array of p's shape. w outside (0, 1]
    raises ValueError."""
    if not 0 < w <= 1:
        raise ValueError(f"w is the fraction of negatives kept, in (0, 1]; got {w}")
    p = np.asarray(p)
    p = p if p.dtype.kind == "f" else p.astype(np.float64)
    pw = p * w
    return pw / (pw + (1 - p))


def expected_calibration_error(y, p, bins):
    """sum over `bins` equal-width bins of [0, 1] of n_b / N * |mean(y in b) - mean(p in b)|; a bin
    holds k / bins <= p < (k + 1) / bins, p = 1 in the last; empty bins add 0. y: (N,) 0/1 labels,
    p: (N,) probabilities, N >= 1. Returns a float."""
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    if y.ndim != 1 or y.shape != p.shape or len(p) == 0:
        raise ValueError(f"y and p must be 1-D arrays of the same non-zero length, got shapes {y.shape} and {p.shape}")
    if int(bins) != bins or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins}")
    bins = int(bins)
    idx = np.minimum((p * bins).astype(np.int64), bins - 1)  # p = 1 falls in the last bin, not in a bin of its own
    sum_y = np.bincount(idx, weights=y, minlength=bins)
    sum_p = np.bincount(idx, weights=p, minlength=bins)
    # n_b / N * |sum_y / n_b - sum_p / n_b| = |sum_y - sum_p| / N
    return float(np.abs(sum_y - sum_p).sum() / len(p))
