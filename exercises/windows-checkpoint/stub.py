"""Time-series windows and an exact checkpoint. Fill in the four functions; run `mlprep grade windows-checkpoint` to grade them."""

import os  # noqa: F401 -- your implementation will need these
import random  # noqa: F401
import tempfile  # noqa: F401

import numpy as np  # noqa: F401
import torch  # noqa: F401


def make_windows(series, input_len, horizon, stride):
    """(X, Y): every window of a time series, as VIEWS of it (no copy).

    series: a NumPy array of shape (T,) or (T, F), any dtype, possibly itself a strided view.
    Window i starts at i * stride: X[i] = series[i*stride : i*stride + input_len] and
    Y[i] = series[i*stride + input_len : i*stride + input_len + horizon]; only windows that fit whole
    count (the remainder at the end is dropped). X is (n, input_len) and Y (n, horizon) for a (T,)
    series, (n, input_len, F) and (n, horizon, F) for a (T, F) one, in the series' dtype; n = 0 (empty
    arrays of those shapes) when T < input_len + horizon. input_len, horizon or stride below 1 raise
    ValueError. The series is not modified; X and Y may be read-only.
    """
    raise NotImplementedError("make_windows: build the windows as views (sliding_window_view or as_strided)")


def split_windows(series, split_at, gap, input_len, horizon, stride):
    """((X_tr, Y_tr), (X_va, Y_va)): windows split by time with a gap, as views of the series.

    Training windows are the windows of series[:split_at]: inputs AND targets end before split_at.
    Validation windows are the windows of series[split_at + gap:]: the first starts at split_at + gap,
    the next stride steps later, and so on. Steps split_at .. split_at + gap - 1 belong to no window.
    Same shapes, dtype and views as make_windows. split_at outside [0, T] or gap < 0 raise ValueError.
    """
    raise NotImplementedError("split_windows: windows of series[:split_at] and of series[split_at + gap:]")


def save_checkpoint(path, model, optimizer, scheduler, step):
    """Write everything needed to resume training exactly to the file at path, atomically.

    The checkpoint holds model.state_dict(), optimizer.state_dict(), scheduler.state_dict(), step, and
    the states of torch's CPU generator, NumPy's global generator and Python's random. Write it with
    torch.save to a temporary file in the same directory, then os.replace it onto path: whatever
    happens during the save (an exception, the process killed), path holds the previous checkpoint or
    the new one, whole. If the write fails, raise. Draw from no RNG (not even for a temporary name).
    """
    raise NotImplementedError("save_checkpoint: torch.save everything to a temporary file, then os.replace")


def resume(path, model, optimizer, scheduler):
    """Load the checkpoint at path INTO the given (freshly built) model, optimizer and scheduler,
    restore the three RNG states, and return the saved step (an int). Note torch.load's weights_only
    default (True since torch 2.6), which refuses NumPy arrays such as NumPy's RNG state.
    """
    raise NotImplementedError("resume: torch.load, load_state_dict into each object, set the RNG states, return the step")
