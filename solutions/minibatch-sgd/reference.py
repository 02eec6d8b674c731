"""Reference for `minibatch-sgd`: mini-batch SGD with a fresh permutation every epoch and a
relative-change stopping rule checked once per epoch.

Each epoch draws one permutation of the row indices from `rng` and walks it in consecutive slices
of batch_size (the last one shorter when batch_size does not divide N), one grad_fn call and one
step of the same lr per slice. After the epoch, it stops when the epoch moved w by at most tol
times the size w had at the epoch's start: a relative test, so rescaling the problem (w and the
targets by 2**20, say) changes nothing about when it stops.
"""

import numpy as np


def sgd(grad_fn, w0, data, lr, batch_size, epochs, tol, rng):
    """Mini-batch SGD; returns the final w (a new array, w0 is left unchanged)."""
    w = np.array(w0, dtype=np.float64)
    n = len(data)
    for _ in range(epochs):
        w_start = w
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            batch = data[order[start:start + batch_size]]
            w = w - lr * grad_fn(w, batch)
        if np.linalg.norm(w - w_start) <= tol * np.linalg.norm(w_start):
            break
    return w
