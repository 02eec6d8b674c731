"""Checks for `knn`: exact k-nearest-neighbour indices under a memory budget.

The judge never compares indices: near-ties may legitimately come back in either order. It takes the
returned indices, computes their true squared distances here in float64 (directly, as sum((q - x)**2)),
and compares them, in the order returned, with the brute-force k smallest squared distances sorted
ascending. Tolerance: 1e-5 relative (what float32 arithmetic on centred float32 data meets), plus
1e-5 times the data's mean squared spread for distances at or near 0.
Memory is measured in the sandbox with tracemalloc around the call (peak_traced_memory); the
returned (M, k) int64 array is not counted. Time is measured from the judge (time_ratio).
"""

import numpy as np

from mlprep.grading import assert_close, assert_dtype, assert_shape, check, fail, inputs_unchanged, peak_traced_memory, time_ratio

RTOL = 1e-5
MAX_TIME_RATIO = 5.0
# Queries per block when the judge computes brute-force distances (bounds the judge's own memory).
JUDGE_ROWS = 32

ORDER_HINT = "sort each row's k neighbours by distance, nearest first (argpartition alone leaves them unordered)"
FAR_HINT = ("||q||^2 + ||x||^2 - 2 q.x cancels catastrophically when the data sit far from the origin: subtract a centre"
            " (e.g. the mean of X) from X and Q first, or re-rank the candidates with exact float64 distances")
INDEX_HINT = "return the row indices of the neighbours in X (int64), not their distances"
MEMORY_HINT = ("batch the queries, and when one batch of distances or X itself is too big, walk over chunks of X"
               " (convert, centre and take norms chunk by chunk) and merge the partial top-k lists; never build an"
               " (M, N, D) difference array or convert all of X at once")


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox)
# ---------------------------------------------------------------------------------------------
def knn_on_bad_input(module, X, Q, k):
    """Scenario: what knn does with invalid input: {"raised": exception type name, "message": ...}, or
    {"raised": None, "result": ...} when it returns. Subclasses of ValueError count as ValueError."""
    try:
        result = module.knn(X, Q, k)
    except ValueError as exc:
        return {"raised": "ValueError", "message": str(exc)[:200]}
    except Exception as exc:  # named for the judge, so its message can say which input raised what
        return {"raised": type(exc).__name__, "message": str(exc)[:200]}
    return {"raised": None, "result": result}


def knn_on_random_data(module, seed, n, d, m, k):
    """Scenario: knn on float32 data generated here from a seed (cheaper than sending 51 MB through the pipe)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d), dtype=np.float32)
    Q = rng.random((m, d), dtype=np.float32)
    return module.knn(X, Q, k)


# ---------------------------------------------------------------------------------------------
# The judge's side
# ---------------------------------------------------------------------------------------------
def exact_sq_dists(X, Q, idx):
    """Squared distances (M, k) between each query and its listed rows of X, exactly, in float64."""
    X64, Q64 = np.asarray(X, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    out = np.empty(idx.shape)
    for s in range(0, len(Q64), JUDGE_ROWS):
        out[s:s + JUDGE_ROWS] = ((X64[idx[s:s + JUDGE_ROWS]] - Q64[s:s + JUDGE_ROWS, None, :]) ** 2).sum(axis=2)
    return out


def brute_force_sq_dists(X, Q, k):
    """The k smallest squared distances of each query, ascending (M, k), float64: candidates from a
    centred float64 expansion, their distances then recomputed exactly."""
    X64, Q64 = np.asarray(X, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    centre = X64.mean(axis=0)
    Xc = X64 - centre
    x_sq = (Xc * Xc).sum(axis=1)
    idx = np.empty((len(Q64), k), dtype=np.int64)
    for s in range(0, len(Q64), JUDGE_ROWS):
        q = Q64[s:s + JUDGE_ROWS] - centre
        d = (q * q).sum(axis=1)[:, None] + x_sq - 2.0 * (q @ Xc.T)
        idx[s:s + JUDGE_ROWS] = np.argpartition(d, k - 1, axis=1)[:, :k]
    return np.sort(exact_sq_dists(X, Q, idx), axis=1)


def spread(X):
    """Mean squared distance of the rows of X from their mean: the scale of the data's distances."""
    X64 = np.asarray(X, dtype=np.float64)
    return float(((X64 - X64.mean(axis=0)) ** 2).sum(axis=1).mean())


