"""Checks for `kmeans`: Lloyd's algorithm from a k-means++ start, in NumPy, within a memory budget.

Results are judged by what they must satisfy, never against the reference's centroids (another
correct run with another random stream ends elsewhere): C (k, D) float64 and labels (N,) integers
in range; labels[i] a nearest row of the returned C, within 1e-9 of ||x||^2 + max ||c||^2 (what
rounding in the expansion ||x||^2 - 2 x.c + ||c||^2 can change); bit-identical results for the same
seed whatever the global NumPy RNG state; the inertia sum ||x_i - C[labels_i]||^2 non-increasing
over iters = 1, 2, ... (within 1e-9 relative); at a fixed point (separated blobs, iters = 100)
each centroid is the mean of its rows (rtol 1e-9, atol 1e-9 of the data's scale); k-means++ judged
by its effect on a large blob and two small far ones, calibrated over 2000 seeds: D^2 sampling
misses the optimum on 0.4% of seeds (so a correct implementation with its own random stream fails
the 5-of-6 rule about once in 4000 grades), sampling by D reaches it on 15% (passing the rule about
once in 3000), uniform sampling on none (Lloyd's iterations then carry one centroid to both small
blobs, which sit 2000 apart but 10000 from the large one); memory is tracemalloc's peak in the
sandbox (peak_traced_memory).

Inputs are built by a few lines of code (shown as the failing input) or written out in full when
small. Hints follow the evidence: the labels a learner returned are compared with the nearest
centroids one update earlier (a control run with iters - 1) and with argmin(-2 x.c), which drops
||c||^2; a determinism failure is told apart by a rerun under the same global state.
"""

import numpy as np

from mlprep.grading import (Call, CheckFailed, assert_keeps_precision, check, expect_sequence, fail, inputs_from_code, inputs_unchanged, literal, out_of_memory_said,
                            on_input, peak_traced_memory, scenario)

NEAREST_RTOL = 1e-9
INERTIA_RTOL = 1e-9
MEAN_RTOL = 1e-9
PP_SEEDS = range(6)
PP_NEEDED = 5
PP_FACTOR = 1.5
MEMORY_BUDGET = 2**30
BIG_CASE = (200_000, 32, 64, 2)  # N, D, k, iters of the memory check

PP_HINT = ("k-means++ takes a first centre uniformly at random, then each next one with probability proportional to D(x)^2, the squared"
           " distance from x to its nearest centre chosen so far (not D(x), not uniformly): the 8 far points then get nearly all of the"
           " probability, and Lloyd's iterations cannot move a centre out of the large blob later")
RNG_HINT = "draw every random number from np.random.default_rng(seed) (rng.integers, rng.choice, rng.random), never from np.random.* or an unseeded generator"


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------
def random_code(seed, N, D, draw="standard_normal"):
    """The lines that make X (N, D) from np.random.default_rng(seed): N(0, 1), or another draw ("random": uniform on [0, 1))."""
    return f"rng = np.random.default_rng({seed})\nX = rng.{draw}(({N}, {D}))"


BLOBS_CODE = ("rng = np.random.default_rng(7)\ncorners = np.array([[-10.0, -10.0], [-10.0, 10.0], [10.0, -10.0], [10.0, 10.0]])\n"
              "X = np.concatenate([c + rng.standard_normal((50, 2)) for c in corners])")
# 20,000 points N(0, I) and two blobs of 4 points, 10,000 away from it and 2,000 from each other.
PLUSPLUS_CODE = ("rng = np.random.default_rng(7)\nX = np.concatenate([rng.standard_normal((20000, 2)),\n"
                 "                    rng.standard_normal((4, 2)) + [10000.0, 0.0],\n"
                 "                    rng.standard_normal((4, 2)) + [10000.0, 2000.0]])")
PLUSPLUS_PARTS = np.repeat([0, 1, 2], [20000, 4, 4])


def build(code):
    return inputs_from_code(code, "X")


def shown_x(X, code):
    """The lines that make X in a failing input: X written out when small, else the code that builds it."""
    return f"X = {literal(X)}" if code is None else code


def kmeans_code(k, iters, seed):
    return f"C, labels = kmeans(X, {k}, iters={iters}, seed={seed})"


