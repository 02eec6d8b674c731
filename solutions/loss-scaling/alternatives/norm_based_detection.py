"""Overflow detection through the total gradient norm, with foreach ops.

How it differs from the reference: unscale_ divides all gradients with torch._foreach_div_
(grouped by device and dtype) and detects inf/NaN the way the classic recipe suggests, "check
whether the gradient norm is inf or NaN": the total norm, computed in float64 so that finite
gradients can never overflow it, is finite exactly when every gradient is. update counts down to
the next growth instead of counting up. train_step sets the grads to None by hand and clips with
foreach ops: per-tensor norms from torch._foreach_norm, one coefficient, torch._foreach_mul_.
"""

from collections import defaultdict

import torch


class DynamicLossScaler:
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, min_scale=1.0):
        self.scale = float(init_scale)
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval, self.min_scale = growth_interval, min_scale
        self._until_growth = growth_interval

    def scale_loss(self, loss):
        return loss.mul(self.scale)

    @torch.no_grad()
    def unscale_(self, params):
        groups = defaultdict(list)
        for p in params:
            if p.grad is not None:
                groups[(p.grad.device, p.grad.dtype)].append(p.grad)
        total = 0.0
        for grads in groups.values():
            torch._foreach_div_(grads, self.scale)
            norms = torch.stack([torch.linalg.vector_norm(g, dtype=torch.float64) for g in grads])
            total += float(torch.linalg.vector_norm(norms))
        return total == total and total != float("inf")

    def update(self, found_inf):
        if found_inf:
            self.scale = max(self.scale * self.backoff_factor, self.min_scale)
            self._until_growth = self.growth_interval
            return
        self._until_growth -= 1
        if self._until_growth == 0:
            self.scale *= self.growth_factor
            self._until_growth = self.growth_interval


def train_step(model, loss_fn, batch, optimizer, scaler, max_grad_norm=None):
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None
    scaler.scale_loss(loss_fn(model, batch)).backward()
    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    ok = scaler.unscale_(params)
    if ok and max_grad_norm is not None:
        grads = [p.grad for p in params]
        total = float(torch.linalg.vector_norm(torch.stack([n.double().cpu() for n in torch._foreach_norm(grads)])))
        if total > max_grad_norm:
            torch._foreach_mul_(grads, max_grad_norm / total)
    if ok:
        optimizer.step()
    scaler.update(not ok)
    return ok
