"""Row by row in plain Python: math.log, math.fsum, a log-sum-exp per row."""

import math

import numpy as np


def _kl_row(p_row, q_row):
    total = []
    for pk, qk in zip(p_row, q_row):
        if pk == 0:
            continue
        if qk == 0:
            return math.inf
        total.append(pk * (math.log(pk) - math.log(qk)))
    return math.fsum(total)


def _log_softmax_row(z):
    m = max(z)
    lse = m + math.log(math.fsum(math.exp(v - m) for v in z))
    return [v - lse for v in z]


def _logits_row(a_row, b_row):
    log_p, log_q = _log_softmax_row(a_row), _log_softmax_row(b_row)
    return math.fsum(math.exp(lp) * (lp - lq) for lp, lq in zip(log_p, log_q))


def _per_row(fn, x, y):
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim == 1:
        return fn(x.tolist(), y.tolist())
    return np.array([fn(xr, yr) for xr, yr in zip(x.tolist(), y.tolist())])


def kl(p, q):
    return _per_row(_kl_row, p, q)


def kl_from_logits(a, b):
    return _per_row(_logits_row, a, b)
