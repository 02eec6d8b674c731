"""Plain Python: the edges are order statistics of the sorted training sample (sorted_train[k * n // bins],
a value on an edge going to the upper bin), the bin of each value found with bisect, math.log."""

import bisect
import math


def psi(train, prod, bins=10):
    ordered = sorted(float(v) for v in train)
    n = len(ordered)
    edges = [ordered[k * n // bins] for k in range(1, bins)]

    def shares(values):
        counts = [0] * bins
        for v in values:
            counts[bisect.bisect_right(edges, float(v))] += 1
        return [max(c / len(values), 1e-4) for c in counts]

    expected, actual = shares(train), shares(prod)
    return math.fsum((a - e) * math.log(a / e) for a, e in zip(actual, expected))
