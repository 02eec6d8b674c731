"""walk-forward with plain Python loops: one origin at a time, one step ahead at a time."""

import numpy as np


def walk_forward(series, forecast, initial, horizon, step):
    if initial < 1 or horizon < 1 or step < 1:
        raise ValueError("initial, horizon and step must each be at least 1")
    rows = []
    origin = initial
    while origin + horizon <= len(series):
        predicted = list(forecast(series[:origin], horizon))
        if len(predicted) != horizon:
            raise ValueError(f"forecast returned {len(predicted)} values, expected {horizon}")
        rows.append([abs(float(series[origin + h]) - float(predicted[h])) for h in range(horizon)])
        origin += step
    out = np.zeros((len(rows), horizon))
    for i, row in enumerate(rows):
        for h, value in enumerate(row):
            out[i, h] = value
    return out


def last_value(history, horizon):
    return np.array([float(history[-1]) for _ in range(horizon)])


def seasonal_naive(history, horizon, season):
    n = len(history)
    if season < 1 or n < season:
        raise ValueError("need 1 <= season <= len(history)")
    out = []
    for h in range(horizon):
        out.append(float(history[n - season + h % season]))
    return np.array(out, dtype=np.float64)


def skill(errors, baseline_errors):
    errors, baseline_errors = np.asarray(errors), np.asarray(baseline_errors)
    if errors.shape != baseline_errors.shape:
        raise ValueError("errors and baseline_errors differ in shape")
    n_origins, horizon = errors.shape
    ratios = np.zeros(horizon)
    for h in range(horizon):
        model = sum(float(errors[i, h]) for i in range(n_origins)) / n_origins
        naive = sum(float(baseline_errors[i, h]) for i in range(n_origins)) / n_origins
        ratios[h] = model / naive
    return ratios
