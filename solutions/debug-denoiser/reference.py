"""Train a small denoiser on synthetic signals and print its training and validation loss per epoch.

    python debug_denoiser.py

The data are 1-D signals of 32 samples: an offset plus two sinusoids (the clean target), with
Gaussian noise added (the noisy input). The model maps a noisy signal to an estimate of the clean
one and is trained with the mean squared error against the clean signal.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

LENGTH = 32  # samples per signal
NOISE = 0.6  # standard deviation of the noise, in the signals' raw units


def make_signals(n, seed, device="cpu"):
    """n raw signals as (noisy, clean), two float32 tensors of shape (n, LENGTH): an offset of 2 plus
    two sinusoids of 1 to 3 cycles with random phases and amplitudes, and noise of std NOISE."""
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(LENGTH, dtype=torch.float32) / LENGTH
    cycles = torch.randint(1, 4, (n, 2, 1), generator=g).float()
    phase = 2 * math.pi * torch.rand(n, 2, 1, generator=g)
    amplitude = 0.5 + torch.rand(n, 2, 1, generator=g)
    clean = 2.0 + (amplitude * torch.sin(2 * math.pi * cycles * t + phase)).sum(dim=1)
    noisy = clean + NOISE * torch.randn(n, LENGTH, generator=g)
    return noisy.to(device), clean.to(device)


def normalise(train, val):
    """train and val are (noisy, clean) pairs of raw signals. Returns (x_train, y_train, x_val, y_val):
    every tensor shifted and scaled by the mean and standard deviation of the training noisy inputs
    (two numbers, over all their values), the statistics the model will know its inputs by."""
    noisy_train, clean_train = train
    noisy_val, clean_val = val
    mean, std = noisy_train.mean(), noisy_train.std()
    x_train, y_train = (noisy_train - mean) / std, (clean_train - mean) / std
    x_val, y_val = (noisy_val - mean) / std, (clean_val - mean) / std
    return x_train, y_train, x_val, y_val


class Denoiser(nn.Module):
    """An MLP from a noisy signal to the clean one, with dropout between its layers."""

    def __init__(self, length=LENGTH, hidden=128, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(length, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, length),
        )

    def forward(self, x):
        return self.net(x)


def build_model():
    return Denoiser()


def evaluate(model, x, y):
    """The mean squared error of model(x) against y, as a float, with dropout off."""
    model.eval()
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()


def train(model, data, epochs=25, lr=2e-3, batch_size=32, seed=0, verbose=False):
    """Train model on data = (x_train, y_train, x_val, y_val) with Adam on shuffled mini-batches of
    the training split. Returns the history: one (training loss, validation loss) pair per epoch,
    the validation loss measured by evaluate() after the epoch's steps."""
    x_train, y_train, x_val, y_val = data
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    history = []
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x_train), generator=g).to(x_train.device)
        total = 0.0
        for start in range(0, len(x_train), batch_size):
            idx = order[start:start + batch_size]
            optimizer.zero_grad()
            prediction = model(x_train[idx])
            loss = F.mse_loss(prediction, y_train[idx])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        history.append((total / len(x_train), evaluate(model, x_val, y_val)))
        if verbose:
            print(f"epoch {epoch + 1:2d}   train {history[-1][0]:.4f}   val {history[-1][1]:.4f}")
    return history


def main():
    torch.manual_seed(0)
    data = normalise(make_signals(1024, seed=1), make_signals(256, seed=2))
    model = build_model()
    train(model, data, verbose=True)


if __name__ == "__main__":
    main()
