"""Alternative: the source's own code (seed 003), as written there: NaN -> 0 plus a missing flag,
phi on every point, pads zeroed by multiplying with keep, sum / count clamped to 1. Finite pads up to
1e30 stay finite through phi, so 1e30 * 0 = 0; NaN pads are filled by nan_to_num first."""

import torch
import torch.nn as nn


class SetClassifier(nn.Module):
    def __init__(self, d=6, h=64, n_cls=2):
        super().__init__()
        self.phi = nn.Sequential(
            nn.Linear(2 * d, h), nn.ReLU(),
            nn.Linear(h, h), nn.ReLU())
        self.head = nn.Linear(h, n_cls)

    def forward(self, x, keep):
        # x: (B, T, 6), NaN where a feature is missing
        # keep: (B, T) bool, True for real points
        miss = torch.isnan(x).float()
        x = torch.nan_to_num(x, nan=0.0)
        z = self.phi(torch.cat([x, miss], -1))
        z = z * keep.unsqueeze(-1).float()
        n = keep.sum(1, keepdim=True).clamp(min=1)
        return self.head(z.sum(1) / n)
