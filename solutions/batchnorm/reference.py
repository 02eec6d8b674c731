"""Reference for `batchnorm`: BatchNorm1d with train/eval modes and running statistics, and layer_norm.

Statistics are computed in at least float32 (float16 input is upcast first): at a mean of 1000, float16
rounds the mean to a multiple of 0.5, so x - mean would be off by up to 0.25 for data of unit spread.
The training output uses the biased batch variance (divide by N); the running variance is updated with
the unbiased one (divide by N - 1), with torch's momentum convention (momentum weighs the new batch).
"""

import torch


class BatchNorm1d:
    """Batch normalisation of (N, C) inputs over the batch axis, without affine parameters."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.training = True
        self.running_mean = torch.zeros(num_features)
        self.running_var = torch.ones(num_features)

    def train(self, mode=True):
        self.training = mode
        return self

    def eval(self):
        return self.train(False)

    def __call__(self, x):
        xc = x.to(torch.promote_types(x.dtype, torch.float32))
        if self.training:
            mean = xc.mean(dim=0)
            var = xc.var(dim=0, correction=0)
            self._update_running_stats(xc)
        else:
            mean = self.running_mean.to(xc.device, xc.dtype)
            var = self.running_var.to(xc.device, xc.dtype)
        return ((xc - mean) / torch.sqrt(var + self.eps)).to(x.dtype)

    def _update_running_stats(self, xc):
        m = self.momentum
        with torch.no_grad():
            batch_mean = xc.mean(dim=0)
            batch_var = xc.var(dim=0, correction=1)
            self.running_mean = (1 - m) * self.running_mean.to(xc.device) + m * batch_mean
            self.running_var = (1 - m) * self.running_var.to(xc.device) + m * batch_var


def layer_norm(x, gamma, beta, eps=1e-5):
    """Normalise each example over its last dimension (biased variance), then scale and shift."""
    xc = x.to(torch.promote_types(x.dtype, torch.float32))
    mean = xc.mean(dim=-1, keepdim=True)
    var = xc.var(dim=-1, keepdim=True, correction=0)
    return ((xc - mean) / torch.sqrt(var + eps) * gamma + beta).to(x.dtype)
