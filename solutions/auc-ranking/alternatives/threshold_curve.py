"""One descending sort, the ROC and PR curves at the distinct thresholds, then the trapezoid rule for the
ROC (exact for a piecewise-linear curve: ties become a diagonal segment, worth half) and the step sum
for AP."""

import numpy as np


def _curve(y, score):
    """(true positives, false positives) at each distinct threshold, highest threshold first."""
    y = np.asarray(y, dtype=np.float64)
    score = np.asarray(score, dtype=np.float64)
    order = np.argsort(score, kind="mergesort")[::-1]
    s, t = score[order], y[order]
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    tp = np.cumsum(t)[ends]
    fp = (ends + 1) - tp
    return tp, fp


def roc_auc(y, score):
    tp, fp = _curve(y, score)
    P, N = tp[-1], fp[-1]
    if P == 0 or N == 0:
        raise ValueError("roc_auc is undefined when y has a single class")
    tpr = np.r_[0.0, tp / P]
    fpr = np.r_[0.0, fp / N]
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))


def average_precision(y, score):
    tp, fp = _curve(y, score)
    if tp[-1] == 0:
        raise ValueError("average_precision is undefined without positives")
    precision = tp / (tp + fp)
    gained = np.diff(np.r_[0.0, tp]) / tp[-1]
    return float(gained @ precision)
