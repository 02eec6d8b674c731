"""Logistic regression from scratch. Fill in `sigmoid` and `train`; run `mlprep grade logistic-regression` to grade them."""

import numpy as np


def sigmoid(z):
    """1 / (1 + exp(-z)) elementwise, for a NumPy array z of any shape (0-d included) and real dtype.

    Returns a new float array of z's shape: float64 for float64 and integer z, float32 for float32 z,
    float32 or float16 for float16 z. Never overflows: sigmoid(1000.0) is exactly 1.0 and
    sigmoid(-1000.0) exactly 0.0, with no overflow, divide-by-zero or invalid warning (underflow is fine)."""
    raise NotImplementedError("sigmoid: compute exp only of numbers <= 0, one formula for z >= 0 and another for z < 0")


def train(X, y, lr=0.1, steps=1000):
    """Logistic regression by `steps` full-batch gradient-descent steps on the mean log-loss, from w = 0, b = 0.

    X: (N, D) array; y: N labels 0/1, of shape (N,) or (N, 1), int or float. Each step computes
    p = sigmoid(X @ w + b), then w -= lr * X.T @ (p - y) / N and b -= lr * mean(p - y).
    Returns (w, b): w a float array of shape (D,), b a float."""
    raise NotImplementedError("train: start from zeros and take `steps` gradient steps on the mean log-loss")
