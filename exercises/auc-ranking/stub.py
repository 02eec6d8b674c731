"""ROC AUC and average precision. Fill in `roc_auc` and `average_precision`; run `mlprep grade auc-ranking` to grade them."""

import numpy as np


def roc_auc(y, score):
    """ROC AUC of `score` (higher means more likely positive) against the 0/1 labels `y` (1-D NumPy arrays of
    the same length): the share of (positive, negative) pairs in which the positive scores higher, a tie
    counting 1/2. O(n log n): one sort, no comparison of every positive with every negative. Returns a float.
    Raises ValueError when y holds only one class."""
    raise NotImplementedError("roc_auc: rank the scores (tied scores sharing their mean rank), then use the positives' rank sum")


def average_precision(y, score):
    """Average precision (scikit-learn's average_precision_score): over the distinct score thresholds t, from
    the highest down, sum (R(t) - R(previous t)) * P(t), where P and R are the precision and recall of
    predicting positive for every row scored >= t (tied rows enter together), with no interpolation.
    O(n log n). Returns a float: 1.0 when y has no negative; raises ValueError when y has no positive."""
    raise NotImplementedError("average_precision: sort descending, cumulative true/false positives, read them once per distinct score")