def describe(X, k, iters, seed, what=""):
    return f"X {X.shape}{what}, k = {k}, iters = {iters}, seed = {seed}"


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox)
# ---------------------------------------------------------------------------------------------
def _global_state_repro(interface, X, k, iters, seed, code=None):
    return Call.code(f"{shown_x(X, code)}\nnp.random.seed(1); C1, labels1 = kmeans(X, {k}, iters={iters}, seed={seed})\n"
                     f"np.random.seed(2); np.random.random(5); C2, labels2 = kmeans(X, {k}, iters={iters}, seed={seed})\n"
                     "np.array_equal(C1, C2) and np.array_equal(labels1, labels2)  # expected True: same seed, same result")


@scenario(repro=_global_state_repro)
def under_global_states(module, X, k, iters, seed, code=None):
    """Scenario: the same call under the global NumPy RNG seeded 1, then 2 (with draws), then 1 again."""
    results = []
    for state in (1, 2, 1):
        np.random.seed(state)
        np.random.random(5 * (state - 1))
        results.append(module.kmeans(X, k, iters=iters, seed=seed))
    return results


def _sweep_repro(interface, X, k, seed, iters_list, code=None):
    return Call.code(f"{shown_x(X, code)}\ninertia = []\nfor iters in {list(iters_list)}:\n"
                     f"    C, labels = kmeans(X, {k}, iters=iters, seed={seed})\n    inertia.append(((X - C[labels]) ** 2).sum())\n"
                     "np.diff(inertia)  # expected: no value above 0 (beyond rounding)")


@scenario(repro=_sweep_repro)
def iters_sweep(module, X, k, seed, iters_list, code=None):
    """Scenario: kmeans with each iters of iters_list, the same seed."""
    return [module.kmeans(X, k, iters=iters, seed=seed) for iters in iters_list]


def _seeds_repro(interface, X, k, seeds, code=None):
    return Call.code(f"{shown_x(X, code)}\nparts = np.repeat([0, 1, 2], [20000, 4, 4])  # the large blob, then the two small ones\n"
                     "optimum = sum(((X[parts == j] - X[parts == j].mean(axis=0)) ** 2).sum() for j in range(3))\n"
                     f"ratios = []\nfor seed in {list(seeds)}:\n    C, labels = kmeans(X, {k}, seed=seed)\n"
                     "    ratios.append(((X - C[labels]) ** 2).sum() / optimum)\n"
                     f"ratios  # expected: at most {PP_FACTOR:g} for at least {PP_NEEDED} of the {len(seeds)} seeds")


@scenario(repro=_seeds_repro)
def over_seeds(module, X, k, seeds, code=None):
    """Scenario: kmeans with default iters for each seed."""
    return [module.kmeans(X, k, seed=seed) for seed in seeds]


def _memory_repro(interface, seed, N, D, k, iters):
    return Call.code(f"import tracemalloc\n{random_code(seed, N, D)}\ntracemalloc.start(); {kmeans_code(k, iters, 0)}\n"
                     f"peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()\npeak / 2**30  # GiB at the call's peak: at most {MEMORY_BUDGET / 2**30:g}")


@scenario(repro=_memory_repro)
def memory_peak(module, seed, N, D, k, iters):
    """Scenario: (kmeans's result, peak bytes traced during the call) on X built here (51 MB not sent through the pipe)."""
    X = np.random.default_rng(seed).standard_normal((N, D))
    return peak_traced_memory(module, "kmeans", [X, k], {"iters": iters, "seed": 0})


# ---------------------------------------------------------------------------------------------
# The judge's side
# ---------------------------------------------------------------------------------------------
def sq_dists(X, C):
    """(N, k) squared distances in float64: exact differences for small inputs, the expansion (in row blocks) for large ones."""
    if X.size * len(C) <= 2_000_000:
        return ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    out = np.empty((len(X), len(C)))
    c_sq = (C * C).sum(axis=1)
    for s in range(0, len(X), 16384):
        x = X[s:s + 16384]
        out[s:s + 16384] = np.maximum((x * x).sum(axis=1)[:, None] + c_sq - 2.0 * (x @ C.T), 0.0)
    return out


def nearest_slack(X, C):
    """How much farther than the nearest centroid a label may be: rounding of the expansion, per row."""
    return NEAREST_RTOL * ((X * X).sum(axis=1) + (C * C).sum(axis=1).max())


