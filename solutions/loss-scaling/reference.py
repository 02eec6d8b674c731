"""Dynamic loss scaling for float16 mixed-precision training (reference solution).

Multiplying the loss by a large scale S multiplies every gradient by S (backward is linear), which
lifts small float16 gradients out of the underflow range. Before the optimizer sees them the
gradients are divided by S again. If S was too large, some scaled gradient overflowed to inf (or
became NaN); that step is skipped and S is reduced. After a long run of clean steps S is raised
again, so it hovers just below the largest value that does not overflow.
"""

import torch


class DynamicLossScaler:
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, min_scale=1.0):
        # A Python float, not an int: scales such as 1.5 * 2**k must not be truncated.
        self.scale = float(init_scale)
        self.growth_factor = float(growth_factor)
        self.backoff_factor = float(backoff_factor)
        self.growth_interval = int(growth_interval)
        self.min_scale = float(min_scale)
        self._clean_steps = 0  # clean (finite) steps in a row since the last change of scale

    def scale_loss(self, loss):
        # Multiplying keeps the autograd graph: backward of the result gives S * grad.
        return loss * self.scale

    def unscale_(self, params):
        grads = [p.grad for p in params if p.grad is not None]  # frozen/unused params have no grad
        with torch.no_grad():
            # Unscale every grad, even after a non-finite one: the caller may inspect or clip them,
            # and a half-unscaled model is a trap for the next step.
            for g in grads:
                g.div_(self.scale)
            # isfinite catches +inf, -inf and NaN (inf - inf and 0 * inf give NaN, not inf).
            return all(bool(torch.isfinite(g).all()) for g in grads)

    def update(self, found_inf):
        if found_inf:
            # Back off, but never below min_scale: repeated halving would otherwise reach 0,
            # and a zero scale turns every later unscale into 0 / 0.
            self.scale = max(self.scale * self.backoff_factor, self.min_scale)
            self._clean_steps = 0
        else:
            self._clean_steps += 1
            if self._clean_steps >= self.growth_interval:
                self.scale *= self.growth_factor
                self._clean_steps = 0


def train_step(model, loss_fn, batch, optimizer, scaler, max_grad_norm=None):
    optimizer.zero_grad()  # gradients would otherwise accumulate across steps
    loss = loss_fn(model, batch)
    scaler.scale_loss(loss).backward()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    # Unscale once, before anything looks at the gradients' size (clipping, the optimizer).
    finite = scaler.unscale_(params)
    if finite:
        if max_grad_norm is not None:
            # The threshold is meant for the true gradients, so clip after unscaling.
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        optimizer.step()
    # On overflow the step is skipped: parameters and optimizer state (Adam's moments and step
    # count) stay as they were; only the scale changes.
    scaler.update(not finite)
    return finite
