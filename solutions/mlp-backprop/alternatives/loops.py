"""Backpropagation written with explicit loops over the indices, as the chain rule reads entry by entry."""

import numpy as np


def forward(params, X):
    W1, b1, W2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
    N, D = X.shape
    H, C = W2.shape
    dtype = np.result_type(X, W1, b1, W2, b2)
    a = np.zeros((N, H), dtype=dtype)
    for n in range(N):
        for j in range(H):
            total = b1[j]
            for d in range(D):
                total = total + X[n, d] * W1[d, j]
            a[n, j] = total
    h = np.where(a > 0, a, 0).astype(dtype)
    scores = np.zeros((N, C), dtype=dtype)
    for n in range(N):
        for c in range(C):
            total = b2[c]
            for j in range(H):
                total = total + h[n, j] * W2[j, c]
            scores[n, c] = total
    return scores, {"X": X.copy(), "a": a, "h": h}


def backward(params, cache, dout):
    W2 = params["W2"]
    X, a, h = cache["X"], cache["a"], cache["h"]
    N, D = X.shape
    H, C = W2.shape
    dtype = np.result_type(X, W2, dout)
    grads = {"W1": np.zeros((D, H), dtype), "b1": np.zeros(H, dtype), "W2": np.zeros((H, C), dtype), "b2": np.zeros(C, dtype)}
    for n in range(N):
        for c in range(C):
            grads["b2"][c] += dout[n, c]
            for j in range(H):
                grads["W2"][j, c] += h[n, j] * dout[n, c]
        for j in range(H):
            if a[n, j] <= 0:  # ReLU blocks the gradient where it was not active (at 0 too)
                continue
            da = 0.0
            for c in range(C):
                da += dout[n, c] * W2[j, c]
            grads["b1"][j] += da
            for d in range(D):
                grads["W1"][d, j] += X[n, d] * da
    return grads
