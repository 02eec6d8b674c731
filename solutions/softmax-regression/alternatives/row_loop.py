"""softmax-regression with Python loops over the rows for the loss and gradient (math.fsum for the
sums), the loss returned as a Python float, and new W, b arrays at every step instead of in-place updates."""

import math

import numpy as np


def softmax_ce(logits, y):
    n, k = len(logits), len(logits[0])
    total, grad = 0.0, np.zeros((n, k))
    for i in range(n):
        row = [float(v) for v in logits[i]]
        top = max(row)
        lse = top + math.log(math.fsum(math.exp(v - top) for v in row))
        total += lse - row[int(y[i])]
        for j in range(k):
            grad[i, j] = (math.exp(row[j] - lse) - (j == y[i])) / n
    return total / n, grad


def train(X, y, k, lr, epochs):
    X = np.asarray(X, dtype=np.float64)
    W = np.zeros((X.shape[1], k))
    b = np.zeros(k)
    for _ in range(epochs):
        g = softmax_ce(X @ W + b, y)[1]
        W = W - lr * (X.T @ g)
        b = b - lr * g.sum(axis=0)
    return W, b
