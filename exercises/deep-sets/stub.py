"""deep-sets: a permutation-invariant set classifier with padding and missing features."""

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
        raise NotImplementedError("SetClassifier: phi on 2 * d inputs (values and missing flags), a head on h")

    def forward(self, x, keep):
        raise NotImplementedError("SetClassifier.forward: fill, flag, encode, masked mean over the real points, head")
