"""Dynamic loss scaling for float16 mixed-precision training.

Fill in DynamicLossScaler and train_step. The contract is in the docstrings; `mlprep show
loss-scaling` shows the whole task.
"""

import torch


class DynamicLossScaler:
    """Multiplies the loss by a scale before backward, divides the gradients by it afterwards, and
    adapts the scale: lower after an overflow, higher after a run of clean steps."""

    scale: float  # the current scale

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, min_scale=1.0):
        """Start with scale = init_scale and no clean steps counted. (The grader always uses
        init_scale >= min_scale >= 1 and powers of two for growth_factor and backoff_factor.)"""
        raise NotImplementedError("DynamicLossScaler.__init__: store the settings and start at init_scale")

    def scale_loss(self, loss):
        """loss * scale (keeping the autograd graph, so backward gives scale * the gradients)."""
        raise NotImplementedError("DynamicLossScaler.scale_loss")

    def unscale_(self, params) -> bool:
        """Divide every existing p.grad of params by the scale in place (all of them, even after
        an inf is found); True when every unscaled grad is finite."""
        raise NotImplementedError("DynamicLossScaler.unscale_")

    def update(self, found_inf: bool) -> None:
        """On found_inf: scale = max(scale * backoff_factor, min_scale) and the clean-step count
        restarts. Otherwise count a clean step; after growth_interval clean steps in a row,
        scale *= growth_factor and the count restarts."""
        raise NotImplementedError("DynamicLossScaler.update")


def train_step(model, loss_fn, batch, optimizer, scaler, max_grad_norm=None) -> bool:
    """One mixed-precision step: zero the grads, loss = loss_fn(model, batch), backward of the
    scaled loss, unscale, skip the optimizer step on inf/NaN, clip the unscaled gradients to
    max_grad_norm (when given), optimizer step, scale update. Returns True when the optimizer
    stepped."""
    raise NotImplementedError("train_step")
