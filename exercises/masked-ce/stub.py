"""Masked, label-smoothed cross-entropy with temperature (NumPy). Fill in masked_ce; run `mlprep grade masked-ce` to grade it."""

import numpy as np  # noqa: F401 -- your implementation will need it


def masked_ce(logits, y, mask, eps=0.1, T=1.0):
    """Mean cross-entropy over the counted rows, with label smoothing eps and temperature T.

    logits: (N, V) float32 or float64 array; y: (N,) int64 class labels; mask: (N,) bool, int or
    float array of 0 and 1. A row counts where its mask is 1 (True), once;
    the labels of the other rows may be anything, -100 included, and must not be used as indices.
    Returns a scalar (float, NumPy scalar or 0-d array) equal to
    F.cross_entropy(logits[c] / T, y[c], label_smoothing=eps) over the counted rows c, that is the
    mean over those rows of (1 - eps) * (-log p[y]) + eps * mean(-log p), p = softmax(logits / T);
    0.0 when no row counts, without a floating-point warning. Finite for logits of 1e4.
    float64 inputs keep float64 precision. The inputs are not modified.
    """
    raise NotImplementedError("masked_ce: log-softmax of logits / T, smoothed per-row loss, mean over the rows where mask != 0")
