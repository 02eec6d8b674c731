"""BatchNorm1d and layer_norm in torch. Fill in the class and the function; run `mlprep grade batchnorm` to grade them."""

import torch  # noqa: F401 -- your implementation will need it


class BatchNorm1d:
    """Batch normalisation of (N, C) inputs, with training and eval modes and running statistics.

    BatchNorm1d(num_features, eps=1e-5, momentum=0.1) starts in training mode with running_mean = 0
    and running_var = 1 (tensors of shape (num_features,)). Calling it on a tensor x of shape (N, C):
    - training mode: returns (x - mean) / sqrt(var + eps) with each column's batch mean and BIASED
      variance (divide by N), and updates running = (1 - momentum) * running + momentum * batch, with
      the UNBIASED batch variance (divide by N - 1) for running_var. N >= 2.
    - eval mode: returns (x - running_mean) / sqrt(running_var + eps) and changes nothing.
    Returns a tensor of x's shape on x's device, float64 for float64 x (float16 x may come back as
    float16 or float32). float16 x is accurate to 1e-3 even at a mean of 1000. x is not modified.
    Affine parameters are optional; if you add them they must start at gamma = 1, beta = 0.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        raise NotImplementedError("BatchNorm1d: store eps and momentum, start in training mode, running_mean = 0, running_var = 1")

    def train(self, mode=True):
        raise NotImplementedError("BatchNorm1d.train: switch to training mode")

    def eval(self):
        raise NotImplementedError("BatchNorm1d.eval: switch to eval mode")

    def __call__(self, x):
        raise NotImplementedError("BatchNorm1d: batch statistics in training (and update the running ones), running statistics in eval")


def layer_norm(x, gamma, beta, eps=1e-5):
    """Normalise each example over its last dimension: (x - mean) / sqrt(var + eps) * gamma + beta,
    with the mean and BIASED variance of the last dimension. x: (..., D) tensor; gamma, beta: (D,)
    tensors of x's dtype and device. Returns a tensor of x's shape, dtype and device; the same in
    training and inference (no batch statistics). The inputs are not modified."""
    raise NotImplementedError("layer_norm: mean and biased variance over dim=-1, normalise, then * gamma + beta")
