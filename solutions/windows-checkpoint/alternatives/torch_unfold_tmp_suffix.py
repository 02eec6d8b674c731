"""Alternative: windows from torch's Tensor.unfold on torch.from_numpy(series), back to NumPy with .numpy()
(every step shares the series' memory); a checkpoint written to path + ".tmp" through a file object and
moved with os.replace, loaded with weights_only=False."""

import os
import random

import numpy as np
import torch


def make_windows(series, input_len, horizon, stride):
    for name, value in (("input_len", input_len), ("horizon", horizon), ("stride", stride)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1")
    size = input_len + horizon
    if series.shape[0] < size:
        empty = lambda k: np.zeros((0, k) + series.shape[1:], dtype=series.dtype)  # noqa: E731
        return empty(input_len), empty(horizon)
    windows = torch.from_numpy(series).unfold(0, size, stride)  # (n, size) or (n, F, size), a view
    if series.ndim == 2:
        windows = windows.permute(0, 2, 1)
    windows = windows.numpy()  # still the series' memory
    return windows[:, :input_len], windows[:, input_len:]


def split_windows(series, split_at, gap, input_len, horizon, stride):
    if not (0 <= split_at <= len(series)) or gap < 0:
        raise ValueError("split_at must be in [0, T] and gap >= 0")
    train_part = series[:split_at]
    valid_part = series[split_at + gap:]
    return make_windows(train_part, input_len, horizon, stride), make_windows(valid_part, input_len, horizon, stride)


def save_checkpoint(path, model, optimizer, scheduler, step):
    tmp = path + ".tmp"
    payload = {
        "model_state": model.state_dict(),
        "optimizer_state": optimizer.state_dict(),
        "scheduler_state": scheduler.state_dict(),
        "global_step": step,
        "torch_rng": torch.get_rng_state(),
        "numpy_rng": np.random.get_state(),
        "python_rng": random.getstate(),
    }
    with open(tmp, "wb") as f:
        torch.save(payload, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def resume(path, model, optimizer, scheduler):
    payload = torch.load(path, map_location="cpu", weights_only=False)  # our own file: NumPy arrays and tuples inside
    model.load_state_dict(payload["model_state"])
    optimizer.load_state_dict(payload["optimizer_state"])
    scheduler.load_state_dict(payload["scheduler_state"])
    torch.set_rng_state(payload["torch_rng"])
    np.random.set_state(payload["numpy_rng"])
    random.setstate(payload["python_rng"])
    return payload["global_step"]
