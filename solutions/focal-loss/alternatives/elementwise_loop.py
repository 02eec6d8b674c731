"""A Python loop over the elements: each one branches on its label and uses the stable softplus
of the signed logit; the per-element losses are stacked and averaged. Slow, but correct and
differentiable."""

import torch
import torch.nn.functional as F


def focal_loss(z, y, alpha=0.25, gamma=2.0):
    losses = []
    for z_i, y_i in zip(z.reshape(-1), y.reshape(-1)):
        if y_i.item() == 1:
            ce, miss, weight = F.softplus(-z_i), torch.sigmoid(-z_i), alpha
        else:
            ce, miss, weight = F.softplus(z_i), torch.sigmoid(z_i), 1 - alpha
        losses.append(weight * miss ** gamma * ce)
    return torch.stack(losses).mean()
