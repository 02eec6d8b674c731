"""Plain Python loops and hand-written clipping.

How it differs from the reference: the scale is a property over a private float; unscale_
multiplies by the reciprocal 1/scale in a loop and ORs per-tensor isnan/isinf tests together;
update counts clean steps towards a growth target; train_step zeroes through the model, takes
the parameters from the model (those that got a gradient), and clips by hand: total norm
accumulated in float32, no epsilon, applied only when the norm exceeds the bound.
"""

import math

import torch


class DynamicLossScaler:
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, min_scale=1.0):
        self._scale = init_scale * 1.0
        self._growth, self._backoff = growth_factor, backoff_factor
        self._interval, self._floor = growth_interval, min_scale
        self._good = 0

    @property
    def scale(self):
        return self._scale

    def scale_loss(self, loss):
        return self._scale * loss

    def unscale_(self, params):
        inv = 1.0 / self._scale
        bad = False
        for p in params:
            if p.grad is None:
                continue
            p.grad.mul_(inv)
            bad = bad or bool(torch.isnan(p.grad).any()) or bool(torch.isinf(p.grad).any())
        return not bad

    def update(self, found_inf):
        if found_inf:
            self._scale = self._scale * self._backoff
            if self._scale < self._floor:
                self._scale = self._floor * 1.0
            self._good = 0
            return
        self._good = self._good + 1
        if self._good == self._interval:
            self._scale = self._scale * self._growth
            self._good = 0


def train_step(model, loss_fn, batch, optimizer, scaler, max_grad_norm=None):
    model.zero_grad()
    loss = loss_fn(model, batch)
    scaler.scale_loss(loss).backward()
    with_grad = [p for p in model.parameters() if p.grad is not None]
    if not scaler.unscale_(with_grad):
        scaler.update(True)
        return False
    if max_grad_norm is not None:
        total_sq = 0.0
        for p in with_grad:
            total_sq += float(p.grad.float().pow(2).sum())
        total = math.sqrt(total_sq)
        if total > max_grad_norm:
            for p in with_grad:
                p.grad.mul_(max_grad_norm / total)
    optimizer.step()
    scaler.update(False)
    return True