def as_indices(got, X, M, k, scenario):
    """The result as an (M, k) int64 array of distinct in-range indices, or a clean fail."""
    N = len(X)
    assert_dtype(got, "int64", what="knn's result", scenario=scenario, hint=INDEX_HINT)
    if np.ndim(got) == 2 and np.shape(got)[0] == M and k > N and np.shape(got)[1] == k:
        fail(f"knn's result ({scenario}): expected shape {(M, N)}, got {np.shape(got)}; k = {k} is larger than N = {N},"
             f" so it is clipped to N", expected_shape=[M, N], got_shape=list(np.shape(got)))
    k = min(k, N)
    assert_shape(got, (M, k), what="knn's result", scenario=scenario)
    idx = np.asarray(got)
    outside = (idx < 0) | (idx >= N)
    if outside.any():
        r, c = np.argwhere(outside)[0]
        fail(f"knn's result ({scenario}): index {int(idx[r, c])} at position ({r}, {c}) is not a row of X (0 <= index < {N})",
             row=int(r), column=int(c), got=int(idx[r, c]))
    ordered = np.sort(idx, axis=1)
    repeated = ordered[:, 1:] == ordered[:, :-1]
    if repeated.any():
        r, c = np.argwhere(repeated)[0]
        fail(f"knn's result ({scenario}): row {r} lists index {int(ordered[r, c])} more than once ({idx[r].tolist()[:12]});"
             " each row must hold k distinct rows of X", row=int(r), index=int(ordered[r, c]))
    return idx


def assert_nearest(got, X, Q, k, scenario, hint=""):
    """got holds, for each query, the k nearest rows of X, nearest first (compared by distance)."""
    M = len(Q)
    idx = as_indices(got, X, M, k, scenario)
    k = idx.shape[1]
    got_d = exact_sq_dists(X, Q, idx)
    want_d = brute_force_sq_dists(X, Q, k)
    atol = RTOL * spread(X)
    if not hint:
        hint = diagnose(got_d, want_d, atol)
    assert_close(got_d, want_d, what="true squared distances of the returned neighbours, in the order returned",
                 scenario=scenario, rtol=RTOL, atol=atol, hint=hint)
    return idx


def diagnose(got_d, want_d, atol):
    """What a mismatch most likely means, for the hint."""
    close = np.abs(got_d - want_d) <= atol + RTOL * want_d
    if close.all():
        return ""
    if np.allclose(np.sort(got_d, axis=1), want_d, rtol=RTOL, atol=atol):
        return "these are the right neighbours in the wrong order: " + ORDER_HINT
    if np.mean(got_d.sum(axis=1) > want_d.sum(axis=1) * 2 + atol) > 0.9 and np.all(np.diff(got_d, axis=1) <= atol):
        return "the distances come back in descending order and far too large: these look like the farthest rows, not the nearest"
    return "some returned rows are not among the k nearest: check the distance formula, the selection and the index bookkeeping"


def random_data(rng, N, M, D, dtype=np.float64, offset=0.0):
    X = rng.standard_normal((N, D)) + offset
    Q = rng.standard_normal((M, D)) + offset
    return X.astype(dtype), Q.astype(dtype)


def mib(n_bytes):
    return f"{n_bytes / 2**20:.2f} MiB"


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
@check("k nearest rows, nearest first (random float64 data)")
def nearest_float64(sub, ctx):
    rng = ctx.rng(1)
    for N, M, D, k in [(300, 37, 5, 7), (1000, 64, 32, 10), (200, 10, 3, 20)]:
        X, Q = random_data(rng, N, M, D)
        assert_nearest(sub.call("knn", X, Q, k), X, Q, k, f"float64, X {X.shape}, Q {Q.shape}, k = {k}")


@check("nearest first, also for large k (300 of 2000)")
def sorted_large_k(sub, ctx):
    # NumPy's argpartition on AVX-512 machines often happens to return a short prefix already sorted;
    # for a few hundred it does not, so the order must come from an explicit sort.
    rng = ctx.rng(11)
    X, Q = random_data(rng, 2000, 20, 6)
    assert_nearest(sub.call("knn", X, Q, 300), X, Q, 300, "float64, X (2000, 6), Q (20, 6), k = 300")


