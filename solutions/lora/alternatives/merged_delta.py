"""Alternative: every forward builds the (out, in) update B @ A and applies it as one matrix,
x @ (W + s B A)^T + b; the base is frozen with Module.requires_grad_(False); A starts from a
normal distribution; merge() deep-copies the base and adds the update to the copy."""

import copy

import torch
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base.requires_grad_(False)
        self.scale = alpha / r
        out_features, in_features = base.weight.shape
        self.A = nn.Parameter(torch.zeros(r, in_features, dtype=base.weight.dtype, device=base.weight.device))
        self.B = nn.Parameter(torch.zeros(out_features, r, dtype=base.weight.dtype, device=base.weight.device))
        nn.init.normal_(self.A, std=0.02)

    def forward(self, x):
        delta = self.B @ self.A
        out = x @ (self.base.weight + self.scale * delta).T
        return out if self.base.bias is None else out + self.base.bias

    def merge(self):
        merged = copy.deepcopy(self.base)  # its own storage, the base's dtype and device
        with torch.no_grad():
            merged.weight += self.scale * (self.B @ self.A)
        return merged
