"""Alternative: X and Y as two sliding-window views (inputs over the series, targets over the series shifted by
input_len); a checkpoint that torch.save writes into a small file-like object of its own over a raw descriptor
(os.open, os.write: no fileno, no Python file object), fsynced and moved onto path with os.replace. The RNG states
are kept in plain types, so resume loads with weights_only=True."""

import os
import random

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view


def _check_positive(**sizes):
    bad = [name for name, value in sizes.items() if value < 1]
    if bad:
        raise ValueError(f"{', '.join(bad)} must be at least 1")


def make_windows(series, input_len, horizon, stride):
    _check_positive(input_len=input_len, horizon=horizon, stride=stride)
    n = max(0, (len(series) - input_len - horizon) // stride + 1)
    if n == 0:
        tail = series.shape[1:]
        return np.zeros((0, input_len) + tail, dtype=series.dtype), np.zeros((0, horizon) + tail, dtype=series.dtype)
    X = np.moveaxis(sliding_window_view(series[: len(series) - horizon], input_len, axis=0), -1, 1)[::stride][:n]
    Y = np.moveaxis(sliding_window_view(series[input_len:], horizon, axis=0), -1, 1)[::stride][:n]
    return X, Y


def split_windows(series, split_at, gap, input_len, horizon, stride):
    if not 0 <= split_at <= len(series) or gap < 0:
        raise ValueError("split_at must be in [0, len(series)] and gap at least 0")
    return (make_windows(series[:split_at], input_len, horizon, stride),
            make_windows(series[split_at + gap:], input_len, horizon, stride))


class _DescriptorWriter:
    """What torch.save needs of a destination: write (all of the bytes) and flush."""

    def __init__(self, fd):
        self.fd = fd

    def write(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]
        return len(data)

    def flush(self):
        pass


def save_checkpoint(path, model, optimizer, scheduler, step):
    _, key, pos, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    payload = {"step": int(step), "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
               "torch_rng": torch.get_rng_state(),
               "numpy_rng": {"key": key.tolist(), "pos": int(pos), "has_gauss": int(has_gauss), "gauss": float(gauss)},
               "python_rng": {"version": version, "internal": list(internal), "gauss_next": gauss_next}}
    partial = f"{path}.partial"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        torch.save(payload, _DescriptorWriter(fd))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(partial, path)


def resume(path, model, optimizer, scheduler):
    payload = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(payload["model"])
    optimizer.load_state_dict(payload["optimizer"])
    scheduler.load_state_dict(payload["scheduler"])
    torch.set_rng_state(payload["torch_rng"])
    state = payload["numpy_rng"]
    np.random.set_state(("MT19937", np.array(state["key"], dtype=np.uint32), state["pos"], state["has_gauss"], state["gauss"]))
    python = payload["python_rng"]
    random.setstate((python["version"], tuple(python["internal"]), python["gauss_next"]))
    return payload["step"]
