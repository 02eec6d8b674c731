"""walk-forward vectorised: every window's actual values as rows of a strided view, the forecasts stacked once."""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def walk_forward(series, forecast, initial, horizon, step):
    if min(initial, horizon, step) < 1:
        raise ValueError("initial, horizon and step must be positive")
    series = np.asarray(series, dtype=np.float64)
    n_origins = max(0, (len(series) - horizon - initial) // step + 1)
    if n_origins == 0:
        return np.zeros((0, horizon))
    origins = initial + step * np.arange(n_origins)
    forecasts = np.stack([np.asarray(forecast(series[:o], horizon), dtype=np.float64).reshape(-1) for o in origins])
    if forecasts.shape[1] != horizon:
        raise ValueError(f"every forecast must hold {horizon} values, got {forecasts.shape[1]}")
    windows = sliding_window_view(series, horizon)[origins]  # windows[i] = series[o_i:o_i + horizon]
    return np.abs(windows - forecasts)


def last_value(history, horizon):
    return np.repeat(np.float64(history[-1]), horizon)


def seasonal_naive(history, horizon, season):
    history = np.asarray(history, dtype=np.float64)
    if not 1 <= season <= len(history):
        raise ValueError("season must be in [1, len(history)]")
    return np.resize(history[-season:], horizon)  # repeats the last season as many times as needed


def skill(errors, baseline_errors):
    errors, baseline_errors = np.asarray(errors, dtype=np.float64), np.asarray(baseline_errors, dtype=np.float64)
    if errors.shape != baseline_errors.shape:
        raise ValueError("shape mismatch")
    return np.divide(errors.sum(axis=0), baseline_errors.sum(axis=0))
