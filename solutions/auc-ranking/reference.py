"""ROC AUC (the Mann-Whitney statistic from mid-ranks) and average precision (a step sum over the
distinct score thresholds), each one sort: O(n log n)."""

import numpy as np


def _positives(y):
    """The labels (0/1 as int, float or bool) as a boolean mask of the positives."""
    return np.asarray(y) == 1


def _midranks(values):
    """1-based ranks of values in ascending order; tied values share the mean of the ranks they span."""
    _, run, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)  # the rank of the last member of each run of ties
    return (last - (counts - 1) / 2)[run]


def roc_auc(y, score):
    """P(score of a random positive > score of a random negative), a tie counting half."""
    pos = _positives(y)
    n_pos = int(pos.sum())
    n_neg = pos.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"roc_auc needs both classes in y, got {n_pos} positives and {n_neg} negatives")
    ranks = _midranks(np.asarray(score, dtype=np.float64))
    # Mann-Whitney U: the positives' rank sum minus its least possible value counts the (positive,
    # negative) pairs in the right order, a tied pair counting half (mid-ranks do that).
    u = ranks[pos].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def average_precision(y, score):
    """sum over distinct thresholds t, descending, of (R(t) - R(previous t)) * P(t); tied scores enter together."""
    pos = _positives(y)
    n_pos = int(pos.sum())
    if n_pos == 0:
        raise ValueError("average_precision needs at least one positive in y")
    score = np.asarray(score, dtype=np.float64)  # float first: negating an unsigned integer wraps around
    order = np.argsort(-score, kind="stable")  # descending
    s, hit = score[order], pos[order]
    tps = np.cumsum(hit)
    fps = np.cumsum(~hit)
    # One threshold per distinct score, at the last position of its run: tied scores enter together.
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]
    tps, fps = tps[last], fps[last]
    precision = tps / (tps + fps)
    recall = tps / n_pos
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))
