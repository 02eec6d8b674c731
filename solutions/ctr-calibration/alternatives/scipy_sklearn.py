"""The library route: scipy.special.logit / expit for the correction (both are exact and silent at
p = 0 and 1: logit gives -inf and inf, expit maps them back to 0 and 1), and
sklearn.calibration.calibration_curve for the per-bin means of the ECE (it bins with
np.searchsorted on the inner edges, so a p exactly on an edge goes to the bin below: a convention
the contract leaves free), weighted by counts binned the same way."""

import numpy as np
from scipy.special import expit, logit
from sklearn.calibration import calibration_curve


def correct_downsampled(p, w):
    if not 0 < w <= 1:
        raise ValueError(f"w must be in (0, 1], got {w}")
    p = np.asarray(p)
    return expit(logit(p) + np.log(w).astype(p.dtype))


def expected_calibration_error(y, p, bins):
    y, p = np.asarray(y).astype(np.int64), np.asarray(p, dtype=np.float64)
    if bins < 1 or len(y) != len(p) or len(p) == 0:
        raise ValueError("need bins >= 1 and y, p of the same non-zero length")
    prob_true, prob_pred = calibration_curve(y, p, n_bins=bins, strategy="uniform")  # non-empty bins only, in bin order
    edges = np.linspace(0.0, 1.0, bins + 1)
    counts = np.bincount(np.searchsorted(edges[1:-1], p), minlength=bins)
    counts = counts[counts > 0]
    return float(np.sum(counts / len(p) * np.abs(prob_true - prob_pred)))
