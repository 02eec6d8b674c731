"""Reference for `windows-checkpoint`: lazy time-series windows and an exact, atomic checkpoint.

Windows are views: `sliding_window_view` over the time axis gives every window of input_len +
horizon steps without copying (whatever the series' strides), every stride-th of them is kept, and
X and Y are the first input_len and the last horizon steps of each. NumPy puts the window axis last,
so for a (T, F) series it is moved next to the window index: (n, L, F). The split takes the windows
of series[:split_at] for training, so that inputs and targets both end before split_at, and those of
series[split_at + gap:] for validation, whose first window starts at split_at + gap.

The checkpoint holds everything the next training step depends on: model (parameters and buffers),
optimizer (Adam's moments and step counts), scheduler (its epoch count), the step, and the three RNG
states (torch's CPU generator, NumPy's global one, Python's random), captured without drawing from
any of them. It is written by torch.save to a temporary file in the same directory (mkstemp: its
name comes from tempfile's own generator, not the global ones), flushed and fsynced, then moved onto
path with os.replace, which is atomic on POSIX: whatever happens during the write, path holds the
previous checkpoint or the new one, whole.
"""

import contextlib
import os
import random
import tempfile

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view


def _positive(**values):
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


def make_windows(series, input_len, horizon, stride):
    """(X, Y) views of series: X[i] = series[i*stride : i*stride + input_len], Y[i] the horizon steps
    after it; the remainder at the end dropped. (T,) -> X (n, input_len), Y (n, horizon);
    (T, F) -> (n, input_len, F), (n, horizon, F). Empty (n = 0) when T < input_len + horizon."""
    _positive(input_len=input_len, horizon=horizon, stride=stride)
    if series.ndim not in (1, 2):
        raise ValueError(f"series must be 1-D (T,) or 2-D (T, F), got shape {series.shape}")
    size = input_len + horizon
    n = (len(series) - size) // stride + 1 if len(series) >= size else 0
    if n <= 0:
        features = series.shape[1:]
        return np.empty((0, input_len, *features), series.dtype), np.empty((0, horizon, *features), series.dtype)
    windows = sliding_window_view(series, size, axis=0)[: (n - 1) * stride + 1 : stride]  # (n, size) or (n, F, size)
    windows = np.moveaxis(windows, -1, 1)  # the time axis of each window next to the window index
    return windows[:, :input_len], windows[:, input_len:]


def split_windows(series, split_at, gap, input_len, horizon, stride):
    """((X_tr, Y_tr), (X_va, Y_va)): the windows of series[:split_at] (inputs and targets end before
    split_at) and those of series[split_at + gap:] (starting at split_at + gap, every stride steps)."""
    if not 0 <= split_at <= len(series):
        raise ValueError(f"split_at must be in [0, {len(series)}], got {split_at}")
    if gap < 0:
        raise ValueError(f"gap must be at least 0, got {gap}")
    train = make_windows(series[:split_at], input_len, horizon, stride)
    valid = make_windows(series[split_at + gap:], input_len, horizon, stride)
    return train, valid


def save_checkpoint(path, model, optimizer, scheduler, step):
    """Write model, optimizer and scheduler state, the step and the torch / NumPy / random RNG states
    to path, atomically (a temporary file in the same directory, then os.replace)."""
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()},
    }
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def resume(path, model, optimizer, scheduler):
    """Load the checkpoint at path into the live model, optimizer and scheduler, restore the RNG
    states, and return the saved step."""
    # Our own file holds NumPy's RNG state (an ndarray) and Python tuples, which torch.load's default
    # weights_only=True (torch >= 2.6) refuses: we trust this file, so load it in full.
    checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    rng = checkpoint["rng"]
    torch.set_rng_state(rng["torch"])
    np.random.set_state(rng["numpy"])
    random.setstate(rng["python"])
    return checkpoint["step"]
