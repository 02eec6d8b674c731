"""torchvision.ops.sigmoid_focal_loss, restated: the BCE comes from
F.binary_cross_entropy_with_logits and p_t from torch.sigmoid (p*y + (1-p)*(1-y)) instead of
exp(-BCE). At saturated logits the two p_t differ in the last bits; both are correct."""

import torch
import torch.nn.functional as F


def focal_loss(z, y, alpha=0.25, gamma=2.0):
    p = torch.sigmoid(z)
    ce = F.binary_cross_entropy_with_logits(z, y, reduction="none")
    p_t = p * y + (1 - p) * (1 - y)
    loss = ce * ((1 - p_t) ** gamma)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    return (alpha_t * loss).mean()
