"""Weight initialisation and activation statistics (NumPy). Fill in both functions; run `mlprep grade init-scale` to grade them."""

import numpy as np  # noqa: F401 -- your implementation will need it


def init_weights(fan_in, fan_out, scheme, rng):
    """Weights of shape (fan_in, fan_out) for a layer computing h @ W.

    scheme "he": any zero-mean distribution with variance 2 / fan_in; "xavier": variance
    2 / (fan_in + fan_out); "zero": all zeros. Every random number comes from rng (a NumPy
    Generator). Returns a float NumPy array (float64 or float32). Another scheme raises ValueError.
    """
    raise NotImplementedError("init_weights: the variance of the scheme, then zero-mean draws from rng with that variance")


def forward_stats(sizes, scheme):
    """Post-ReLU activation variance of each layer of a bias-free ReLU net of widths `sizes`.

    Builds its own fixed-seed standard-normal batch of at least 256 rows and sizes[0] columns, then
    for each consecutive pair (fan_in, fan_out) of sizes computes h = relu(h @ W) with W from
    init_weights(fan_in, fan_out, scheme, rng) and records np.var(h) over the whole (rows, fan_out)
    output. Returns the len(sizes) - 1 variances (a list, tuple or array of floats); the same
    values on every call.
    """
    raise NotImplementedError("forward_stats: fixed-seed batch, then h = relu(h @ init_weights(...)) layer by layer, recording h.var()")
