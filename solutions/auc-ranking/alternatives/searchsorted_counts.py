"""Counting by binary search: sort the negatives (and all scores) once, then for each positive count how
many scores lie below, above or level with it with np.searchsorted."""

import numpy as np


def roc_auc(y, score):
    y = np.asarray(y).astype(bool)
    score = np.asarray(score, dtype=np.float64)
    neg = np.sort(score[~y])
    pos = score[y]
    if pos.size == 0 or neg.size == 0:
        raise ValueError("roc_auc: need at least one positive and one negative")
    below = np.searchsorted(neg, pos, side="left")  # negatives strictly below each positive
    level = np.searchsorted(neg, pos, side="right") - below  # negatives tied with it
    return (below.sum() + 0.5 * level.sum()) / (pos.size * neg.size)


def average_precision(y, score):
    # AP = mean over the positives of the precision at the threshold equal to their score, counting
    # every row scored at least that high (tied rows enter together).
    y = np.asarray(y).astype(bool)
    score = np.asarray(score, dtype=np.float64)
    pos = score[y]
    if pos.size == 0:
        raise ValueError("average_precision: no positive labels")
    all_sorted, pos_sorted = np.sort(score), np.sort(pos)
    at_or_above = score.size - np.searchsorted(all_sorted, pos, side="left")
    pos_at_or_above = pos.size - np.searchsorted(pos_sorted, pos, side="left")
    return float(np.mean(pos_at_or_above / at_or_above))
