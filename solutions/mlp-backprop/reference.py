"""Backpropagation through Linear-ReLU-Linear by hand (reference solution).

forward keeps what backward needs: the input X (for dW1), the pre-activation a (for ReLU's mask)
and the hidden activation h (for dW2). backward applies the chain rule from the scores down:
for out = inp @ W + b, d(inp) = d(out) @ W.T, dW = inp.T @ d(out), db = d(out) summed over the
batch (b is broadcast to every row, so every row's gradient lands on it). ReLU passes the
gradient where its input was positive and blocks it elsewhere, at exactly 0 included (the
convention torch's autograd uses).
"""

import numpy as np


def forward(params, X):
    a = X @ params["W1"] + params["b1"]  # (N, H) pre-activation
    h = np.maximum(a, 0)  # (N, H) hidden activation
    scores = h @ params["W2"] + params["b2"]  # (N, C)
    return scores, (X, a, h)


def backward(params, cache, dout):
    X, a, h = cache
    dW2 = h.T @ dout  # (H, C)
    db2 = dout.sum(axis=0)  # (C,)
    dh = dout @ params["W2"].T  # (N, H)
    da = dh * (a > 0)  # ReLU: gradient only where the pre-activation was positive
    dW1 = X.T @ da  # (D, H)
    db1 = da.sum(axis=0)  # (H,)
    return {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}
