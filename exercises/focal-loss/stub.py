"""Sigmoid focal loss (torch). Fill in focal_loss; keep the signature."""

import torch  # noqa: F401 -- your implementation will need it


def focal_loss(z, y, alpha=0.25, gamma=2.0):
    """Mean sigmoid focal loss. z: logits, y: float 0/1 targets of the same shape (any shape);
    0 <= alpha <= 1, gamma >= 0. The result's dtype is not graded, only its value.

    Per element, with p = sigmoid(z):
        p_t     = p where y = 1, 1 - p where y = 0     (probability of the true class)
        alpha_t = alpha where y = 1, 1 - alpha where y = 0
        loss    = alpha_t * (1 - p_t) ** gamma * BCE(z, y)
    and the result is the mean over every element (a scalar). It must be a torch value that
    autograd can differentiate with respect to z, finite (value and gradient) for saturated
    logits such as +-1e4 and for float16 / bfloat16 inputs, and it must not modify z or y.
    float64 inputs are computed in float64 (a float64 or Python float result); float16 / bfloat16
    inputs may give a float32 result.
    """
    raise NotImplementedError("focal_loss: compute the per-element focal loss from the logits z, then average it")
