"""Alternative for `point-in-time`: one global sort and prefix sum, windows found by merging.

Events are sorted by (entity code, time) once, with one cumulative sum over all of them. A window's two
ends are ranks: the number of events that sort strictly before (entity, bound). They come from one stable
lexsort of the events together with the query bounds (a bound sorts before an event with the same entity
and time, so an event at exactly the bound is not "before" it): no per-entity loop, no Python loop at all.
"""

import numpy as np


def _events_before(code_sorted, t_sorted, q_code, bound):
    """For each query: how many events (code, t) come lexicographically before (q_code, bound)."""
    n = len(code_sorted)
    codes = np.concatenate((code_sorted, q_code))
    times = np.concatenate((t_sorted.astype(np.float64), bound.astype(np.float64)))
    is_event = np.concatenate((np.ones(n, dtype=bool), np.zeros(len(q_code), dtype=bool)))
    order = np.lexsort((is_event, times, codes))  # bounds before events at the same (code, time)
    before = np.cumsum(is_event[order]) - is_event[order]
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = before
    return rank[n:]


def point_in_time_mean(entity, ts, value, q_entity, q_ts, window, gap):
    entity, ts, value = np.asarray(entity), np.asarray(ts), np.asarray(value, dtype=np.float64)
    q_entity, q_ts = np.asarray(q_entity), np.asarray(q_ts)
    if not (entity.ndim == ts.ndim == value.ndim == 1 and entity.shape == ts.shape == value.shape):
        raise ValueError("entity, ts and value must be 1-D and of equal length")
    if not (q_entity.ndim == q_ts.ndim == 1 and q_entity.shape == q_ts.shape):
        raise ValueError("q_entity and q_ts must be 1-D and of equal length")
    if window <= 0:
        raise ValueError("window must be positive")
    if gap < 0:
        raise ValueError("gap must not be negative")
    out = np.full(q_ts.shape, np.nan)
    if len(ts) == 0 or len(q_ts) == 0:
        return out
    ids = np.unique(entity)
    e_code = np.searchsorted(ids, entity)
    q_code = np.minimum(np.searchsorted(ids, q_entity), len(ids) - 1)
    known = ids[q_code] == q_entity
    order = np.lexsort((ts, e_code))
    code_sorted, t_sorted = e_code[order], ts[order]
    prefix = np.concatenate(([0.0], np.cumsum(value[order])))
    cutoff = q_ts - gap
    lo = _events_before(code_sorted, t_sorted, q_code, cutoff - window)
    hi = _events_before(code_sorted, t_sorted, q_code, cutoff)
    count = hi - lo
    ok = known & (count > 0)
    out[ok] = (prefix[hi[ok]] - prefix[lo[ok]]) / count[ok]
    return out
