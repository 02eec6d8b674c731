"""Point-in-time rolling means. Fill in `point_in_time_mean`; run `mlprep grade point-in-time` to grade it."""

import numpy as np


def point_in_time_mean(entity, ts, value, q_entity, q_ts, window, gap):
    """For each query j: the mean of value[i] over the events i with entity[i] == q_entity[j] and
    q_ts[j] - gap - window <= ts[i] < q_ts[j] - gap (pandas' rolling closed="left", shifted back by
    gap); NaN when no event qualifies.

    entity, ts, value: the N events (1-D NumPy arrays of one length; ids are integers or strings, times
    and values integers or floats), in any order. q_entity, q_ts: the M queries (1-D, one length), in
    any order. window > 0 and gap >= 0 are numbers in the units of ts. Returns a new float64 array of
    shape (M,), result[j] for query j, and leaves the inputs unchanged. Raises ValueError when the
    lengths disagree, window <= 0 or gap < 0."""
    raise NotImplementedError("point_in_time_mean: per entity, sort by time, prefix sums, two binary searches per query")
