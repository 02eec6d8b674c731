"""softmax-regression through torch: F.cross_entropy and autograd for the gradient, torch.optim.SGD
for the training steps (the same update: autograd's gradient of W is X.T @ g, of b g.sum(0))."""

import numpy as np
import torch
import torch.nn.functional as F


def softmax_ce(logits, y):
    z = torch.tensor(np.asarray(logits), dtype=torch.float64, requires_grad=True)
    loss = F.cross_entropy(z, torch.as_tensor(np.asarray(y), dtype=torch.long))
    loss.backward()
    return loss.item(), z.grad.numpy()


def train(X, y, k, lr, epochs):
    X = torch.as_tensor(np.asarray(X), dtype=torch.float64)
    y = torch.as_tensor(np.asarray(y), dtype=torch.long)
    W = torch.zeros(X.shape[1], k, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(k, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.SGD([W, b], lr=lr)
    for _ in range(epochs):
        optimizer.zero_grad()
        F.cross_entropy(X @ W + b, y).backward()
        optimizer.step()
    return W.detach().numpy(), b.detach().numpy()
