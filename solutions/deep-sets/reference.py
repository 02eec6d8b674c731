"""Reference for `deep-sets`: a permutation-invariant set classifier with padding and missing features."""

import torch
import torch.nn as nn


class SetClassifier(nn.Module):
    """Deep Sets: phi encodes each point on its own, a masked mean pools the real points, a head
    maps the pooled vector to n_cls logits.

    forward(x, keep): x (B, N, d) float, NaN where a feature of a real point is missing; keep (B, N)
    bool, True for real points. Pads (keep False) may hold anything, NaN or huge values, and change
    nothing, gradients included. Returns logits (B, n_cls), each set's independent of the others;
    an all-padded set gives finite logits."""

    def __init__(self, d, h, n_cls):
        super().__init__()
        # Each feature comes with a missing flag: 2 * d inputs per point.
        self.phi = nn.Sequential(nn.Linear(2 * d, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU())
        self.head = nn.Linear(h, n_cls)

    def forward(self, x, keep):
        real = keep.unsqueeze(-1)  # (B, N, 1)
        missing = torch.isnan(x) & real
        # Zero the pads and the missing features BEFORE phi, with where (not a product: 0 * NaN is NaN),
        # so that neither reaches phi's values nor its gradients.
        filled = torch.where(real & ~missing, x, torch.zeros((), dtype=x.dtype, device=x.device))
        z = self.phi(torch.cat([filled, missing.to(x.dtype)], dim=-1))  # (B, N, h)
        z = torch.where(real, z, torch.zeros((), dtype=z.dtype, device=z.device))
        # Mean over the real points of each set; an all-padded set divides 0 by 1, not by 0.
        count = keep.sum(dim=1, keepdim=True).clamp(min=1).to(z.dtype)
        return self.head(z.sum(dim=1) / count)
