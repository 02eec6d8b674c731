"""Alternative for `point-in-time`: the definition as a loop, O(N * M).

For every query, a boolean mask over all events (same entity, time in [q_ts - gap - window, q_ts - gap))
and the mean of the values it selects. No sorting at all, so the order of events and queries cannot
matter; the slowest correct way, and the plainest to check by eye.
"""

import numpy as np


def point_in_time_mean(entity, ts, value, q_entity, q_ts, window, gap):
    entity, ts, value = np.asarray(entity), np.asarray(ts), np.asarray(value, dtype=np.float64)
    q_entity, q_ts = np.asarray(q_entity), np.asarray(q_ts)
    if entity.ndim != 1 or not (len(entity) == len(ts) == len(value)) or ts.ndim != 1 or value.ndim != 1:
        raise ValueError("entity, ts and value must be 1-D arrays of the same length")
    if q_entity.ndim != 1 or q_ts.ndim != 1 or len(q_entity) != len(q_ts):
        raise ValueError("q_entity and q_ts must be 1-D arrays of the same length")
    if window <= 0 or gap < 0:
        raise ValueError("window must be > 0 and gap >= 0")
    out = np.empty(len(q_ts), dtype=np.float64)
    for j in range(len(q_ts)):
        start, cutoff = q_ts[j] - gap - window, q_ts[j] - gap
        mask = (entity == q_entity[j]) & (ts >= start) & (ts < cutoff)
        out[j] = value[mask].mean() if mask.any() else np.nan
    return out
