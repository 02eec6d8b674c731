"""Alternative: windows built with as_strided from the series' own strides; a checkpoint written through
tempfile.NamedTemporaryFile and os.replace, with the RNG states stored in plain types (NumPy's key as a
tensor), so that resume keeps torch.load's safe default weights_only=True."""

import os
import random
import tempfile

import numpy as np
import torch
from numpy.lib.stride_tricks import as_strided


def make_windows(series, input_len, horizon, stride):
    if min(input_len, horizon, stride) < 1:
        raise ValueError("input_len, horizon and stride must be positive")
    if series.ndim not in (1, 2):
        raise ValueError("series must be (T,) or (T, F)")
    T, rest = series.shape[0], series.shape[1:]
    size = input_len + horizon
    if T < size:
        return np.empty((0, input_len) + rest, series.dtype), np.empty((0, horizon) + rest, series.dtype)
    n = (T - size) // stride + 1
    step, inner = series.strides[0], series.strides[1:]
    X = as_strided(series, (n, input_len) + rest, (stride * step, step) + inner, writeable=False)
    Y = as_strided(series[input_len:], (n, horizon) + rest, (stride * step, step) + inner, writeable=False)
    return X, Y


def split_windows(series, split_at, gap, input_len, horizon, stride):
    T = series.shape[0]
    if split_at < 0 or split_at > T or gap < 0:
        raise ValueError("need 0 <= split_at <= T and gap >= 0")
    start = split_at + gap
    return make_windows(series[:split_at], input_len, horizon, stride), make_windows(series[start:], input_len, horizon, stride)


def _rng_states():
    name, key, pos, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy": {"name": name, "key": torch.from_numpy(key.astype(np.int64)), "pos": int(pos), "has_gauss": int(has_gauss), "gauss": float(gauss)},
        "python": {"version": version, "internal": list(internal), "gauss_next": gauss_next},
    }


def save_checkpoint(path, model, optimizer, scheduler, step):
    checkpoint = {"step": int(step), "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "rng": _rng_states()}
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as f:
        try:
            torch.save(checkpoint, f)
            f.flush()
            os.fsync(f.fileno())
        except BaseException:
            f.close()
            os.unlink(f.name)
            raise
    os.replace(f.name, path)


def resume(path, model, optimizer, scheduler):
    checkpoint = torch.load(path, map_location="cpu")  # weights_only=True: plain types and tensors only
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    rng = checkpoint["rng"]
    torch.set_rng_state(rng["torch"])
    numpy_state = rng["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["key"].numpy().astype(np.uint32), numpy_state["pos"],
                         numpy_state["has_gauss"], numpy_state["gauss"]))
    python_state = rng["python"]
    random.setstate((python_state["version"], tuple(python_state["internal"]), python_state["gauss_next"]))
    return checkpoint["step"]
