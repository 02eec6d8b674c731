"""DynamicLossScaler as a thin wrapper around torch.amp.GradScaler.

How it differs from the reference: the scale and the clean-step counter are GradScaler's own
tensors (a float32 scale, an int32 growth tracker), and GradScaler's own update() changes them;
unscaling and the inf/NaN check are GradScaler's kernel (torch._amp_foreach_non_finite_check_and_unscale_,
which multiplies by a float32 1/scale). Two adapters are needed:
- GradScaler's public unscale_ takes an optimizer and refuses float16 gradients, so unscale_ here
  calls the method behind it, GradScaler._unscale_grads_, with a stand-in holding the params and
  allow_fp16=True (as GradScaler does internally for its own fused paths).
- update(found_inf) records the given flag where GradScaler's update() reads the flags of the
  iteration (its per-optimizer state), then calls update().
min_scale is not a GradScaler feature: after GradScaler's update, a scale below min_scale is
raised to min_scale with GradScaler's public update(new_scale=...). Its growth tracker was already
restarted by the backoff, so the count behaves as the contract says.
"""

import types

import torch


class DynamicLossScaler:
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, min_scale=1.0):
        self._gs = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                        backoff_factor=backoff_factor, growth_interval=growth_interval)
        self._gs.scale(torch.zeros(()))  # GradScaler creates its scale tensor lazily, on first use
        self.min_scale = float(min_scale)

    @property
    def scale(self):
        return self._gs.get_scale()

    def scale_loss(self, loss):
        return self._gs.scale(loss)

    def unscale_(self, params):
        holder = types.SimpleNamespace(param_groups=[{"params": list(params)}])
        inv_scale = self._gs._scale.double().reciprocal().float()
        found_inf = torch.zeros((), dtype=torch.float32, device=self._gs._scale.device)
        found_per_device = self._gs._unscale_grads_(holder, inv_scale, found_inf, True)
        return not any(bool(flag.item()) for flag in found_per_device.values())

    def update(self, found_inf):
        flag = torch.full((), 1.0 if found_inf else 0.0, device=self._gs._scale.device)
        self._gs._per_optimizer_states[0]["found_inf_per_device"] = {flag.device: flag}
        self._gs.update()
        if self._gs.get_scale() < self.min_scale:
            self._gs.update(new_scale=self.min_scale)


def train_step(model, loss_fn, batch, optimizer, scaler, max_grad_norm=None):
    optimizer.zero_grad(set_to_none=False)
    scaler.scale_loss(loss_fn(model, batch)).backward()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    stepped = scaler.unscale_(params)
    if stepped:
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm, foreach=False)
        optimizer.step()
    scaler.update(found_inf=not stepped)
    return stepped
