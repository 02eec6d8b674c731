"""Alternative: one set at a time. Select the set's real points with boolean indexing (the pads never
enter the computation at all), fill missing features with 0 and append the flags, encode, average;
an empty set pools to zeros. LayerNorm inside phi normalises each point on its own (no batch mixing)."""

import torch
from torch import nn


class SetClassifier(nn.Module):
    def __init__(self, d, h, n_cls):
        super().__init__()
        self.h = h
        self.encode = nn.Sequential(nn.Linear(2 * d, h), nn.LayerNorm(h), nn.GELU(), nn.Linear(h, h), nn.Tanh())
        self.decode = nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, n_cls))

    def forward(self, x, keep):
        pooled = []
        for points, mask in zip(x, keep):
            real = points[mask]  # (n, d): only this set's real points
            if real.shape[0] == 0:
                pooled.append(torch.zeros(self.h, dtype=x.dtype, device=x.device))
                continue
            flags = torch.isnan(real)
            values = real.masked_fill(flags, 0.0)
            pooled.append(self.encode(torch.cat([values, flags.to(x.dtype)], dim=1)).mean(dim=0))
        return self.decode(torch.stack(pooled))
