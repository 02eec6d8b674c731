"""Reference for `causal-mask`: masked scaled dot-product attention and a next-token loss."""

import math

import torch
import torch.nn.functional as F


def causal_attention(q, k, v, keep):
    """Scaled dot-product attention. q, k, v: (B, H, T, d); keep: (B, T) bool, True for real
    tokens (False for padding). Query t sees keys 0..t that are real. A query that sees no key
    (e.g. a pad position under left padding) gets zeros, never NaN. Outputs at padded query
    positions are otherwise not graded. Gradients are finite everywhere, also for queries that
    see no key. Returns (B, H, T, d)."""
    T, d = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d)
    # Lower triangle, diagonal included: query t may look at keys 0..t.
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    # The padding mask hides KEYS (the last axis): a pad token must not be looked at by anyone.
    allowed = causal[None, None] & keep[:, None, None, :]  # (B, 1, T, T)
    # A query that sees no key would softmax over nothing but -inf, which is NaN in the values
    # and in the gradients. Let it see every key instead (any finite row will do) and zero its
    # output below; the zeroing also zeroes its gradient.
    sees_something = allowed.any(dim=-1, keepdim=True)  # (B, 1, T, 1)
    allowed = allowed | ~sees_something
    # Scale q before the product: in float16, q.k can overflow to inf while q.k / sqrt(d) fits.
    scores = (q * scale) @ k.transpose(-2, -1)
    # Mask BEFORE the softmax, with -inf, so the allowed weights are renormalised among themselves.
    scores = scores.masked_fill(~allowed, float("-inf"))
    weights = scores.softmax(dim=-1)
    out = weights @ v
    return out * sees_something


def lm_loss(model, x, pad_id):
    """Next-token loss: model maps ids (B, T') to logits (B, T', V); predict x[:, t+1] from
    x[:, :t+1]; mean cross-entropy over targets that are not pad_id (0.0 when there are none).
    The model is causal, so calling it on x[:, :-1] or on x and dropping the last position are
    both right. T = 1 has no targets (0.0). Returns a scalar tensor that backpropagates to the
    model's parameters, the 0.0 included."""
    # Position t of a causal model has seen x[:, :t+1], so it predicts the NEXT token x[:, t+1].
    inputs, targets = x[:, :-1], x[:, 1:]
    logits = model(inputs)  # (B, T-1, V)
    real = targets != pad_id
    # Sum over the real targets and divide by their count (at least 1): a plain mean with
    # ignore_index is 0/0 = NaN when there is no real target (all pads, or T = 1); this gives a
    # 0.0 that is still part of the graph, so backward() works and the gradients are zero.
    total = F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=pad_id, reduction="sum")
    return total / real.sum().clamp(min=1)
