"""Alternative for `minibatch-sgd`: an index array shuffled in place by rng.shuffle, a while loop over
batch starts, and the stop rule written with squared norms (no square roots).

How it differs from the reference: the order comes from rng.shuffle on one index array that is kept
across epochs (each epoch reshuffles the previous order, still a fresh uniform permutation); the
update is an in-place subtraction on sgd's own copy of w (w0 is never touched); the stopping test
compares ||dw||**2 with tol**2 * ||w_start||**2, the same test without the roots.
"""

import numpy as np


def sgd(grad_fn, w0, data, lr, batch_size, epochs, tol, rng):
    w = np.array(w0, dtype=np.float64, copy=True)
    index = np.arange(data.shape[0])
    for _epoch in range(epochs):
        start_w = w.copy()
        rng.shuffle(index)
        start = 0
        while start < len(index):
            rows = index[start:start + batch_size]
            w -= lr * np.asarray(grad_fn(w.copy(), data[rows]))
            start += batch_size
        dw = w - start_w
        if dw @ dw <= tol * tol * (start_w @ start_w):
            break
    return w