@check("k = 1, k = N and k > N (clipped to N)")
def k_edges(sub, ctx):
    rng = ctx.rng(2)
    X, Q = random_data(rng, 40, 9, 4)
    for k in (1, 40, 60):
        note = " (clipped to 40)" if k > 40 else ""
        assert_nearest(sub.call("knn", X, Q, k), X, Q, k, f"float64, X (40, 4), Q (9, 4), k = {k}{note}")


@check("N = 1, D = 1, M = 1")
def tiny_shapes(sub, ctx):
    rng = ctx.rng(3)
    for N, M, D, k in [(1, 5, 3, 1), (1, 5, 3, 4), (50, 8, 1, 6), (60, 1, 7, 5), (1, 1, 1, 1)]:
        X, Q = random_data(rng, N, M, D)
        clipped = f" (clipped to {N})" if k > N else ""
        assert_nearest(sub.call("knn", X, Q, k), X, Q, k, f"float64, N = {N}, M = {M}, D = {D}, k = {k}{clipped}")


@check("float32, float64, integer and mixed inputs")
def input_dtypes(sub, ctx):
    rng = ctx.rng(4)
    X, Q = random_data(rng, 500, 40, 16, np.float32)
    assert_nearest(sub.call("knn", X, Q, 8), X, Q, 8, "float32, X (500, 16), Q (40, 16), k = 8")
    # Pixel-like uint8 data: arithmetic in uint8 wraps around; exact integer ties are common.
    X = rng.integers(0, 256, (400, 12), dtype=np.uint8)
    Q = rng.integers(0, 256, (30, 12), dtype=np.uint8)
    assert_nearest(sub.call("knn", X, Q, 6), X, Q, 6, "uint8 values 0..255, X (400, 12), Q (30, 12), k = 6",
                   hint="convert integer data to floating point before any arithmetic: uint8 differences and squares wrap around")
    X = rng.integers(-1000, 1000, (300, 6), dtype=np.int64)
    Q = rng.integers(-1000, 1000, (25, 6), dtype=np.int32)
    assert_nearest(sub.call("knn", X, Q, 5), X, Q, 5, "int64 X (300, 6) and int32 Q (25, 6), values -1000..999, k = 5")
    X, _ = random_data(rng, 300, 1, 8, np.float32)
    Q = rng.standard_normal((20, 8))
    assert_nearest(sub.call("knn", X, Q, 5), X, Q, 5, "float32 X (300, 8) with float64 Q (20, 8), k = 5")


@check("queries that are rows of X come back first (distance 0)")
def exact_matches(sub, ctx):
    rng = ctx.rng(5)
    for dtype in (np.float32, np.float64):
        X, _ = random_data(rng, 400, 1, 8, dtype)
        rows = rng.choice(400, size=64, replace=False)
        Q = X[rows].copy()
        assert_nearest(sub.call("knn", X, Q, 4), X, Q, 4, f"{np.dtype(dtype).name}, X (400, 8), Q = 64 rows of X, k = 4",
                       hint="the nearest neighbour of a row of X is itself, at distance 0; rounding can make a computed"
                            " squared distance slightly negative: clamp it at 0 before any square root (or rank squared distances)")


@check("far from the origin (offset 1e3, unit spread)")
def far_from_origin(sub, ctx):
    rng = ctx.rng(6)
    for dtype, D in ((np.float32, 8), (np.float32, 32), (np.float64, 16)):
        X, Q = random_data(rng, 2000, 50, D, dtype, offset=1e3)
        assert_nearest(sub.call("knn", X, Q, 5), X, Q, 5,
                       f"{np.dtype(dtype).name}, X (2000, {D}) and Q (50, {D}) = 1e3 + N(0, 1) in every coordinate, k = 5",
                       hint=FAR_HINT)


