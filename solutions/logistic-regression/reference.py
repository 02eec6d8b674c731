"""Logistic regression from scratch: a sigmoid that never overflows, and full-batch gradient descent on the mean log-loss."""

import numpy as np


def sigmoid(z):
    """1 / (1 + exp(-z)) elementwise, for a NumPy array z of any shape (0-d included) and real dtype.

    Returns a new float array of z's shape: float64 for float64 and integer z, float32 for float32 z,
    float32 or float16 for float16 z. Never overflows: sigmoid(1000.0) is exactly 1.0 and
    sigmoid(-1000.0) exactly 0.0, with no overflow, divide-by-zero or invalid warning (underflow is fine)."""
    z = np.asarray(z)
    # Integers become float64; float16 is computed in float32 (as torch does), float32 and float64 in their own precision.
    dtype = np.result_type(z.dtype, np.float32) if z.dtype.kind == "f" else np.float64
    out = np.empty(z.shape, dtype=dtype)
    pos = z >= 0
    # exp only ever sees a number <= 0: exp(-z) where z >= 0, exp(z) where z < 0, so it can underflow but never overflow.
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos].astype(dtype)))
    ez = np.exp(z[~pos].astype(dtype))
    out[~pos] = ez / (1.0 + ez)
    return out


def train(X, y, lr=0.1, steps=1000):
    """Logistic regression by `steps` full-batch gradient-descent steps on the mean log-loss, from w = 0, b = 0.

    X: (N, D) array; y: N labels 0/1, of shape (N,) or (N, 1), int or float. Each step computes
    p = sigmoid(X @ w + b), then w -= lr * X.T @ (p - y) / N and b -= lr * mean(p - y).
    Returns (w, b): w a float array of shape (D,), b a float."""
    X = np.asarray(X)
    # Flattened, so that y of shape (N, 1) gives the same answer: p - y with p (N,) and y (N, 1) would broadcast to (N, N).
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    n, d = X.shape
    w, b = np.zeros(d), 0.0
    for _ in range(steps):
        p = sigmoid(X @ w + b)
        err = p - y  # d(log-loss)/dz: the log-loss's 1/p cancels the sigmoid's p(1 - p), so no derivative factor is left
        w -= lr * (X.T @ err) / n
        b -= lr * err.mean()
    return w, float(b)
