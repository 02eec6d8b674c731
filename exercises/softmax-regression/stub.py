"""Softmax regression (NumPy). Fill in softmax_ce and train; run `mlprep grade softmax-regression` to grade them."""

import numpy as np  # noqa: F401 -- your implementation will need it


def softmax_ce(logits, y):
    """(loss, grad) of the mean softmax cross-entropy.

    logits: (N, K) float64 array; y: (N,) int64 labels in 0..K-1. loss is a scalar (float, NumPy
    scalar or 0-d array) equal to F.cross_entropy(logits, y), finite and exact also for confident
    mistakes at logits of +-1e4; grad is d(loss)/d(logits), an (N, K) float64 array,
    (softmax(logits) - one_hot(y)) / N. logits and y are not modified.
    """
    raise NotImplementedError("softmax_ce: stable log-softmax, mean of -log p[y], grad = (softmax - one_hot) / N")


def train(X, y, k, lr, epochs):
    """Full-batch gradient descent for a linear softmax classifier; returns (W, b).

    X: (N, D) float64; y: (N,) int64 labels in 0..k-1 (a class may be absent); k: the number of
    classes; lr: the step size; epochs: the number of steps (0 or more). Start from W = zeros((D, k))
    and b = zeros(k); each epoch, g = the grad of softmax_ce(X @ W + b, y), then
    W -= lr * X.T @ g and b -= lr * g.sum(0). Returns W (D, k) and b (k,), float64.
    X and y are not modified.
    """
    raise NotImplementedError("train: start from zeros, take `epochs` full-batch gradient steps with softmax_ce's grad")
