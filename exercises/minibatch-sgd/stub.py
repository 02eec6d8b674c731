"""Mini-batch SGD with reshuffling and a relative stopping rule. Fill in `sgd`; run `mlprep grade minibatch-sgd` to grade it."""

import numpy as np


def sgd(grad_fn, w0, data, lr, batch_size, epochs, tol, rng):
    """Mini-batch stochastic gradient descent; returns the final w as a new float64 array of w0's shape.

    Each epoch shuffles the N rows of data with rng (a np.random.Generator, the only source of
    randomness) and splits that order into consecutive batches of batch_size rows, the last one
    shorter when batch_size does not divide N (it is used, with the same lr). For each batch,
    grad_fn(w, data[idx]) is called once and returns the batch-mean gradient g; then w = w - lr * g.
    After each epoch, stop when ||w_end - w_start|| <= tol * ||w_start|| (w at the end and at the start
    of that epoch; Euclidean norms); otherwise stop after `epochs` epochs. w0 and data are left unchanged."""
    raise NotImplementedError("sgd: per epoch, shuffle with rng, step through consecutive batches, then test the relative change")