@check("ValueError for k < 1, empty X or Q, mismatched D")
def bad_input(sub, ctx):
    X = np.arange(15.0).reshape(5, 3)
    Q = np.ones((2, 3))
    cases = [
        ("k = 0", X, Q, 0),
        ("k = -1", X, Q, -1),
        ("empty X, shape (0, 3)", np.zeros((0, 3)), Q, 1),
        ("empty Q, shape (0, 3)", X, np.zeros((0, 3)), 1),
        ("X (5, 3) with Q (2, 4)", X, np.ones((2, 4)), 1),
        ("X (5, 3) with Q (2, 1), which would broadcast", X, np.ones((2, 1)), 1),
    ]
    for what, X_, Q_, k in cases:
        outcome = sub.run(knn_on_bad_input, X_, Q_, k)
        raised = outcome.get("raised") if isinstance(outcome, dict) else None
        if raised == "ValueError":
            continue
        if raised:
            fail(f"bad input ({what}): expected knn to raise ValueError, but it raised {raised}: {outcome.get('message')};"
                 " check the inputs first and raise ValueError with a clear message", case=what, raised=raised)
        got = outcome.get("result") if isinstance(outcome, dict) else outcome
        shape = f" of shape {np.shape(got)}" if isinstance(got, np.ndarray) else ""
        fail(f"bad input ({what}): expected knn to raise ValueError, but it returned {type(got).__name__}{shape}",
             case=what)


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    rng = ctx.rng(7)
    for dtype in (np.float32, np.float64):
        X, Q = random_data(rng, 300, 20, 6, dtype, offset=5.0)
        inputs_unchanged(sub, "knn", X, Q, 4, scenario=f"{np.dtype(dtype).name}, X (300, 6), Q (20, 6), k = 4")


@check("correct when working in chunks (max_bytes = 256 KiB)")
def chunked(sub, ctx):
    rng = ctx.rng(8)
    X, Q = random_data(rng, 5000, 300, 16, np.float32)
    got = sub.call("knn", X, Q, 7, max_bytes=256 * 2**10)
    assert_nearest(got, X, Q, 7, "float32, X (5000, 16), Q (300, 16), k = 7, max_bytes = 256 KiB",
                   hint="with a small budget X and Q are processed in pieces: offset each chunk's indices by the chunk's"
                        " first row, merge every chunk's candidates into the running top-k, and cover the last, partial batch")


def check_memory(sub, ctx, X, Q, k, max_bytes, scenario):
    M = len(Q)
    result, peak = sub.run(peak_traced_memory, "knn", [X, Q, k], {"max_bytes": max_bytes})
    assert_nearest(result, X, Q, k, scenario)
    used = peak - M * min(k, len(X)) * 8  # the returned array does not count
    if used > max_bytes:
        fail(f"memory ({scenario}): the call allocated {mib(used)} at its peak (not counting the returned {M} x {k}"
             f" int64 array), over max_bytes = {mib(max_bytes)}; {MEMORY_HINT}", peak_bytes=int(used), max_bytes=max_bytes)


@check("memory: 20k x 64 float64 within max_bytes = 4 MiB")
def memory_float64(sub, ctx):
    rng = ctx.rng(9)
    X, Q = random_data(rng, 20_000, 100, 64)
    check_memory(sub, ctx, X, Q, 10, 4 * 2**20, "float64, X (20000, 64) = 9.8 MiB, Q (100, 64), k = 10, max_bytes = 4 MiB")


@check("memory: 200k x 8 float32 within max_bytes = 1 MiB")
def memory_float32(sub, ctx):
    rng = ctx.rng(10)
    X, Q = random_data(rng, 200_000, 100, 8, np.float32)
    check_memory(sub, ctx, X, Q, 10, 2**20, "float32, X (200000, 8) = 6.1 MiB, Q (100, 8), k = 10, max_bytes = 1 MiB;"
                 " X converted to float64, or all of its norms in float64, would not fit")


@check("speed: 100k x 128 float32, 1,000 queries, k = 10")
def speed(sub, ctx):
    scenario = "speed (float32 X (100000, 128), Q (1000, 128), k = 10, default max_bytes)"
    hint = ("compute a whole batch of queries against a chunk of X with one matrix product, no Python loop over queries,"
            " and select with argpartition rather than a full sort of every row")
    learner_s, reference_s, ratio = time_ratio(sub, ctx, knn_on_random_data, 12, 100_000, 128, 1000, 10, repeats=1,
                                               max_ratio=MAX_TIME_RATIO, what=scenario, hint=hint)
    if ratio > MAX_TIME_RATIO:
        fail(f"{scenario}: your knn took {learner_s:.2f} s, {ratio:.1f}x the reference's {reference_s:.2f} s measured in"
             f" the same run (allowed: {MAX_TIME_RATIO:g}x); {hint}", learner_s=learner_s, reference_s=reference_s, ratio=ratio)
