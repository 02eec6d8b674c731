"""Alternative: torch.sigmoid and the whole training loop in torch (float64), converted back to NumPy at the end."""

import numpy as np
import torch


def sigmoid(z):
    z = np.asarray(z)
    t = torch.from_numpy(z.copy())  # a copy keeps a 0-d array 0-d (np.ascontiguousarray would make it 1-d)
    if not t.is_floating_point():
        t = t.double()  # integer z: float64, as NumPy would promote it
    return torch.sigmoid(t).numpy()


def train(X, y, lr=0.1, steps=1000):
    X_np = np.asarray(X)
    Xt = torch.from_numpy(X_np.astype(np.float32 if X_np.dtype == np.float32 else np.float64))
    yt = torch.from_numpy(np.asarray(y).reshape(-1)).to(Xt.dtype)
    n, d = Xt.shape
    w = torch.zeros(d, dtype=Xt.dtype)
    b = torch.zeros((), dtype=Xt.dtype)
    for _ in range(steps):
        err = torch.sigmoid(Xt @ w + b) - yt
        w = w - lr * (Xt.T @ err) / n
        b = b - lr * err.mean()
    return w.numpy(), b.item()
