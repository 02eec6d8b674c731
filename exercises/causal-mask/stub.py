"""causal-mask: masked scaled dot-product attention, and the next-token (language-model) loss."""

import math

import torch
import torch.nn.functional as F


def causal_attention(q, k, v, keep):
    """Scaled dot-product attention. q, k, v: (B, H, T, d); keep: (B, T) bool, True for real
    tokens (False for padding). Query t sees keys 0..t that are real. A query that sees no key
    (e.g. a pad position under left padding) gets zeros, never NaN. Outputs at padded query
    positions are otherwise not graded. Gradients are finite everywhere, also for queries that
    see no key. Returns (B, H, T, d)."""
    raise NotImplementedError("causal_attention: build the causal & key-padding mask, mask the scaled scores, softmax")


def lm_loss(model, x, pad_id):
    """Next-token loss: model maps ids (B, T') to logits (B, T', V); predict x[:, t+1] from
    x[:, :t+1]; mean cross-entropy over targets that are not pad_id (0.0 when there are none).
    The model is causal, so calling it on x[:, :-1] or on x and dropping the last position are
    both right. T = 1 has no targets (0.0). Returns a scalar tensor that backpropagates to the
    model's parameters, the 0.0 included."""
    raise NotImplementedError("lm_loss: shift the targets by one, leave the pads out of the mean")
