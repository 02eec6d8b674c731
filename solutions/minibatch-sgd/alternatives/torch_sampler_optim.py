"""Alternative for `minibatch-sgd`: torch's own pieces, wrapped to the interface.

torch.utils.data's BatchSampler over a RandomSampler draws a new permutation every epoch and keeps
the last partial batch (drop_last=False); torch.optim.SGD (no momentum) takes the step
w -= lr * g on a float64 parameter. The sampler's torch.Generator is seeded from rng, so all
randomness still comes from rng: the same rng seed gives the same batches, another seed others.
"""

import numpy as np
import torch
from torch.utils.data import BatchSampler, RandomSampler


def sgd(grad_fn, w0, data, lr, batch_size, epochs, tol, rng):
    w = torch.nn.Parameter(torch.tensor(np.asarray(w0, dtype=np.float64)))
    optimizer = torch.optim.SGD([w], lr=lr)
    generator = torch.Generator().manual_seed(int(rng.integers(2**62)))
    batches = BatchSampler(RandomSampler(range(len(data)), generator=generator), batch_size, drop_last=False)
    for _ in range(epochs):
        start = w.detach().clone()
        for idx in batches:
            w.grad = torch.as_tensor(np.asarray(grad_fn(w.detach().numpy().copy(), data[idx]), dtype=np.float64))
            optimizer.step()
        if torch.linalg.vector_norm(w.detach() - start) <= tol * torch.linalg.vector_norm(start):
            break
    return w.detach().numpy().copy()
