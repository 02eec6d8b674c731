"""Alternative: random signs times the target standard deviation (zero mean, the exact variance, the lightest
tails possible), and tuples where the contract allows them."""

import math

import numpy as np


def init_weights(fan_in, fan_out, scheme, rng):
    if scheme == "zero":
        return np.zeros((fan_in, fan_out))
    if scheme == "he":
        std = math.sqrt(2 / fan_in)
    elif scheme == "xavier":
        std = math.sqrt(2 / (fan_in + fan_out))
    else:
        raise ValueError(scheme)
    signs = rng.integers(0, 2, size=(fan_in, fan_out)) * 2 - 1
    return signs * std


def forward_stats(sizes, scheme):
    rng = np.random.default_rng(2**31 - 1)
    h = rng.normal(size=(300, sizes[0]))
    stats = []
    for layer in range(1, len(sizes)):
        h = np.clip(h @ init_weights(sizes[layer - 1], sizes[layer], scheme, rng), 0, None)
        stats.append(h.var())
    return tuple(stats)
