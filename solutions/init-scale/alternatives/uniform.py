"""Alternative: uniform weights on [-b, b] with b = sqrt(3 * var) (U(-b, b) has variance b**2 / 3), as
torch.nn.init.kaiming_uniform_ and xavier_uniform_ draw them; forward_stats in float32 on a 256-row batch."""

import numpy as np

VARIANCE = {"he": lambda fan_in, fan_out: 2.0 / fan_in, "xavier": lambda fan_in, fan_out: 2.0 / (fan_in + fan_out)}


def init_weights(fan_in, fan_out, scheme, rng):
    if scheme == "zero":
        return np.zeros((fan_in, fan_out))
    if scheme not in VARIANCE:
        raise ValueError(f"scheme must be 'he', 'xavier' or 'zero', not {scheme!r}")
    bound = np.sqrt(3.0 * VARIANCE[scheme](fan_in, fan_out))
    return rng.uniform(-bound, bound, size=(fan_in, fan_out))


def forward_stats(sizes, scheme):
    rng = np.random.default_rng(1234)
    h = rng.standard_normal((256, sizes[0])).astype(np.float32)
    out = []
    for i in range(len(sizes) - 1):
        w = init_weights(sizes[i], sizes[i + 1], scheme, rng).astype(np.float32)
        h = np.maximum(h @ w, 0)
        out.append(float(np.var(h)))
    return out
