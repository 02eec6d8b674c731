"""scikit-learn's own metrics, with the contract's checks in front (scikit-learn warns and returns NaN or 0
for a y with one class instead of raising)."""

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score


def roc_auc(y, score):
    y = np.asarray(y) == 1
    if y.all() or not y.any():
        raise ValueError("roc_auc: y must hold both classes")
    return roc_auc_score(y, score)


def average_precision(y, score):
    y = np.asarray(y) == 1
    if not y.any():
        raise ValueError("average_precision: y has no positive")
    return average_precision_score(y, score)
