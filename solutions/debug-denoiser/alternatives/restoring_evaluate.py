"""The denoiser script fixed another way: a Normalizer object fitted on the training inputs, an
evaluate() that restores the mode it found (a context manager) and measures in chunks, train mode
set once at the start of train(), gradients cleared with model.zero_grad(), AdamW."""

import contextlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

LENGTH = 32
NOISE = 0.6


def make_signals(n, seed, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(LENGTH, dtype=torch.float32) / LENGTH
    cycles = torch.randint(1, 4, (n, 2, 1), generator=g).float()
    phase = 2 * math.pi * torch.rand(n, 2, 1, generator=g)
    amplitude = 0.5 + torch.rand(n, 2, 1, generator=g)
    clean = 2.0 + (amplitude * torch.sin(2 * math.pi * cycles * t + phase)).sum(dim=1)
    noisy = clean + NOISE * torch.randn(n, LENGTH, generator=g)
    return noisy.to(device), clean.to(device)


class Normalizer:
    """Fitted once, on the training inputs; applied unchanged to everything else."""

    def fit(self, x):
        self.mean = x.mean()
        self.std = x.std(unbiased=False)  # the population std: either is fine
        return self

    def __call__(self, x):
        return (x - self.mean) / self.std


def normalise(train, val):
    scaler = Normalizer().fit(train[0])
    return tuple(scaler(t) for t in (*train, *val))


def build_model(length=LENGTH, hidden=128, p=0.1):
    return nn.Sequential(nn.Linear(length, hidden), nn.ReLU(), nn.Dropout(p), nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(p),
                         nn.Linear(hidden, length))


@contextlib.contextmanager
def evaluating(model):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def evaluate(model, x, y, chunk=64):
    total = 0.0
    with evaluating(model):
        for start in range(0, len(x), chunk):
            total += F.mse_loss(model(x[start:start + chunk]), y[start:start + chunk], reduction="sum").item()
    return total / y.numel()


def train(model, data, epochs=25, lr=2e-3, batch_size=32, seed=0, verbose=False):
    x_train, y_train, x_val, y_val = data
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    model.train()
    history = []
    for epoch in range(epochs):
        order = torch.randperm(len(x_train), generator=g).to(x_train.device)
        losses = []
        for batch in order.split(batch_size):
            model.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x_train[batch]), y_train[batch])
            loss.backward()
            optimizer.step()
            losses.append(loss.item() * len(batch))
        history.append((sum(losses) / len(x_train), evaluate(model, x_val, y_val)))
        if verbose:
            print("epoch %2d   train %.4f   val %.4f" % (epoch + 1, *history[-1]))
    return history


def main():
    torch.manual_seed(0)
    model = build_model()
    train(model, normalise(make_signals(1024, seed=1), make_signals(256, seed=2)), verbose=True)


if __name__ == "__main__":
    main()
