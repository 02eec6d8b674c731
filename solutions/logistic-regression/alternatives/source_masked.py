"""Alternative: the source's own code (003), boolean-mask sigmoid and all, with y flattened so an (N, 1) y cannot
broadcast p - y to (N, N). Its sigmoid returns float64 for every dtype (np.empty_like(z, dtype=float))."""

import numpy as np


def sigmoid(z):
    out = np.empty_like(z, dtype=float)
    pos = z >= 0
    out[pos] = 1 / (1 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1 + ez)
    return out


def train(X, y, lr=0.1, steps=1000):
    # X (N, D), y (N,) of 0/1
    y = np.asarray(y).reshape(-1)
    w, b = np.zeros(X.shape[1]), 0.0
    for _ in range(steps):
        p = sigmoid(X @ w + b)
        err = p - y          # dLoss/dz for log loss
        w -= lr * X.T @ err / len(y)
        b -= lr * err.mean()
    return w, b
