"""One sort, then a plain Python walk over the runs of tied scores."""
import numpy as np


def _runs(y, score):
    s = np.asarray(score, dtype=float)
    order = np.argsort(-s, kind="stable")
    s, y = s[order].tolist(), (np.asarray(y)[order] == 1).tolist()
    runs, i, n = [], 0, len(s)
    while i < n:
        j, p = i, 0
        while j < n and s[j] == s[i]:
            p += y[j]
            j += 1
        runs.append((p, j - i - p))
        i = j
    return runs


def roc_auc(y, score):
    runs = _runs(y, score)
    P = sum(p for p, _ in runs)
    N = sum(q for _, q in runs)
    if P == 0 or N == 0:
        raise ValueError("one class")
    above, total = 0, 0.0
    for p, q in runs:
        total += q * (above + p / 2)
        above += p
    return total / (P * N)


def average_precision(y, score):
    runs = _runs(y, score)
    P = sum(p for p, _ in runs)
    if P == 0:
        raise ValueError("no positive")
    tp = k = 0
    total = 0.0
    for p, q in runs:
        tp += p
        k += p + q
        total += p / P * tp / k
    return total
