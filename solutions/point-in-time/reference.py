"""Reference for `point-in-time`: a point-in-time rolling mean per entity, without leakage.

Each entity's events are sorted by time once and their values summed cumulatively; a query's window
[q_ts - gap - window, q_ts - gap) is then the slice between two binary searches (side="left" at both
ends: the lower bound is inclusive, the upper one exclusive), and its mean is a difference of two
prefix sums over the slice's length. Queries of an entity without events, and empty windows, stay NaN.
O((N + M) log N) overall; the results are written back at the queries' own positions.
"""

import numpy as np


def _rows_by_key(keys):
    """{id: the row indices that hold it, in row order} for a 1-D array of ids."""
    ids, inverse = np.unique(keys, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(inverse, minlength=len(ids)))))
    return {key.item(): order[start:stop] for key, start, stop in zip(ids, bounds[:-1], bounds[1:])}


def point_in_time_mean(entity, ts, value, q_entity, q_ts, window, gap):
    """For each query j: the mean of value[i] over the events i with entity[i] == q_entity[j] and
    q_ts[j] - gap - window <= ts[i] < q_ts[j] - gap; NaN when there is none. Events and queries may
    come in any order; returns a float64 array of shape (M,) in query order. Raises ValueError for
    arrays that are not 1-D or whose lengths disagree, window <= 0 or gap < 0."""
    entity, ts, value = np.asarray(entity), np.asarray(ts), np.asarray(value, dtype=np.float64)
    q_entity, q_ts = np.asarray(q_entity), np.asarray(q_ts)
    if entity.ndim != 1 or entity.shape != ts.shape or entity.shape != value.shape:
        raise ValueError(f"entity, ts and value must be 1-D arrays of one length, got shapes {entity.shape}, {ts.shape}, {value.shape}")
    if q_entity.ndim != 1 or q_entity.shape != q_ts.shape:
        raise ValueError(f"q_entity and q_ts must be 1-D arrays of one length, got shapes {q_entity.shape}, {q_ts.shape}")
    if not window > 0:
        raise ValueError(f"window must be positive, got {window}")
    if not gap >= 0:
        raise ValueError(f"gap must be non-negative, got {gap}")

    out = np.full(len(q_ts), np.nan)
    events = _rows_by_key(entity)
    for key, q_rows in _rows_by_key(q_entity).items():
        e_rows = events.get(key)
        if e_rows is None:
            continue
        e_rows = e_rows[np.argsort(ts[e_rows], kind="stable")]
        t = ts[e_rows]
        sums = np.concatenate(([0.0], np.cumsum(value[e_rows])))
        cutoff = q_ts[q_rows] - gap
        lo = np.searchsorted(t, cutoff - window, side="left")  # first event at or after the window's start
        hi = np.searchsorted(t, cutoff, side="left")  # first event at or after the cut-off: excluded
        count = hi - lo
        filled = count > 0
        out[q_rows[filled]] = (sums[hi] - sums[lo])[filled] / count[filled]
    return out
