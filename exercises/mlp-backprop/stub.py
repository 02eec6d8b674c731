"""Backpropagation through a two-layer network (Linear-ReLU-Linear), by hand, in NumPy.

Fill in forward and backward. The contract is in the docstrings; `mlprep show mlp-backprop` shows
the whole task.
"""

import numpy as np


def forward(params, X):
    """scores = relu(X @ W1 + b1) @ W2 + b2, and a cache for backward.

    params: dict of NumPy arrays W1 (D, H), b1 (H,), W2 (H, C), b2 (C,); X: (N, D).
    Returns (scores, cache): scores a NumPy array (N, C); cache anything you like, it is only
    ever handed back to your backward. Keeps float64 inputs in float64; changes no input.
    """
    raise NotImplementedError("forward")


def backward(params, cache, dout):
    """The gradients of sum(scores * dout) with respect to each parameter.

    params: the same dict forward got; cache: what forward returned with the scores; dout: (N, C),
    d(loss)/d(scores) (the grader's comes from the mean softmax cross-entropy).
    Returns a dict with keys "W1", "b1", "W2", "b2" (more keys are ignored), each a NumPy array of
    its parameter's shape. ReLU's derivative at exactly 0 is 0. Changes no input.
    """
    raise NotImplementedError("backward")