def inertia(X, C, labels):
    return float(((X - C[labels]) ** 2).sum())


def as_result(got, X, k, scenario, empty_clusters=False):
    """(C, labels) as a float64 (k, D) array and an int64 (N,) array in range, or a clean fail. `empty_clusters`: the input
    forces some (fewer distinct rows than k), which is what a non-finite centroid then shows."""
    N, D = X.shape
    C, labels = expect_sequence(got, 2, what="kmeans's result (C, labels)", scenario=scenario)
    if not isinstance(C, np.ndarray) or C.dtype.kind != "f":
        fail(f"C ({scenario}): expected a float64 NumPy array of shape ({k}, {D}), got {type(C).__name__}"
             f"{f' of dtype {C.dtype}' if hasattr(C, 'dtype') else ''}")
    if C.shape != (k, D):
        fail(f"C ({scenario}): expected shape ({k}, {D}), k rows of D coordinates, got shape {C.shape}", expected_shape=[k, D], got_shape=list(C.shape))
    assert_keeps_precision(C, X.dtype, what="C", scenario=scenario)
    if not np.isfinite(C).all():
        j = int(np.flatnonzero(~np.isfinite(C).all(axis=1))[0])
        why = (" With fewer distinct rows than k some clusters get no rows, and an empty cluster's mean is 0/0 = NaN: keep its centroid"
               " (or reseed it at a data point) when no row is assigned to it." if empty_clusters else "")
        fail(f"C ({scenario}): row {j} is {C[j].tolist()[:4]}, not finite.{why}", centroid=j)
    labels_arr = np.asarray(labels) if isinstance(labels, (list, tuple, np.ndarray)) else None
    if labels_arr is None or labels_arr.dtype.kind not in "iu":
        fail(f"labels ({scenario}): expected an integer NumPy array of shape ({N},), got {type(labels).__name__}"
             f"{f' of dtype {labels_arr.dtype}' if labels_arr is not None else ''}")
    if labels_arr.shape != (N,):
        fail(f"labels ({scenario}): expected shape ({N},), one label per row of X, got shape {labels_arr.shape}", got_shape=list(labels_arr.shape))
    outside = np.flatnonzero((labels_arr < 0) | (labels_arr >= k))
    if len(outside):
        fail(f"labels ({scenario}): labels[{int(outside[0])}] = {int(labels_arr[outside[0]])} is not a centroid index (0 <= label < {k})")
    return C, labels_arr.astype(np.int64)


def assert_nearest(X, C, labels, scenario, hint=None):
    """Every label is a nearest centroid of C; `hint(rows)` explains a failure at those rows."""
    d = sq_dists(X, C)
    bad = np.flatnonzero(d[np.arange(len(X)), labels] > d.min(axis=1) + nearest_slack(X, C))
    if not len(bad):
        return
    i = int(bad[0])
    best = int(d[i].argmin())
    fail(f"labels ({scenario}): {len(bad)} of {len(X)} rows {'is' if len(bad) == 1 else 'are'} not labelled with a nearest centroid of the returned C; first row {i}:"
         f" labels[{i}] = {int(labels[i])}, at squared distance {d[i, labels[i]]:.6g}, but C[{best}] is at {d[i, best]:.6g}.",
         explain=(lambda: hint(bad)) if hint else None, rows=len(bad), first_row=i)


def nearest_expression(k, iters, seed, large=False):
    distances = ("(X * X).sum(axis=1)[:, None] - 2 * X @ C.T + (C * C).sum(axis=1)" if large else
                 "((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)")
    return (f"{kmeans_code(k, iters, seed)}\nd = {distances}  # squared distances (N, k)\n"
            "np.flatnonzero(d[np.arange(len(X)), labels] > d.min(axis=1) + 1e-9)  # rows whose label is not a nearest centroid: expected none")


