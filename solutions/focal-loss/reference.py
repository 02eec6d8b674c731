"""Reference: mean sigmoid focal loss (Lin et al., 2017), computed from the logits."""

import torch


def focal_loss(z, y, alpha=0.25, gamma=2.0):
    """Mean sigmoid focal loss. z: logits, y: float 0/1 targets of the same shape (any shape);
    0 <= alpha <= 1, gamma >= 0. The result's dtype is not graded, only its value."""
    # Binary cross-entropy from the logits in the |z| form, max(z, 0) - z*y + log(1 + exp(-|z|)).
    # exp only ever sees -|z| <= 0, so it cannot overflow, and no log is taken of a probability
    # that has already rounded to 0 (sigmoid(-20) is exactly 0 in float16).
    ce = z.clamp(min=0) - z * y + torch.log1p(torch.exp(-z.abs()))
    # p_t, the probability of the true class, is exp(-CE): it follows the label without a branch
    # and agrees with ce to the last bit of rounding.
    p_t = torch.exp(-ce)
    # alpha weighs the positives, 1 - alpha the negatives.
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    # The modulating factor: near 0 for well-classified elements (p_t near 1), near 1 for hard ones.
    modulator = (1 - p_t) ** gamma
    # The mean over every element, whatever the shape.
    return (alpha_t * modulator * ce).mean()
