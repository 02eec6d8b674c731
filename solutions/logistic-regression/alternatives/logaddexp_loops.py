"""Alternative: the sigmoid as exp(-log(1 + exp(-z))) with np.logaddexp (no overflow anywhere), and a training loop
that accumulates the gradient row by row in plain Python, returning a list."""

import math

import numpy as np


def sigmoid(z):
    z = np.asarray(z)
    work = np.float32 if z.dtype in (np.float16, np.float32) else np.float64
    return np.exp(-np.logaddexp(0, -z.astype(work)))


def train(X, y, lr=0.1, steps=1000):
    rows = np.asarray(X, dtype=np.float64).tolist()
    labels = [float(v) for v in np.asarray(y).reshape(-1)]
    n, d = len(rows), len(rows[0])
    w, b = [0.0] * d, 0.0
    for _ in range(steps):
        gw, gb = [0.0] * d, 0.0
        for row, label in zip(rows, labels):
            z = sum(wi * xi for wi, xi in zip(w, row)) + b
            p = 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))
            for j in range(d):
                gw[j] += (p - label) * row[j]
            gb += p - label
        w = [wi - lr * g / n for wi, g in zip(w, gw)]
        b -= lr * gb / n
    return [np.array(w), b]
