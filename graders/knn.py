"""Checks for `knn`: exact k-nearest-neighbour indices under a memory budget.

The judge never compares indices: near-ties may legitimately come back in either order. It takes the
returned indices, computes their true squared distances here in float64 (directly, as sum((q - x)**2)),
and compares them, in the order returned, with the brute-force k smallest squared distances sorted
ascending. Tolerance: 1e-5 relative (what float32 arithmetic on centred float32 data meets), plus
1e-5 times the data's mean squared spread for distances at or near 0.
Memory is measured in the sandbox with tracemalloc around the call (peak_traced_memory); the
returned (M, k) int64 array is not counted. Time is measured from the judge (time_ratio).

Hints follow the evidence, in this order: what the returned distances themselves show (the right
neighbours farthest first, the right ones unordered, the farthest rows), then the check's own
control experiment, run only after a failure (the same data shifted to the origin, the same call
with the default max_bytes, the same values as float64), then a generic diagnosis.
Large random inputs are built by a few lines of code (`build`), which are also the failing input
shown when shrinking finds no smaller failing case.
"""

import contextlib
import math

import numpy as np

from mlprep.grading import (Call, CheckFailed, assert_close, assert_dtype, assert_returns_like, assert_shape, check, fail, grid, inputs_from_code, inputs_unchanged,
                            lists_of, on_input, out_of_memory_said, outcome, peak_traced_memory, scenario, shrink_on_failure, time_ratio)

RTOL = 1e-5
MAX_TIME_RATIO = 5.0
# Queries per block when the judge computes brute-force distances (bounds the judge's own memory).
JUDGE_ROWS = 32
OFFSET = 1e3  # where the far-from-origin data sit
SPEED_SEED = 12

FAR_HINT = ("||q||^2 + ||x||^2 - 2 q.x cancels catastrophically when the data sit far from the origin: subtract a centre"
            " (e.g. the mean of X) from X and Q first, or re-rank the candidates with exact float64 distances")
MEMORY_HINT = ("to fit, batch the queries and walk over chunks of X (convert, centre and take norms chunk by chunk), keeping only"
               " each block's k best candidates and merging them into a running top-k list")


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox)
# ---------------------------------------------------------------------------------------------
@scenario(repro=lambda interface, X_code, Q_code, k: Call.code(f"knn({X_code}, {Q_code}, {k})  # expected: ValueError"))
def knn_on_bad_input(module, X_code, Q_code, k):
    """Scenario: what knn does with invalid input (X and Q built here from their code, so that the
    failing input reads as written), as `outcome` records it: {"raised": exception type name, "classes":
    the type names along its MRO, "message": ...}, or {"raised": None, "result": ...} when it returns."""
    X, Q = (eval(code, {"np": np, "__builtins__": {}}) for code in (X_code, Q_code))
    return outcome(lambda: module.knn(X, Q, k))


def _random_data_repro(interface, seed, n, d, m, k):
    return Call.code(f"import time\n{uniform_float32_code(seed, n, d, m)}\nstart = time.perf_counter(); knn(X, Q, {k})\n"
                     f"time.perf_counter() - start  # seconds: at most {MAX_TIME_RATIO:g}x the reference's time on this input")