def labels_hint(sub, X, k, iters, seed, C, labels, rows):
    """What the wrong labels show: nearest centroids one update earlier (a control run with iters - 1), or argmin(-2 x.c)."""
    if np.array_equal(labels, (-2.0 * (X @ C.T)).argmin(axis=1)):
        return ("They are argmin(-2 x.c): dropping ||x||^2 from ||x||^2 - 2 x.c + ||c||^2 is fine (it is the same for every"
                " centroid), dropping ||c||^2 is not.")
    if iters > 1:
        earlier = sub.control("kmeans", X, k, iters=iters - 1, seed=seed)
        try:
            C_before, _ = as_result(earlier, X, k, "")
        except CheckFailed:
            return ""
        d = sq_dists(X, C_before)
        if np.all(d[rows, labels[rows]] <= d[rows].min(axis=1) + nearest_slack(X, C_before)[rows]):
            return (f"At those rows your labels are the nearest centroids of C after iters = {iters - 1} (your own run), one update earlier:"
                    " after the last update, assign the rows to the returned centroids once more.")
    return ""


def judged_call(sub, X, k, iters, seed, code=None, what="", empty_clusters=False):
    """The learner's kmeans on X: a valid result whose labels are nearest to its C. Returns (C, labels)."""
    scenario = describe(X, k, iters, seed, what)
    with on_input(Call("kmeans", X, k, iters=iters, seed=seed) if code is None else Call.code(f"{code}\nkmeans(X, {k}, iters={iters}, seed={seed})")):
        got = sub.call("kmeans", X, k, iters=iters, seed=seed)
        C, labels = as_result(got, X, k, scenario, empty_clusters)
    with on_input(Call.code(f"{shown_x(X, code)}\n{nearest_expression(k, iters, seed)}")):
        assert_nearest(X, C, labels, scenario, hint=lambda rows: labels_hint(sub, X, k, iters, seed, C, labels, rows))
    return C, labels


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
NEAREST_LISTED = [(np.array([[0.0], [1.0], [2.0], [6.0], [7.0], [9.0]]), 2, 2, 0),
                  (np.array([[0.0, 0.0], [0.5, 0.0], [3.0, 1.0], [3.5, 0.5], [1.5, 4.0], [2.0, 3.5], [1.0, 1.0]]), 3, 2, 1)]
NEAREST_CODES = [(random_code(seed + 10, N, D), k, iters, seed)
                 for seed, (N, D, k, iters) in enumerate([(40, 2, 4, 2), (200, 3, 5, 2), (200, 3, 5, 1), (500, 8, 10, 3), (300, 2, 1, 2), (30, 2, 30, 3)])]
DETERMINISM_CODES = [(random_code(3, 12, 2, "random"), 3, 1), (random_code(4, 300, 2, "random"), 6, 3)]
INERTIA_CODES = [(random_code(5, 400, 2, "random"), 8), (random_code(6, 300, 5), 6)]
FEW_DISTINCT_CODE = "rng = np.random.default_rng(8)\nX = rng.standard_normal((3, 4))[rng.integers(0, 3, 100)]  # 100 rows, 3 distinct"


@check("labels are a nearest centroid of the returned C")
def labels_nearest(sub, ctx):
    for X, k, iters, seed in NEAREST_LISTED:
        judged_call(sub, X, k, iters, seed)
    for code, k, iters, seed in NEAREST_CODES:
        judged_call(sub, build(code), k, iters, seed, code)


@check("at a fixed point each centroid is the mean of its rows (separated blobs, iters = 100)")
def fixed_point(sub, ctx):
    X = build(BLOBS_CODE)
    for seed in (0, 1):
        C, labels = judged_call(sub, X, 4, 100, seed, BLOBS_CODE, " = 4 blobs of 50 around (+-10, +-10)")
        scenario = describe(X, 4, 100, seed, " = 4 blobs of 50 around (+-10, +-10)")
        for j in range(4):
            rows = X[labels == j]
            if not len(rows):
                continue
            mean = rows.mean(axis=0)
            if np.abs(C[j] - mean).max() > MEAN_RTOL * (1 + np.abs(mean).max()):
                shrunk = "" if not np.allclose(C[j], rows.sum(axis=0) / (len(rows) + 1), rtol=1e-9, atol=1e-12) else (
                    f" That is the sum of its rows divided by {len(rows) + 1}, count + 1: divide by the count, and guard only the empty clusters.")
                fail(f"C[{j}] ({scenario}): {C[j].tolist()}, but the mean of the {len(rows)} rows labelled {j} is {mean.tolist()}; after"
                     f" converging, each centroid is the mean of its rows.{shrunk}",
                     failing_input=Call.code(f"{BLOBS_CODE}\n{kmeans_code(4, 100, seed)}\nC[{j}], X[labels == {j}].mean(axis=0)  # expected equal"))


