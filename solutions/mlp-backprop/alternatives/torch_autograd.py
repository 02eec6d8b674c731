"""Linear-ReLU-Linear with torch autograd behind the NumPy interface: the cache holds the
tensors of the graph, backward asks autograd for d(sum(scores * dout))/d(params)."""

import numpy as np
import torch

KEYS = ("W1", "b1", "W2", "b2")


def forward(params, X):
    leaves = {k: torch.tensor(np.asarray(params[k]), requires_grad=True) for k in KEYS}
    x = torch.tensor(np.asarray(X))
    scores = torch.relu(x @ leaves["W1"] + leaves["b1"]) @ leaves["W2"] + leaves["b2"]  # torch.relu: derivative 0 at 0
    return scores.detach().numpy().copy(), {"scores": scores, "leaves": leaves}


def backward(params, cache, dout):
    leaves = [cache["leaves"][k] for k in KEYS]
    upstream = torch.tensor(np.asarray(dout), dtype=cache["scores"].dtype)
    grads = torch.autograd.grad(cache["scores"], leaves, grad_outputs=upstream, retain_graph=True)
    return {k: g.numpy().copy() for k, g in zip(KEYS, grads)}
