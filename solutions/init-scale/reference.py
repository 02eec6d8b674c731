"""Reference for `init-scale`: He and Xavier initialisation, zero init, and the variance of activations with depth.

He keeps Var(w) = 2 / fan_in: a ReLU zeroes half of each pre-activation's mass, so E[h**2] = Var(z) / 2, and
fan_in * Var(w) = 2 gives every layer the same Var(z). Xavier's 2 / (fan_in + fan_out) is 1 / fan_in for a square
layer: half of what ReLU needs, so the variance halves at every layer and collapses over 20. Any zero-mean
distribution with the right variance works; this one is normal, drawn from the caller's generator only.
"""

import numpy as np

BATCH_ROWS = 512  # forward_stats' own batch: enough rows that a layer's variance is known to about 1%
SEED = 0


def init_weights(fan_in, fan_out, scheme, rng):
    """(fan_in, fan_out) weights: "he" with variance 2 / fan_in, "xavier" with 2 / (fan_in + fan_out), "zero" all zeros."""
    if scheme == "zero":
        return np.zeros((fan_in, fan_out))
    if scheme == "he":
        var = 2.0 / fan_in
    elif scheme == "xavier":
        var = 2.0 / (fan_in + fan_out)
    else:
        raise ValueError(f"unknown scheme {scheme!r}: expected 'he', 'xavier' or 'zero'")
    return rng.standard_normal((fan_in, fan_out)) * np.sqrt(var)


def forward_stats(sizes, scheme):
    """Post-ReLU activation variance (over the whole batch x width output) of each layer of a bias-free ReLU net
    with widths `sizes`, initialised with `scheme`, on a fixed-seed standard-normal batch."""
    rng = np.random.default_rng(SEED)
    h = rng.standard_normal((BATCH_ROWS, sizes[0]))
    variances = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        z = h @ init_weights(fan_in, fan_out, scheme, rng)
        h = np.maximum(z, 0.0)
        variances.append(float(h.var()))
    return variances