@check("deterministic per seed, whatever the global NumPy RNG state")
def deterministic(sub, ctx):
    for seed, (code, k, iters) in enumerate(DETERMINISM_CODES):
        X = build(code)
        runs = sub.run(under_global_states, X, k, iters, seed, code)
        scenario = describe(X, k, iters, seed)
        results = [as_result(r, X, k, scenario) for r in expect_sequence(runs, 3, what="three runs", scenario=scenario)]
        same = [np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in ((results[0], results[1]), (results[0], results[2]))]
        if not same[0]:
            cause = ("Under np.random.seed(1) again the result repeats, so the global RNG is what changes it: " if same[1] else
                     "Even under the same global state a rerun differs, so something unseeded changes it: ")
            fail(f"{scenario}: two calls with seed = {seed}, after np.random.seed(1) and after np.random.seed(2), return different (C,"
                 f" labels); the same seed must give the same result, bit for bit. {cause}{RNG_HINT}.")


@check("inertia never rises over iters = 1, 2, ..., 10 (same seed)")
def inertia_monotone(sub, ctx):
    for seed, (code, k) in enumerate(INERTIA_CODES):
        X = build(code)
        iters_list = list(range(1, 11))
        runs = expect_sequence(sub.run(iters_sweep, X, k, seed, iters_list, code), len(iters_list), what="runs", scenario="")
        values = []
        for iters, got in zip(iters_list, runs):
            C, labels = as_result(got, X, k, describe(X, k, iters, seed))
            values.append(inertia(X, C, labels))
        for t in range(1, len(values)):
            if values[t] > values[t - 1] * (1 + INERTIA_RTOL):
                fail(f"X {X.shape}, k = {k}, seed = {seed}: the inertia sum ||x - C[label]||^2 rises from {values[t - 1]:.10g} (iters ="
                     f" {iters_list[t - 1]}) to {values[t]:.10g} (iters = {iters_list[t]}). Each iteration assigns every row to its nearest"
                     " centroid and moves each centroid to the mean of its rows, which can never increase it, so the same seed must"
                     " continue the same run: the same start, then exact means.", inertia=values)


FEW_DISTINCT = [  # (what, X, k): fewer distinct rows than k
    ("3 equal rows, k = 2", [[1.0, 2.0]] * 3, 2),
    ("6 rows, 2 distinct, k = 3", [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0]], 3),
    ("4 rows, 2 distinct, k = N = 4", [[0.0], [0.0], [3.0], [3.0]], 4),
    ("5 equal rows, k = 5", [[0.5, -1.0]] * 5, 5),
    ("8 rows, 3 distinct, k = 6", [[0.0], [2.0], [0.0], [5.0], [2.0], [5.0], [0.0], [2.0]], 6),
]


@check("fewer distinct rows than k: succeeds, C finite, every label nearest", edge="Works with fewer distinct rows than k.")
def few_distinct(sub, ctx):
    for what, X, k in FEW_DISTINCT:
        for seed in range(4):
            judged_call(sub, np.array(X), k, 10, seed, what=f" ({what})", empty_clusters=True)
    for seed in range(3):
        judged_call(sub, build(FEW_DISTINCT_CODE), 5, 10, seed, FEW_DISTINCT_CODE, " (3 distinct rows)", empty_clusters=True)


