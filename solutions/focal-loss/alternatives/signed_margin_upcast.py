"""Signed margin m = (2y - 1) z, computed in float32 at least (half inputs are upcast, and the
float32 result is returned as is, a wider dtype than the input): BCE = softplus(-m) and
1 - p_t = sigmoid(-m) directly, so there is no 1 - p_t cancellation at all."""

import torch
import torch.nn.functional as F


def focal_loss(z, y, alpha=0.25, gamma=2.0):
    wide = torch.promote_types(z.dtype, torch.float32)
    z, y = z.to(wide), y.to(wide)
    margin = (2 * y - 1) * z
    ce = F.softplus(-margin)
    one_minus_p_t = torch.sigmoid(-margin)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    return (alpha_t * one_minus_p_t.pow(gamma) * ce).mean()
