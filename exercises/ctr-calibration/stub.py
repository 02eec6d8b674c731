"""Calibration for click-through rates. Fill in both functions; run `mlprep grade ctr-calibration` to grade them."""

import numpy as np  # noqa: F401 -- your implementation will need it


def correct_downsampled(p, w):
    """Probabilities on the original data from probabilities p predicted by a model trained after keeping
    only a fraction w of the negatives (every positive kept): logit(q) = logit(p) + log(w), that is
    q = p w / (p w + 1 - p).

    p: NumPy float array (float32 or float64) of any shape, values in [0, 1]; w: a float in (0, 1].
    Returns a new NumPy array of p's shape (float64 precision for float64 p); p = 0 gives 0 and
    p = 1 gives 1, with no floating-point warning. w outside (0, 1] raises ValueError. p is not modified.
    """
    raise NotImplementedError("correct_downsampled: multiply the odds p / (1 - p) by w")


def expected_calibration_error(y, p, bins):
    """Expected calibration error over `bins` equal-width bins of [0, 1].

    y: (N,) 0/1 labels (int, bool or float array); p: (N,) float64 probabilities in [0, 1]; bins: an int >= 1.
    Bin b holds b / bins <= p < (b + 1) / bins; p = 0 is in the first bin and p = 1 in the last.
    ECE = sum over the bins of n_b / N * |mean of y in b - mean of p in b|; an empty bin adds 0.
    Returns a float (a Python float, NumPy scalar or 0-d array). bins < 1, or y and p of different
    lengths (or empty), raise ValueError. y and p are not modified.
    """
    raise NotImplementedError("expected_calibration_error: bin p, then weight each bin's |mean y - mean p| by n_b / N")
