"""Walk-forward backtests. Fill in the four functions; run `mlprep grade walk-forward` to grade them."""

import numpy as np


def walk_forward(series, forecast, initial, horizon, step):
    """Backtest `forecast` on `series`: at each origin o = initial, initial + step, ... with
    o + horizon <= len(series), call forecast(series[:o], horizon) once and record the absolute
    errors |series[o + h] - forecast[h]| for h = 0 .. horizon - 1. Returns a float64 array of
    shape (n_origins, horizon): errors[i, h] is origin i's error h + 1 steps ahead."""
    raise NotImplementedError("walk_forward: loop over the origins, forecast from series[:origin], absolute errors per step ahead")


def last_value(history, horizon):
    """The naive forecast: history[-1], horizon times (a float64 array of shape (horizon,))."""
    raise NotImplementedError("last_value: the last value of the history, repeated")


def seasonal_naive(history, horizon, season):
    """The seasonal naive forecast: the last season of the history repeated,
    forecast[h] = history[len(history) - season + h % season] (float64, shape (horizon,))."""
    raise NotImplementedError("seasonal_naive: the last season of the history, repeated")


def skill(errors, baseline_errors):
    """Per horizon h: errors[:, h].mean() / baseline_errors[:, h].mean(), a float64 array of
    shape (horizon,). Below 1: better than the baseline at that horizon."""
    raise NotImplementedError("skill: the ratio of the mean absolute errors, per horizon")
