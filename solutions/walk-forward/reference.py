"""Reference for `walk-forward`: a walk-forward backtest per horizon, two naive baselines, and skill.

The origins are initial, initial + step, ... while a whole horizon fits (origin + horizon <= n). At
each one the forecaster is called afresh with the history before the origin, series[:origin], and
nothing after it; errors[i, h] is the absolute error of its forecast h + 1 steps ahead. The actual
values of every window are gathered at once with an (n_origins, horizon) index array. Skill is the
ratio of mean absolute errors per horizon: never averaged over the horizons.
"""

import numpy as np


def walk_forward(series, forecast, initial, horizon, step):
    """Absolute errors (n_origins, horizon) of `forecast` on `series`, walking forward: at each origin
    o = initial, initial + step, ... with o + horizon <= len(series), forecast(series[:o], horizon)
    is compared with series[o:o + horizon]. Raises ValueError for initial, horizon or step below 1,
    and for a forecast that does not hold horizon values."""
    series = np.asarray(series)
    for name, value in (("initial", initial), ("horizon", horizon), ("step", step)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    origins = np.arange(initial, len(series) - horizon + 1, step)
    forecasts = np.empty((len(origins), horizon))
    for i, origin in enumerate(origins):
        predicted = np.asarray(forecast(series[:origin], horizon), dtype=np.float64)
        if predicted.shape != (horizon,):
            raise ValueError(f"forecast returned {predicted.shape} values at origin {origin}; expected {horizon}")
        forecasts[i] = predicted
    actual = series[origins[:, None] + np.arange(horizon)]
    return np.abs(actual - forecasts)


def last_value(history, horizon):
    """The naive forecast: the last value of the history, horizon times."""
    return np.full(horizon, history[-1], dtype=np.float64)


def seasonal_naive(history, horizon, season):
    """The seasonal naive forecast: the last season of the history repeated, forecast[h] =
    history[len(history) - season + h % season]. Raises ValueError when season < 1 or the history
    is shorter than one season."""
    history = np.asarray(history)
    if season < 1 or len(history) < season:
        raise ValueError(f"season must be between 1 and len(history) = {len(history)}, got {season}")
    last_season = history[len(history) - season:]
    return last_season[np.arange(horizon) % season].astype(np.float64)


def skill(errors, baseline_errors):
    """Per horizon, the mean absolute error of `errors` over that of `baseline_errors` (both of shape
    (n_origins, horizon)): below 1, better than the baseline at that horizon."""
    errors, baseline_errors = np.asarray(errors, dtype=np.float64), np.asarray(baseline_errors, dtype=np.float64)
    if errors.shape != baseline_errors.shape or errors.ndim != 2:
        raise ValueError(f"errors and baseline_errors must be 2-D of one shape, got {errors.shape} and {baseline_errors.shape}")
    return errors.mean(axis=0) / baseline_errors.mean(axis=0)
