"""lora: a low-rank adapter (LoRA) around a frozen nn.Linear, and merging it back into one layer."""

import math

import torch
from torch import nn


class LoRALinear(nn.Module):
    """y = base(x) + (alpha / r) * x @ A.T @ B.T, with the base frozen and only A (r, in), B (out, r) trained."""

    def __init__(self, base: nn.Linear, r, alpha):
        super().__init__()
        self.base = base  # the layer itself, not a copy: freezing it here freezes the caller's layer
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.r, self.alpha = r, alpha
        self.scaling = alpha / r
        factory = {"dtype": base.weight.dtype, "device": base.weight.device}
        self.A = nn.Parameter(torch.empty(r, base.in_features, **factory))
        self.B = nn.Parameter(torch.zeros(base.out_features, r, **factory))  # B = 0: the adapted layer starts as the base
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))  # as PEFT and nn.Linear do

    def forward(self, x):
        # Two thin products, (..., in) -> (..., r) -> (..., out): never the (out, in) matrix B @ A.
        return self.base(x) + self.scaling * ((x @ self.A.T) @ self.B.T)

    @torch.no_grad()
    def merge(self) -> nn.Linear:
        """A new nn.Linear computing the adapted forward, with weights of its own: the module and the base are untouched."""
        base = self.base
        merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None,
                           dtype=base.weight.dtype, device=base.weight.device)
        delta = self.scaling * (self.B @ self.A)  # (out, r) @ (r, in): the weight's own layout
        merged.weight.copy_(base.weight + delta)
        if base.bias is not None:
            merged.bias.copy_(base.bias)
        return merged