@check("k-means++: one large blob, two small far ones (5 of 6 seeds within 1.5x the optimum)")
def plusplus_effect(sub, ctx):
    X = build(PLUSPLUS_CODE)
    optimum = sum(((X[PLUSPLUS_PARTS == j] - X[PLUSPLUS_PARTS == j].mean(axis=0)) ** 2).sum() for j in range(3))
    runs = expect_sequence(sub.run(over_seeds, X, 3, list(PP_SEEDS), PLUSPLUS_CODE), len(PP_SEEDS), what="runs", scenario="")
    ratios, missed = [], 0
    for seed, got in zip(PP_SEEDS, runs):
        C, labels = as_result(got, X, 3, describe(X, 3, 100, seed))
        ratios.append(inertia(X, C, labels) / optimum)
        missed += not same_partition(labels, PLUSPLUS_PARTS)
    good = sum(r <= PP_FACTOR for r in ratios)
    if good < PP_NEEDED:
        if missed:  # the evidence of a bad start: a small blob without a centroid of its own
            seen = f" On {missed} seeds a small blob has no centroid of its own (it shares one with another blob). {PP_HINT}."
        else:
            seen = (" Yet every seed separates the three blobs: the labels are right, so the centroids are not at the means of"
                    " their rows.")
        fail(f"X = 20000 points N(0, I) in 2-D plus two blobs of 4 points around (10000, 0) and (10000, 2000), k = 3, default iters: the"
             f" inertia is within {PP_FACTOR:g}x the optimum (the three blobs' own partition) on {good} of {len(ratios)} seeds"
             f" ({', '.join(f'{r:.3g}x' for r in ratios)}), at least {PP_NEEDED} needed.{seen}", ratios=ratios)


def same_partition(labels, parts):
    """Whether labels split the rows exactly as parts does (up to renaming the clusters)."""
    pairs = set(zip(labels.tolist(), parts.tolist()))
    return len(pairs) == len(set(labels.tolist())) == len(set(parts.tolist()))


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    code = "rng = np.random.default_rng(11)\nX = 5 + rng.standard_normal((60, 3))"
    X = build(code)
    with on_input(Call.code(f"{code}\nX_before = X.copy()\n{kmeans_code(4, 5, 0)}\nnp.array_equal(X, X_before)  # expected True")):
        inputs_unchanged(sub, "kmeans", X, 4, iters=5, seed=0, scenario=describe(X, 4, 5, 0))
    # Every check's inputs, extreme ones included (fewer distinct rows than k, far blobs), small ones first.
    for X, k, iters, seed in [*NEAREST_LISTED, *((np.array(X), k, 10, 0) for _, X, k in FEW_DISTINCT)]:
        inputs_unchanged(sub, "kmeans", X, k, iters=iters, seed=seed, scenario=describe(X, k, iters, seed))
    for code, k, iters, seed in [*NEAREST_CODES, *((code, k, iters, 0) for code, k, iters in DETERMINISM_CODES),
                                 *((code, k, 10, 0) for code, k in INERTIA_CODES), (FEW_DISTINCT_CODE, 5, 10, 0), (BLOBS_CODE, 4, 100, 0),
                                 (PLUSPLUS_CODE, 3, 100, 0)]:
        X = build(code)
        with on_input(Call.code(f"{code}\nX_before = X.copy()\n{kmeans_code(k, iters, seed)}\nnp.array_equal(X, X_before)  # expected True")):
            inputs_unchanged(sub, "kmeans", X, k, iters=iters, seed=seed, scenario=describe(X, k, iters, seed))


@check("memory: 200k x 32 float64, k = 64 within 1 GiB (no (N, k, D) array)")
def memory(sub, ctx):
    N, D, k, iters = BIG_CASE
    scenario = f"X ({N}, {D}) float64 = np.random.default_rng(9).standard_normal, k = {k}, iters = {iters}"
    too_big = (f"an (N, k, D) array of differences X[:, None] - C[None] is {N * k * D * 8 / 1e9:.2g} GB; use ||x||^2 - 2 x.c + ||c||^2, an (N, k)"
               f" matrix ({N * k * 8 / 1e6:.0f} MB)")
    with out_of_memory_said(lambda said: f"{scenario}: {said}; {too_big}."):
        got, peak = expect_sequence(sub.run(memory_peak, 9, N, D, k, iters), 2, what="result and peak memory", scenario=scenario)
    if peak > MEMORY_BUDGET:
        fail(f"{scenario}: the call allocated {peak / 2**30:.2f} GiB at its peak, over {MEMORY_BUDGET / 2**30:g} GiB; X itself is {N * D * 8 / 2**20:.0f} MiB,"
             f" {too_big}.", peak_bytes=int(peak))
    X = np.random.default_rng(9).standard_normal((N, D))
    with on_input(Call.code(f"{random_code(9, N, D)}\n{nearest_expression(k, iters, 0, large=True)}")):
        C, labels = as_result(got, X, k, scenario)
        assert_nearest(X, C, labels, scenario)
