"""lora: a low-rank adapter (LoRA) around a frozen nn.Linear. Fill in the class; run `mlprep grade lora`."""

import math  # noqa: F401 (for the init of A, if you like)

import torch  # noqa: F401
from torch import nn


class LoRALinear(nn.Module):
    """LoRA around an existing nn.Linear `base` (in -> out): base(x) + (alpha / r) * x @ A.T @ B.T.

    LoRALinear(base, r, alpha) keeps `base` itself (not a copy) and freezes it: requires_grad is
    False on its weight and bias. The only trainable parameters are the nn.Parameters self.A, of
    shape (r, in), random at init (any nonzero random values), and self.B, of shape (out, r), zeros
    at init, so the adapted layer starts out exactly as the base. A and B have the base's dtype and
    device."""

    def __init__(self, base: nn.Linear, r, alpha):
        super().__init__()
        raise NotImplementedError("__init__: freeze base, create A (r, in) random and B (out, r) zeros like base.weight")

    def forward(self, x):
        """x (..., in) -> (..., out): base(x) + (alpha / r) * x @ A.T @ B.T."""
        raise NotImplementedError("forward: the base's output plus the scaled low-rank update")

    def merge(self) -> nn.Linear:
        """A new nn.Linear (the base's dtype and device, its own weight and bias) equal to the adapted
        forward: weight = base.weight + (alpha / r) * B @ A, bias = a copy of base.bias (none if the base
        has none). The module and the base are left unchanged."""
        raise NotImplementedError("merge: fold (alpha / r) * B @ A into a copy of the base's weight")
