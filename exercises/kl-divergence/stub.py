"""KL divergence. Fill in `kl` and `kl_from_logits`; run `mlprep grade kl-divergence` to grade them."""

import numpy as np


def kl(p, q):
    """KL(p || q) = sum_k p_k * log(p_k / q_k) in nats, one value per row (the last axis): p and q are
    NumPy arrays of the same shape, (K,) or (N, K), each row a probability distribution. A 1-D input gives a
    scalar, an (N, K) input an (N,) array; no reduction over rows. Terms with p_k = 0 count as 0
    (0 log 0 = 0, also where q_k = 0); a row with q_k = 0 < p_k gives inf. NumPy warnings are allowed."""
    raise NotImplementedError("kl: sum p * log(p / q) over the last axis, with the p = 0 terms taken as 0")


def kl_from_logits(a, b):
    """KL(softmax(a) || softmax(b)) of each row of the logits a and b (NumPy, (K,) or (N, K), finite),
    computed in log space: finite and accurate even where softmax(b) underflows to 0 (a = [0, 0],
    b = [1e4, 0] gives 5000 - log 2). Shapes as for kl."""
    raise NotImplementedError("kl_from_logits: log_softmax both sides (subtract the row max), then sum p * (log p - log q)")
