"""Alternative for `minibatch-sgd`: a generator of batches, rng.permuted for the order, math.hypot-free
norms via np.sqrt(np.sum(...)), and the epoch count kept explicitly.

How it differs from the reference: batches come from a generator function that yields index
slices; the order is drawn with rng.permuted(np.arange(N)); norms are computed by hand in plain
NumPy sums; the loop is a while loop that tracks the epoch number and a `converged` flag.
"""

import numpy as np


def _batches(order, batch_size):
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def _norm(v):
    return float(np.sqrt(np.sum(v * v)))


def sgd(grad_fn, w0, data, lr, batch_size, epochs, tol, rng):
    w = np.asarray(w0, dtype=np.float64).copy()
    epoch, converged = 0, False
    while epoch < epochs and not converged:
        before = w
        for idx in _batches(rng.permuted(np.arange(len(data))), batch_size):
            g = grad_fn(w, data[idx])
            w = w - lr * g
        converged = _norm(w - before) <= tol * _norm(before)
        epoch += 1
    return w
