"""The denoiser script fixed another way: a 1-D convolutional denoiser with dropout, statistics
passed through explicitly, gradients set to None after each step, evaluate() under
torch.inference_mode() with the MSE written out, and train mode set at every epoch."""

import math

import torch
import torch.nn as nn

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


def training_statistics(noisy_train):
    return noisy_train.mean(), noisy_train.std()


def apply_statistics(stats, *tensors):
    mean, std = stats
    return [(t - mean) / std for t in tensors]


def normalise(train, val):
    stats = training_statistics(train[0])
    x_train, y_train = apply_statistics(stats, *train)
    x_val, y_val = apply_statistics(stats, *val)
    return x_train, y_train, x_val, y_val


class ConvDenoiser(nn.Module):
    def __init__(self, channels=32, dropout=0.1):
        super().__init__()
        self.features = nn.Sequential(nn.Conv1d(1, channels, 5, padding=2), nn.ReLU(), nn.Dropout(dropout),
                                      nn.Conv1d(channels, channels, 5, padding=2), nn.ReLU(), nn.Dropout(dropout))
        self.head = nn.Linear(channels * LENGTH, LENGTH)

    def forward(self, x):
        return self.head(self.features(x.unsqueeze(1)).flatten(1))


def build_model():
    return ConvDenoiser()


def evaluate(model, x, y):
    model.eval()
    with torch.inference_mode():
        return float(((model(x) - y) ** 2).mean())


def train(model, data, epochs=25, lr=2e-3, batch_size=32, seed=0, verbose=False):
    x_train, y_train, x_val, y_val = data
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    history = []
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(x_train.shape[0], generator=g).to(x_train.device)
        running, seen = 0.0, 0
        for i in range(0, x_train.shape[0], batch_size):
            idx = perm[i:i + batch_size]
            loss = ((model(x_train[idx]) - y_train[idx]) ** 2).mean()
            loss.backward()
            optimizer.step()
            for p in model.parameters():
                p.grad = None
            running += loss.item() * idx.numel()
            seen += idx.numel()
        history.append((running / seen, evaluate(model, x_val, y_val)))
        if verbose:
            print(f"epoch {epoch + 1}: train {history[-1][0]:.4f}, val {history[-1][1]:.4f}")
    return history


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build_model(), normalise(make_signals(1024, 1), make_signals(256, 2)), verbose=True)