@scenario(repro=_random_data_repro)
def knn_on_random_data(module, seed, n, d, m, k):
    """Scenario: knn on float32 data generated here from a seed (cheaper than sending 26 MB through the pipe)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d), dtype=np.float32)
    Q = rng.random((m, d), dtype=np.float32)
    return module.knn(X, Q, k)


def _peak_memory_repro(interface, code, k, max_bytes):
    return Call.code(f"import tracemalloc\n{code}\ntracemalloc.start(); idx = {knn_code(k, max_bytes)}\n"
                     "peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()\n"
                     f"peak - idx.nbytes  # bytes at the call's peak, not counting the result: at most max_bytes = {budget_text(max_bytes)}")


@scenario(repro=_peak_memory_repro)
def knn_peak_memory(module, code, k, max_bytes):
    """Scenario: (knn's result, peak bytes traced during the call) on X and Q built here by `code`, as the
    judge builds them (5 MB that need not go through the pipe, and an input that reads as code)."""
    X, Q = build(code)
    return peak_traced_memory(module, "knn", [X, Q, k], {"max_bytes": max_bytes})


def uniform_float32_code(seed, n, d, m):
    """The lines that build knn_on_random_data's X and Q."""
    return (f"rng = np.random.default_rng({seed})\nX = rng.random(({n}, {d}), dtype=np.float32)\n"
            f"Q = rng.random(({m}, {d}), dtype=np.float32)")


# ---------------------------------------------------------------------------------------------
# Inputs: large ones are built by code, which is how the learner rebuilds them
# ---------------------------------------------------------------------------------------------
def normal_code(seed, N, M, D, dtype="float64", offset=0.0):
    """Lines that build X (N, D) and Q (M, D) of `dtype`: offset + N(0, 1) in every coordinate."""
    def draw(shape):
        text = f"rng.standard_normal({shape})"
        if offset:
            text = f"({offset:g} + {text})" if dtype != "float64" else f"{offset:g} + {text}"
        return text if dtype == "float64" else f"{text}.astype(np.{dtype})"
    return f"rng = np.random.default_rng({seed})\nX = {draw((N, D))}\nQ = {draw((M, D))}"


def far_columns_code(seed, N, M, D, dtype):
    """Lines that build X (N, D) and Q (M, D) of `dtype` whose columns sit at -1e3 and +1e3 in turn, unit spread: one
    shift for every coordinate (X.mean() instead of X.mean(axis=0)) leaves them far from the origin."""
    return (f"rng = np.random.default_rng({seed})\noffsets = np.where(np.arange({D}) % 2, {OFFSET:g}, -{OFFSET:g})\n"
            f"X = (offsets + rng.standard_normal(({N}, {D}))).astype(np.{dtype})\nQ = (offsets + rng.standard_normal(({M}, {D}))).astype(np.{dtype})")


def build(code):
    return inputs_from_code(code, "X", "Q")


def budget_text(max_bytes):
    """max_bytes as Python that reads like its size: 4 * 2**20, 2**20, 256 * 2**10, 64."""
    for unit, name in ((2**20, "2**20"), (2**10, "2**10")):
        if max_bytes % unit == 0:
            return name if max_bytes == unit else f"{max_bytes // unit} * {name}"
    return str(max_bytes)


def knn_code(k, max_bytes=None):
    return f"knn(X, Q, {k})" if max_bytes is None else f"knn(X, Q, {k}, max_bytes={budget_text(max_bytes)})"


def describe(X, Q, k, max_bytes=None, what=""):
    dtypes = X.dtype.name if X.dtype == Q.dtype else f"{X.dtype.name} X with {Q.dtype.name} Q"
    budget = "" if max_bytes is None else f", max_bytes = {size_text(max_bytes)}"
    clipped = f" (clipped to {len(X)})" if k > len(X) else ""
    return f"{dtypes}, X {X.shape}, Q {Q.shape}{what}, k = {k}{clipped}{budget}"


def mib(n_bytes):
    return f"{n_bytes / 2**20:.2f} MiB"


def size_text(n_bytes):
    """4 MiB, 256 KiB, 64 bytes: a budget as it was written."""
    for unit, name in ((2**20, "MiB"), (2**10, "KiB")):
        if n_bytes >= unit and n_bytes % unit == 0:
            return f"{n_bytes // unit} {name}"
    return f"{n_bytes} bytes"


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


def brute_force(X, Q, k, largest=False):
    """(squared distances ascending, their rows), each (M, k): the k nearest rows of each query (the k
    farthest with largest=True), float64: candidates from a centred float64 expansion, their
    distances then recomputed exactly."""
    X64, Q64 = np.asarray(X, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    centre = X64.mean(axis=0)
    Xc = X64 - centre
    x_sq = (Xc * Xc).sum(axis=1)
    idx = np.empty((len(Q64), k), dtype=np.int64)
    for s in range(0, len(Q64), JUDGE_ROWS):
        q = Q64[s:s + JUDGE_ROWS] - centre
        d = (q * q).sum(axis=1)[:, None] + x_sq - 2.0 * (q @ Xc.T)
        idx[s:s + JUDGE_ROWS] = np.argpartition(-d if largest else d, k - 1, axis=1)[:, :k]
    dist = exact_sq_dists(X, Q, idx)
    order = np.argsort(dist, axis=1, kind="stable")
    return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)


def spread(X):
    """Mean squared distance of the rows of X from their mean: the scale of the data's distances."""
    X64 = np.asarray(X, dtype=np.float64)
    return float(((X64 - X64.mean(axis=0)) ** 2).sum(axis=1).mean())


def close(got_d, want_d, atol):
    return np.abs(got_d - want_d) <= atol + RTOL * want_d


def as_indices(got, X, Q, k, scenario):
    """The result as an (M, min(k, N)) int64 NumPy array, or a clean fail (its indices may still be wrong)."""
    M, N = len(Q), len(X)
    assert_returns_like(got, X, what="knn's result", scenario=scenario)
    if getattr(got, "dtype", None) != np.int64:
        key, hint = dtype_hint(got, X, Q, k)
        try:
            assert_dtype(got, "int64", what="knn's result", scenario=scenario, hint=hint)
        except CheckFailed as failure:
            failure.details["diagnosis"] = key
            raise
    if np.ndim(got) == 2 and np.shape(got)[0] == M and k > N and np.shape(got)[1] == k:
        fail(f"knn's result ({scenario}): expected shape {(M, N)}, got {np.shape(got)}; k = {k} is larger than N = {N},"
             f" so it is clipped to N", expected_shape=[M, N], got_shape=list(np.shape(got)), diagnosis="k not clipped")
    assert_shape(got, (M, min(k, N)), what="knn's result", scenario=scenario)
    return np.asarray(got)


def dtype_hint(got, X, Q, k):
    """(key, hint) for a result of the wrong dtype: what it holds, when it shows (the distances, or
    indices as floats)."""
    k = min(k, len(X))
    if not isinstance(got, np.ndarray) or got.dtype.kind != "f" or got.shape != (len(Q), k) or not np.isfinite(got).all():
        return "dtype", ""
    values = got.astype(np.float64)
    want_d, _ = brute_force(X, Q, k)
    atol = 1e-3 * spread(X)
    as_distances = any(np.all(np.abs(values - d) <= atol + 1e-3 * d) for d in (want_d, np.sqrt(want_d)))
    like_indices = bool(np.all(values == np.round(values)) and values.min() >= 0 and values.max() < len(X))
    if as_distances and not like_indices:
        return "distances", "these are the neighbours' distances: return their row indices in X (int64) instead"
    if like_indices and not as_distances:
        return "float indices", "these look like row indices, but as floats: return them as an int64 array (.astype(np.int64))"
    return "dtype", ""


def wrong_neighbours(idx, X, Q, scenario):
    """(message, details) when idx (M, k) is not, for each query, k distinct rows of X with the k smallest
    distances, nearest first; None when it is."""
    N = len(X)
    outside = (idx < 0) | (idx >= N)
    if outside.any():
        r, c = np.argwhere(outside)[0]
        return (f"knn's result ({scenario}): index {int(idx[r, c])} at position ({r}, {c}) is not a row of X (0 <= index < {N}).",
                {"row": int(r), "column": int(c), "got": int(idx[r, c])})
    ordered = np.sort(idx, axis=1)
    repeated = ordered[:, 1:] == ordered[:, :-1]
    if repeated.any():
        r, c = np.argwhere(repeated)[0]
        return (f"knn's result ({scenario}): row {r} lists index {int(ordered[r, c])} more than once ({idx[r].tolist()[:12]});"
                " each row must hold k distinct rows of X.", {"row": int(r), "index": int(ordered[r, c])})
    want_d, _ = brute_force(X, Q, idx.shape[1])
    try:
        assert_close(exact_sq_dists(X, Q, idx), want_d, what="true squared distances of the returned neighbours, in the order returned",
                     scenario=scenario, rtol=RTOL, atol=RTOL * spread(X))
    except CheckFailed as failure:
        return failure.message, failure.details
    return None


class Returned:
    """What a wrong result shows, for the hint: computed only after a failure."""

    def __init__(self, idx, X, Q):
        self.X, self.Q, self.idx = X, Q, idx
        self.N, self.M, self.k = len(X), len(Q), idx.shape[1]
        self.atol = RTOL * spread(X)
        in_range = (idx >= 0) & (idx < self.N)
        self.want_d, self.want_i = brute_force(X, Q, self.k)
        self.got_d = exact_sq_dists(X, Q, np.where(in_range, idx, 0))
        ordered = np.sort(idx, axis=1)
        distinct = ~(ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        self.valid = bool(in_range.all() and distinct.all())
        row_ok = in_range.all(axis=1) & distinct & close(self.got_d, self.want_d, self.atol).all(axis=1)
        self.wrong_rows = np.flatnonzero(~row_ok)

    def same_set(self):
        return self.valid and close(np.sort(self.got_d, axis=1), self.want_d, self.atol).all()

    def last_queries_wrong(self):
        """The first wrong query when exactly the queries from it to the last are wrong (and some before are right)."""
        wrong = self.wrong_rows
        if len(wrong) and wrong[0] > 0 and np.array_equal(wrong, np.arange(wrong[0], self.M)):
            return int(wrong[0])
        return None

    def index_bound(self):
        """B when every returned index is below B <= N / 2 although some true neighbour is at B or beyond."""
        bound = int(self.idx.max()) + 1
        if self.idx.min() >= 0 and bound <= self.N // 2 and self.want_i.max() >= bound:
            return bound
        return None


def diagnose(r):
    """(key, hint) for what the returned distances show by themselves: the right neighbours farthest first
    or unordered, or the farthest rows; None when they show none of these."""
    if not r.valid:
        return None
    if r.same_set():
        if np.all(np.diff(r.got_d, axis=1) <= r.atol + RTOL * r.got_d[:, 1:]):
            return "farthest first", "these are the right neighbours, but farthest first: sort each row's k neighbours by ascending distance, nearest first"
        return "unordered", ("these are the right neighbours in no particular order: sort each row's k neighbours by distance, nearest"
                             " first (argpartition alone leaves them unordered)")
    # The k farthest rows, for every query: evidence only where a wrong choice would rarely be exactly
    # those by chance (with N = 2 and k = 1, every wrong answer is the farthest row).
    if r.M * math.log(max(math.comb(r.N, r.k) - 1, 1)) >= math.log(20):
        far_d, _ = brute_force(r.X, r.Q, r.k, largest=True)
        if close(np.sort(r.got_d, axis=1), far_d, r.atol).all():
            return "farthest rows", "these are the k farthest rows of X, not the k nearest: keep the k smallest distances (argpartition(d, k - 1)[:, :k])"
    return None


def pattern(r):
    """Where the wrong rows are, when that shows something: the last queries only, or indices all too small."""
    first = r.last_queries_wrong()
    if first is not None:
        seen = (f"only query {first}, the last one, comes back wrong; the {first} before it are right" if first == r.M - 1 else
                f"queries {first} to {r.M - 1} (the last {r.M - first}) come back wrong while the {first} before them are right")
        return f"{seen}: check that the last, partial batch of queries is searched and written back"
    bound = r.index_bound()
    if bound is not None:
        return (f"every index you return is below {bound}, though X has {r.N} rows (row {int(r.want_i.max())} is among the true"
                " neighbours): check that each chunk's column indices are offset by the chunk's first row")
    return ""


def generic(r):
    seen = pattern(r)
    parts = (seen,) if not r.valid else ("some returned rows are not among the k nearest", seen,
                                         "check the distance formula, the selection and the index bookkeeping")
    return "generic", "; ".join(part for part in parts if part)


def passes(sub, X, Q, k, max_bytes=None):
    """A control run: whether the learner's knn gets this input right (raising counts as not)."""
    got = sub.control("knn", X, Q, k, **({} if max_bytes is None else {"max_bytes": max_bytes}))
    if got is None:
        return False
    try:
        idx = as_indices(got, X, Q, k, "")
    except CheckFailed:
        return False
    return wrong_neighbours(idx, X, Q, "") is None


def assert_nearest(got, X, Q, k, scenario, *, failing_input, explain=None, sub=None):
    """got holds, for each query, the k nearest rows of X, nearest first (compared by distance). On a
    failure the hint is diagnose's, else `explain(sub, r)`'s (the check's control experiment), else
    the generic one; its key goes into the details as "diagnosis"."""
    idx = as_indices(got, X, Q, k, scenario)
    problem = wrong_neighbours(idx, X, Q, scenario)
    if problem is None:
        return
    message, details = problem
    r = Returned(idx, X, Q)
    key, hint = diagnose(r) or (explain and explain(sub, r)) or generic(r)
    raise CheckFailed(f"{message} {hint}." if hint else message, {**details, "diagnosis": key}, failing_input)


def nearest_case(sub, X, Q, k, scenario, max_bytes=None, explain=None):
    """The learner's knn on one input, judged by assert_nearest."""
    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
    got = sub.call("knn", X, Q, k, **kwargs)
    assert_nearest(got, X, Q, k, scenario, failing_input=Call("knn", X, Q, k, **kwargs), explain=explain, sub=sub)


# Control experiments, run only after a failure: each returns (key, hint), or None when it does not support one.
def shifted_control(sub, r):
    """Far from the origin: the same data shifted to it (each column by its offset, -1e3 or 1e3: exact here) must then pass.
    Where the columns sit at different offsets, a second control moves them all to +1e3: passing that too shows that one
    shift for every coordinate is what fails."""
    offsets = np.round(r.X.mean(axis=0, dtype=np.float64), -3)
    shift = offsets.astype(r.X.dtype)
    if r.X.dtype.kind != "f" or not passes(sub, r.X - shift, r.Q - shift, r.k):
        return None
    if np.unique(offsets).size > 1:
        moved = (shift - OFFSET).astype(r.X.dtype)  # every column to +1e3: the same distances, exactly
        if passes(sub, r.X - moved, r.Q - moved, r.k):
            return "one centre for all columns", (
                f"the same data shifted to the origin give the right neighbours, and so do they with every column moved to +{OFFSET:g};"
                f" only columns at different offsets ({', '.join(f'{o:g}' for o in np.unique(offsets))}) break them: the centre you"
                " subtract is one number for every coordinate, which leaves such columns far from the origin. Subtract each"
                " column's own mean, X.mean(axis=0)")
    return "far from the origin", (f"the same data shifted to the origin (each column by its offset: the same distances,"
                                   f" exactly) give the right neighbours, so the offset is what breaks them: {FAR_HINT}")


def budget_control(sub, r):
    """A small max_bytes: the same call with the default max_bytes must then pass."""
    if not passes(sub, r.X, r.Q, r.k):
        return None
    lead = "with the default max_bytes the same call gives the right neighbours, so the pieces are not put together right"
    if r.last_queries_wrong() is not None:
        return "chunks: last batch", f"{lead}: {pattern(r)}"
    if r.index_bound() is not None:
        return "chunks: offset", f"{lead}: {pattern(r)}"
    return "chunks", f"{lead}: merge every chunk's k best candidates into the running top-k list, with each chunk's indices offset by its first row"


def float64_control(sub, r):
    """Integer, float32 or mixed inputs: the same values as float64 arrays (exactly the same numbers) must then pass."""
    if r.X.dtype == np.float64 and r.Q.dtype == np.float64:
        return None
    if not passes(sub, r.X.astype(np.float64), r.Q.astype(np.float64), r.k):
        return None
    lead = "the same values as float64 arrays give the right neighbours"
    unsigned = [a.dtype.name for a in (r.X, r.Q) if a.dtype.kind == "u"]
    if unsigned:
        return "integer input", (f"{lead}: convert {unsigned[0]} data to floating point before any arithmetic; in {unsigned[0]} a"
                                 " difference below 0 wraps around (10 - 200 is 66 in uint8), and so do large sums and squares")
    if r.X.dtype.kind == "i" or r.Q.dtype.kind == "i":
        return "integer input", (f"{lead}: convert integer data to floating point before any arithmetic; integer arithmetic truncates"
                                 " the mean and can overflow in the squares and in q.x")
    if r.X.dtype == r.Q.dtype:
        return f"{r.X.dtype.name} input", (f"{lead}, so what goes wrong is specific to {r.X.dtype.name} input: look at the dtype you"
                                           " compute in and the conversions on the way")
    return "mixed input", (f"{lead}, so what goes wrong is specific to mixing {r.X.dtype.name} X with {r.Q.dtype.name} Q: look at the"
                           " dtype you compute in (np.result_type(X.dtype, Q.dtype, np.float32) covers every pair) and the conversions on the way")


def self_match(sub, r):
    """Queries that are rows of X: the row itself (distance 0) missing, or ranked last."""
    itself = r.want_d[:, 0] <= r.atol
    found = r.got_d <= r.atol
    missing = np.flatnonzero(itself & ~found.any(axis=1))
    last = np.flatnonzero(itself & ~found[:, 0] & found[:, -1]) if r.k > 1 else np.array([], dtype=int)
    if not len(missing) and not len(last):
        return None
    row, how = (int(missing[0]), "does not list it") if len(missing) else (int(last[0]), "lists it last")
    return "self match", (f"query {row} is a row of X, at distance 0 from itself, but your result {how}: an exact match's squared"
                          " distance can come out slightly below 0 through rounding, and its square root is NaN, which ranks last;"
                          " clamp the squared distances at 0 before any square root (or rank the squared distances)")


# ---------------------------------------------------------------------------------------------
# Shrinking: small cases whose distances are exact
# ---------------------------------------------------------------------------------------------
def small_cases(dtypes=(("float64", "float64"),), values="halves", budgets=(None,), rows_of_x=False, n=(1, 6), m=(1, 3), d=(1, 3)):
    """Hypothesis cases (X, Q, k, max_bytes): N in n, M in m, D in d, k from 1 to N + 1 (ties allowed: the judge
    compares distances). Values: "halves" (-4 to 4 in steps of 0.5), "far" (1e3 + eighths), "tenths"
    (-3 to 3, not exact in binary, so rounding shows); integer dtypes get integers. Everything shrinks
    toward the first dtype pair and budget, 1 row, 1 column, 0 and k = 1."""
    from hypothesis import strategies as st

    steps = {"halves": grid(-8, 8, 2), "far": grid(-16, 16, 8, offset=OFFSET), "tenths": grid(-30, 30, 10)}

    def value(dtype):
        if dtype == "uint8":
            return st.integers(0, 255)
        if np.dtype(dtype).kind == "i":
            return st.integers(-1000, 1000)
        return steps[values]

    def matrix(draw, dtype, rows, cols):
        return np.array(draw(lists_of(lists_of(value(dtype), cols), rows)), dtype=dtype)

    @st.composite
    def case(draw):
        x_dtype, q_dtype = draw(st.sampled_from(dtypes))
        max_bytes = draw(st.sampled_from(budgets))
        N, M, D = draw(st.integers(*n)), draw(st.integers(*m)), draw(st.integers(*d))
        X = matrix(draw, x_dtype, N, D)
        Q = X[draw(lists_of(st.integers(0, N - 1), M))] if rows_of_x else matrix(draw, q_dtype, M, D)
        return X, Q, draw(st.integers(1, N + 1)), max_bytes

    return case()


@contextlib.contextmanager
def smallest_failure(sub, explain=None, **strategy):
    """shrink_on_failure with small_cases(**strategy), each verified with `explain`, counting only the cases
    that fail the same way (the same "diagnosis": a smaller case with another failure would teach
    something else). Where it finds none, the failing input shown is the code that rebuilds the failed
    case: `shown["code"]`, which the check sets before each code-built case (None for the others)."""
    shown = {"code": None}
    first = []

    def verify(case):
        X, Q, k, max_bytes = case
        try:
            nearest_case(sub, X, Q, k, describe(X, Q, k, max_bytes), max_bytes=max_bytes, explain=explain)
        except CheckFailed as failure:
            if failure.details.get("diagnosis") == first[0].details.get("diagnosis"):
                raise

    try:
        with shrink_on_failure(sub, lambda: small_cases(**strategy), verify):
            try:
                yield shown
            except CheckFailed as failure:
                first.append(failure)
                raise
    except CheckFailed as failure:
        if first and failure is first[0] and shown["code"] is not None:
            failure.failing_input = Call.code(shown["code"])
        raise


def built_case(sub, shown, code, k, what="", max_bytes=None, explain=None):
    """A case whose X and Q are built by `code`: judged, with that code as its fallback failing input."""
    X, Q = build(code)
    shown["code"] = f"{code}\n{knn_code(k, max_bytes)}"
    nearest_case(sub, X, Q, k, describe(X, Q, k, max_bytes, what), max_bytes=max_bytes, explain=explain)
    shown["code"] = None


def listed_case(sub, shown, X, Q, k, explain=None):
    """A small case, written out in full as its failing input."""
    shown["code"] = None
    nearest_case(sub, np.asarray(X), np.asarray(Q), k, describe(np.asarray(X), np.asarray(Q), k), explain=explain)


def halves(rng, shape, dtype="float64"):
    """Small random values that read well and square exactly: -4 to 4 in steps of 0.5."""
    return (rng.integers(-8, 9, shape) / 2).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Checks (their cases at module level: the inputs-unchanged check runs them all)
# ---------------------------------------------------------------------------------------------
NEAREST_CODES = [(normal_code(seed, N, M, D), k) for seed, (N, M, D, k) in enumerate([(200, 10, 3, 20), (300, 37, 5, 7), (1000, 64, 32, 10)], start=101)]
LARGE_K = (normal_code(11, 2000, 20, 6), 300)
K_EDGE_X, K_EDGE_Q = [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 1.0]], [[0.5, 0.0], [2.0, 2.0], [-1.0, 1.0]]
K_EDGE_CODE = normal_code(2, 40, 9, 4)
TINY_SHAPES = [(1, 1, 1, 1), (1, 4, 3, 1), (1, 4, 3, 4), (12, 4, 1, 5), (6, 1, 3, 4)]
TINY_CODES = [(normal_code(seed, N, M, D), k) for seed, (N, M, D, k) in enumerate([(50, 8, 1, 6), (60, 1, 7, 5)], start=31)]
DTYPE_PAIRS = (("float32", "float32"), ("uint8", "uint8"), ("int64", "int32"), ("float32", "float64"))
DTYPE_CODES = [
    (normal_code(41, 500, 40, 16, "float32"), 8, ""),
    ("rng = np.random.default_rng(42)\nX = rng.integers(0, 256, (400, 12), dtype=np.uint8)\nQ = rng.integers(0, 256, (30, 12), dtype=np.uint8)", 6,
     ", values 0..255"),
    ("rng = np.random.default_rng(43)\nX = rng.integers(-1000, 1000, (300, 6), dtype=np.int64)\nQ = rng.integers(-1000, 1000, (25, 6), dtype=np.int32)",
     5, ", values -1000..999"),
    ("rng = np.random.default_rng(44)\nX = rng.standard_normal((300, 8)).astype(np.float32)\nQ = rng.standard_normal((20, 8))", 5, ""),
]
EXACT_CODES = [(f"rng = np.random.default_rng({seed})\nX = rng.standard_normal((400, 8)){'.astype(np.float32)' if dtype == 'float32' else ''}\n"
                "Q = X[rng.choice(400, size=64, replace=False)]") for seed, dtype in ((51, "float32"), (52, "float64"))]
FAR_CASES = [(normal_code(seed, 2000, 50, D, dtype, offset=OFFSET), f" = {OFFSET:g} + N(0, 1) in every coordinate")
             for seed, dtype, D in ((61, "float32", 8), (62, "float32", 32), (63, "float64", 16))]
FAR_COLUMNS_CASES = [(far_columns_code(64, 2000, 50, 8, "float32"), f" = -{OFFSET:g} or +{OFFSET:g} (column by column) + N(0, 1)")]
CHUNK_CASE = (normal_code(8, 2000, 300, 16, "float32"), 7, 256 * 2**10)
# (seed, N, M, D, dtype, k, max_bytes): X over the budget, so only chunks fit; the float32 one's float64 norms alone are over it too.
MEMORY_FLOAT64 = (9, 20_000, 100, 64, "float64", 10, 4 * 2**20)  # the catalogue's sizes
MEMORY_FLOAT32 = (10, 200_000, 100, 8, "float32", 10, 2**20)
SPEED_CASE = (100_000, 128, 1000, 10)  # n, d, m, k
# Off the origin (5 + halves from -4 to 4), so that centring in place would change them; small first.
OFF_ORIGIN_CODES = ["\n".join([f"rng = np.random.default_rng({seed})",
                                *(f"{name} = (5 + rng.integers(-8, 9, ({rows}, 3)) / 2){'.astype(np.float32)' if seed % 2 else ''}"
                                  for name, rows in (("X", N), ("Q", M)))])
                    for seed, (N, M) in enumerate(((4, 2), (4, 2), (300, 20), (300, 20)), start=71)]  # odd seeds float32


def small_listed(ctx):
    """(X, Q, k, explain) of the checks' small cases written out in full, small ones first."""
    rng = ctx.rng(3)
    cases = [(np.asarray(K_EDGE_X), np.asarray(K_EDGE_Q), k, None) for k in (1, 4, 6)]
    cases += [(halves(rng, (N, D)), halves(rng, (M, D)), k, None) for N, M, D, k in TINY_SHAPES]
    rng = ctx.rng(4)
    # uint8 first: arithmetic in uint8 wraps around (190 - 200 is 246), which reorders these.
    cases += [(np.array([[0, 0], [200, 200], [10, 10], [255, 255]], dtype=np.uint8), np.array([[190, 190], [5, 250]], dtype=np.uint8), 2, float64_control),
              (np.array([[-900, 0], [0, 0], [900, 5], [3, -4]], dtype=np.int64), np.array([[800, 0], [1, 1]], dtype=np.int32), 2, float64_control),
              (halves(rng, (5, 3), "float32"), halves(rng, (2, 3), "float32"), 3, float64_control),
              (halves(rng, (5, 3), "float32"), halves(rng, (2, 3)), 3, float64_control)]
    return cases


def built_cases():
    """(code, k, max_bytes) of every check's code-built input, small ones first; not the memory and speed checks' (N(0, 1) and
    uniform data as above, only larger: sending them through the pipe twice would cost more than they add)."""
    return [*((code, k, None) for code, k in (*NEAREST_CODES, *TINY_CODES)), *((K_EDGE_CODE, k, None) for k in (1, 40, 60)),
            *((code, k, None) for code, k, _ in DTYPE_CODES), *((code, 4, None) for code in EXACT_CODES),
            *((code, 5, None) for code, _ in (*FAR_CASES, *FAR_COLUMNS_CASES)),
            (LARGE_K[0], LARGE_K[1], None), CHUNK_CASE]


@check("k nearest rows, nearest first (random float64 data)")
def nearest_float64(sub, ctx):
    with smallest_failure(sub) as shown:
        for code, k in NEAREST_CODES:
            built_case(sub, shown, code, k)


@check("nearest first, also for large k (300 of 2000)")
def sorted_large_k(sub, ctx):
    # NumPy's argpartition on AVX-512 machines often happens to return a short prefix already sorted;
    # for a few hundred it does not, so the order must come from an explicit sort.
    with smallest_failure(sub) as shown:
        built_case(sub, shown, *LARGE_K)


@check("k = 1 and k = N")
def k_one_and_n(sub, ctx):
    with smallest_failure(sub) as shown:
        for k in (1, 4):
            listed_case(sub, shown, K_EDGE_X, K_EDGE_Q, k)
        for k in (1, 40):
            built_case(sub, shown, K_EDGE_CODE, k)


@check("k > N is clipped to N", edge="k larger than N is clipped to N; k < 1, an empty X or Q, or mismatched D raises ValueError.")
def k_clipped(sub, ctx):
    with smallest_failure(sub) as shown:
        listed_case(sub, shown, K_EDGE_X, K_EDGE_Q, 6)
        built_case(sub, shown, K_EDGE_CODE, 60)


@check("N = 1, D = 1, M = 1")
def tiny_shapes(sub, ctx):
    with smallest_failure(sub) as shown:
        for X, Q, k, _ in small_listed(ctx)[3:3 + len(TINY_SHAPES)]:
            listed_case(sub, shown, X, Q, k)
        for code, k in TINY_CODES:
            built_case(sub, shown, code, k)


@check("float32, float64, integer and mixed inputs")
def input_dtypes(sub, ctx):
    with smallest_failure(sub, float64_control, dtypes=DTYPE_PAIRS) as shown:
        for X, Q, k, explain in small_listed(ctx)[3 + len(TINY_SHAPES):]:  # small ones first
            listed_case(sub, shown, X, Q, k, explain=explain)
        for code, k, what in DTYPE_CODES:
            built_case(sub, shown, code, k, what=what, explain=float64_control)


@check("queries that are rows of X come back first (distance 0)")
def exact_matches(sub, ctx):
    with smallest_failure(sub, self_match, dtypes=(("float32", "float32"), ("float64", "float64")), values="tenths", rows_of_x=True,
                          n=(2, 4), d=(2, 4)) as shown:
        for code in EXACT_CODES:
            built_case(sub, shown, code, 4, what=" = 64 rows of X", explain=self_match)


@check("far from the origin (offset 1e3, unit spread)")
def far_from_origin(sub, ctx):
    with smallest_failure(sub, shifted_control, dtypes=(("float32", "float32"), ("float64", "float64")), values="far") as shown:
        for code, what in FAR_CASES:
            built_case(sub, shown, code, 5, what=what, explain=shifted_control)


@check("far from the origin, columns at -1e3 and +1e3: each column centred by its own mean")
def far_columns(sub, ctx):
    with smallest_failure(sub, shifted_control, dtypes=(("float32", "float32"),), values="far") as shown:
        for code, what in FAR_COLUMNS_CASES:
            built_case(sub, shown, code, 5, what=what, explain=shifted_control)


BAD_INPUTS = [  # (what, X, Q, k): X and Q as code, so the failing input reads as written
    ("k = 0", "np.arange(15.0).reshape(5, 3)", "np.ones((2, 3))", 0),
    ("k = -1", "np.arange(15.0).reshape(5, 3)", "np.ones((2, 3))", -1),
    ("empty X, shape (0, 3)", "np.zeros((0, 3))", "np.ones((2, 3))", 1),
    ("empty Q, shape (0, 3)", "np.arange(15.0).reshape(5, 3)", "np.zeros((0, 3))", 1),
    ("X (5, 3) with Q (2, 4)", "np.arange(15.0).reshape(5, 3)", "np.ones((2, 4))", 1),
    ("X (5, 3) with Q (2, 1), which would broadcast", "np.arange(15.0).reshape(5, 3)", "np.ones((2, 1))", 1),
]


@check("ValueError for k < 1, empty X or Q, mismatched D", edge="k larger than N is clipped to N; k < 1, an empty X or Q, or mismatched D raises ValueError.")
def bad_input(sub, ctx):
    for what, X_code, Q_code, k in BAD_INPUTS:
        record = sub.run(knn_on_bad_input, X_code, Q_code, k)
        raised = record.get("raised") if isinstance(record, dict) else None
        if raised and "ValueError" in record["classes"]:  # subclasses of ValueError count as ValueError
            continue
        if raised:
            fail(f"bad input ({what}): expected knn to raise ValueError, but it raised {raised}: {record.get('message')};"
                 " check the inputs first and raise ValueError with a clear message", case=what, raised=raised)
        got = record.get("result") if isinstance(record, dict) else record
        shape = f" of shape {np.shape(got)}" if isinstance(got, np.ndarray) else ""
        fail(f"bad input ({what}): expected knn to raise ValueError, but it returned {type(got).__name__}{shape}", case=what)


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    for code in OFF_ORIGIN_CODES:
        built_unchanged(sub, code, 3)
    for X, Q, k, _ in small_listed(ctx):  # every check's inputs, extreme ones included, small ones first
        inputs_unchanged(sub, "knn", X, Q, k, scenario=describe(X, Q, k))
    for code, k, max_bytes in built_cases():
        built_unchanged(sub, code, k, max_bytes)


def built_unchanged(sub, code, k, max_bytes=None):
    """knn leaves X and Q built by `code` unchanged; the failing input shown is that code, with the comparison."""
    X, Q = build(code)
    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
    with on_input(Call.code(f"{code}\nX_before, Q_before = X.copy(), Q.copy()\n{knn_code(k, max_bytes)}\n"
                            "np.array_equal(X, X_before) and np.array_equal(Q, Q_before)  # False: knn changed its input")):
        inputs_unchanged(sub, "knn", X, Q, k, scenario=describe(X, Q, k, max_bytes), **kwargs)


CHUNK_STRATEGY = {"budgets": (64, 256, 1024, 2048), "m": (1, 5)}


@check("correct when working in chunks (max_bytes = 256 KiB)")
def chunked(sub, ctx):
    with smallest_failure(sub, budget_control, **CHUNK_STRATEGY) as shown:
        code, k, max_bytes = CHUNK_CASE
        built_case(sub, shown, code, k, max_bytes=max_bytes, explain=budget_control)


def memory_error_explained(scenario, max_bytes=None):
    """A MemoryError in a big case says which case and what max_bytes allowed there (the runner's message
    already states the process's limit, memory_mb)."""
    budget = f"max_bytes = {size_text(max_bytes)}" if max_bytes is not None else f"the default max_bytes = {size_text(64 * 2**20)}"
    return out_of_memory_said(lambda said: f"{scenario}: {said}, and this call's budget is {budget}; {MEMORY_HINT}.")


def check_memory(sub, seed, N, M, D, dtype, k, max_bytes, note=""):
    code = normal_code(seed, N, M, D, dtype)
    X, Q = build(code)
    scenario = f"memory, {describe(X, Q, k, max_bytes)}, X is {mib(X.nbytes)}{note}"
    with smallest_failure(sub, budget_control, **CHUNK_STRATEGY) as shown:
        shown["code"] = f"{code}\n{knn_code(k, max_bytes)}"
        with memory_error_explained(scenario, max_bytes):
            result, peak = sub.run(knn_peak_memory, code, k, max_bytes)
        assert_nearest(result, X, Q, k, scenario, failing_input=Call("knn", X, Q, k, max_bytes=max_bytes), explain=budget_control, sub=sub)
    used = peak - M * min(k, N) * 8  # the returned array does not count
    if used > max_bytes:  # the failing input shown is knn_peak_memory's: the code that measures it
        copy = f", a float64 copy of it {mib(N * D * 8)}" if X.dtype != np.float64 else ""
        fail(f"{scenario}: the call allocated {mib(used)} at its peak (not counting the returned {M} x {k} int64 array), over"
             f" max_bytes = {size_text(max_bytes)}. For scale: X is {mib(X.nbytes)}{copy}, all {M} x {N} distances in float64"
             f" {mib(M * N * 8)}; {MEMORY_HINT}", peak_bytes=int(used), max_bytes=max_bytes)


@check("memory: 20k x 64 float64 within max_bytes = 4 MiB")
def memory_float64(sub, ctx):
    check_memory(sub, *MEMORY_FLOAT64)


@check("memory: 200k x 8 float32 within max_bytes = 1 MiB")
def memory_float32(sub, ctx):
    check_memory(sub, *MEMORY_FLOAT32, note="; X converted to float64, or all of its norms in float64, would not fit")


@check("speed: 100k x 128 float32, 1,000 queries, k = 10")
def speed(sub, ctx):
    n, d, m, k = SPEED_CASE
    scenario = (f"speed, float32 X ({n}, {d}) and Q ({m}, {d}) uniform in [0, 1) from np.random.default_rng({SPEED_SEED}).random,"
                f" k = {k}, default max_bytes")
    hint = ("the reference computes a whole batch of queries against a chunk of X with one matrix product, with no Python loop"
            " over the queries, and selects with argpartition rather than a full sort of every row")
    with memory_error_explained(scenario):
        learner_s, reference_s, ratio = time_ratio(sub, ctx, knn_on_random_data, SPEED_SEED, n, d, m, k, repeats=1,
                                                   max_ratio=MAX_TIME_RATIO, what=scenario, hint=hint)
    if ratio > MAX_TIME_RATIO:
        fail(f"{scenario}: your knn took {learner_s:.2f} s, {ratio:.1f}x the reference's {reference_s:.2f} s measured in"
             f" the same run (allowed: {MAX_TIME_RATIO:g}x); {hint}", learner_s=learner_s, reference_s=reference_s, ratio=ratio)
