"""Alternative: the forward written with F.linear, the scale computed at call time, A drawn with
torch.randn / r (another random init), and merge() building the layer through load_state_dict."""

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r, alpha):
        super().__init__()
        base.weight.requires_grad = False
        if base.bias is not None:
            base.bias.requires_grad = False
        self.base, self.r, self.alpha = base, r, alpha
        like = base.weight
        self.A = nn.Parameter(torch.randn(r, base.in_features, dtype=like.dtype, device=like.device) / r)
        self.B = nn.Parameter(like.new_zeros(base.out_features, r))

    def forward(self, x):
        update = F.linear(F.linear(x, self.A), self.B)
        return F.linear(x, self.base.weight, self.base.bias) + (self.alpha / self.r) * update

    def merge(self):
        w = self.base.weight
        merged = nn.Linear(w.shape[1], w.shape[0], bias=self.base.bias is not None, dtype=w.dtype, device=w.device)
        state = {"weight": (w + (self.alpha / self.r) * self.B @ self.A).detach()}
        if self.base.bias is not None:
            state["bias"] = self.base.bias.detach()
        merged.load_state_dict(state)  # copies into the new layer's own tensors
        return merged
