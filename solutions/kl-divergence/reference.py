"""KL divergence of probability rows, and of the softmax distributions of logit rows, in nats."""

import numpy as np


def kl(p, q):
    """KL(p || q) = sum_k p_k log(p_k / q_k) of each row (the last axis): a scalar for 1-D input, (N,) for (N, K).
    A term with p_k = 0 is 0 (0 log 0 = 0, whatever q_k is); a term with q_k = 0 < p_k is inf."""
    p, q = np.asarray(p), np.asarray(q)
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf is wanted; the NaN of 0 * -inf is masked below
        log_ratio = np.log(p) - np.log(q)
        terms = np.where(p > 0, p * log_ratio, 0.0)
    return terms.sum(axis=-1)


def log_softmax(z, axis=-1):
    """log(softmax(z)) along `axis`, in log space: shifting by the max keeps every exp at most 1."""
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def kl_from_logits(a, b):
    """KL(softmax(a) || softmax(b)) of each row, from log-probabilities: finite even where softmax(b) underflows
    to 0 in floating point (a = [0, 0], b = [1e4, 0] gives 5000 - log 2)."""
    log_p, log_q = log_softmax(np.asarray(a)), log_softmax(np.asarray(b))
    return (np.exp(log_p) * (log_p - log_q)).sum(axis=-1)
