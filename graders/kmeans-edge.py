"""Checks for `kmeans-edge`: Lloyd's k-means from given centroids, graded on its edge cases.

Hand-built cases use small integers and halves, so every distance, tie and stopping threshold is
exact in floating point; their expected states were worked out by hand (and with fractions), and
are written here as the point indices of each group plus the centroids. Random cases compare with
the reference (centroids within 1e-9 relative, so `sum / n` and `math.fsum` both pass) and, with
no reference at all, with the contract itself: `kmeans_trajectory` runs max_iter = 1, 2, 3, ...
with tol = 0 in the sandbox, and each state must follow from the one before it.

The learner may return tuples or lists (or arrays) anywhere; everything is compared by value.
No torch here: the exercise is pure Python.
"""

import copy
import math

import numpy as np

from mlprep.grading import assert_close, check, expect_sequence, fail, inputs_unchanged

# Centroids are means: another summation order (math.fsum, numpy's pairwise sum) moves them by
# a few ulps, far below this.
CENTROID_RTOL = 1e-9
CENTROID_ATOL = 1e-12

TIE_HINT = ("A point equidistant from several centroids goes to the lowest index among them: keep the first "
            "minimum (compare with `<`, or list.index(min(d)), or min(range(k), key=...))")
EMPTY_HINT = ("A centroid that gets no points keeps its previous position: no reseeding, no zeros, no 0/0 "
              "(NaN), and it keeps its place in the list")
ITER_HINT = ("One iteration is one assignment followed by one update; max_iter = m means exactly m of them "
             "(unless tol stops earlier), and groups are those of the LAST assignment, the ones the last "
             "update averaged: do not reassign after the loop")
TOL_HINT = ("Stop right after the update whose largest SQUARED centroid shift is <= tol (compare the squared "
            "shift itself, with <=), and return that update's centroids")
INT_HINT = "With integer coordinates the means are still true division: (1 + 2) / 2 is 1.5"
MEAN_HINT = ("The groups are right, so look at the update: a centroid that got points moves to their mean, "
             "coordinate by coordinate, with true division")
FOREIGN_HINT = ("Groups hold the input points themselves, unchanged: if a point changed, something wrote into it "
                "(build new lists for sums and centroids instead of accumulating into a point)")


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox: they only observe, the checks below decide)
# ---------------------------------------------------------------------------------------------
def kmeans_trajectory(module, points, init, steps):
    """The state after exactly t iterations for t = 1..steps: tol = 0 only stops at a fixed point,
    where more iterations change nothing. Each call gets fresh copies of the inputs."""
    return [module.kmeans(copy.deepcopy(points), copy.deepcopy(init), max_iter=t, tol=0.0)
            for t in range(1, steps + 1)]


def kmeans_outcome(module, points, init, max_iter):
    """What happens on a bad input: ("raised", [exception class names, most derived first], message)
    or ("returned", None, None)."""
    try:
        module.kmeans(points, init, max_iter=max_iter)
    except Exception as exc:  # noqa: BLE001 - any exception is an observation; the judge decides if it was right
        return "raised", [cls.__name__ for cls in type(exc).__mro__], str(exc)[:200]
    return "returned", None, None


# ---------------------------------------------------------------------------------------------
# Reading and comparing states
# ---------------------------------------------------------------------------------------------
def _number(x, what, scenario):
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        fail(f"{what} ({scenario}): expected a number, got {type(x).__name__} {x!r:.60}")
    return float(x)


def _vector(x, dim, what, scenario):
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if not isinstance(x, (list, tuple)) or len(x) != dim:
        fail(f"{what} ({scenario}): expected a sequence of {dim} numbers, got {_describe(x)}")
    return tuple(_number(v, what, scenario) for v in x)


def _describe(x):
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"{type(x).__name__} {x!r:.60}"


def read_state(got, k, dim, scenario):
    """The learner's (centroids, groups) as (k tuples of floats, k lists of point tuples), or a clean fail."""
    cents, groups = expect_sequence(got, 2, what="kmeans() result (centroids, groups)", scenario=scenario)
    if isinstance(cents, np.ndarray):
        cents = list(cents)
    if isinstance(groups, np.ndarray):
        groups = list(groups)
    if not isinstance(cents, (list, tuple)) or len(cents) != k:
        fail(f"centroids ({scenario}): expected {k} centroids (one per initial centroid, in the same order), got {_describe(cents)}")
    if not isinstance(groups, (list, tuple)) or len(groups) != k:
        fail(f"groups ({scenario}): expected {k} groups (one per centroid, empty ones included), got {_describe(groups)}")
    cents = [_vector(c, dim, f"centroid {j}", scenario) for j, c in enumerate(cents)]
    read_groups = []
    for j, g in enumerate(groups):
        if isinstance(g, np.ndarray):
            g = [] if g.size == 0 else list(g)
        if not isinstance(g, (list, tuple)):
            fail(f"group {j} ({scenario}): expected a list of points, got {_describe(g)}")
        read_groups.append([_vector(p, dim, f"a point of group {j}", scenario) for p in g])
    return cents, read_groups


def _num(x):
    return f"{int(x)}" if math.isfinite(x) and x == int(x) and abs(x) < 1e15 else f"{x:.6g}"


def _pt(p):
    return "(" + ", ".join(_num(x) for x in p) + ")"


def _pts(ps):
    return "[" + ", ".join(_pt(p) for p in ps) + "]"


def _centroids_differ(got, want):
    g, w = np.array(got, dtype=float), np.array(want, dtype=float)
    with np.errstate(invalid="ignore"):
        ok = np.abs(g - w) <= CENTROID_ATOL + CENTROID_RTOL * np.abs(w)
    bad = np.argwhere(~ok)
    return None if len(bad) == 0 else int(bad[0][0])


def expect_state(got, points, want_cents, want_groups, *, scenario, hint, mean_hint=MEAN_HINT):
    """The learner's state equals the hand-worked one: groups exactly (by value, in input order),
    centroids within CENTROID_RTOL. `want_groups` are lists of point indices. The whole state goes
    into the message: the cases are small and seeing both states is the quickest way to the bug."""
    dim, k = len(points[0]), len(want_cents)
    cents, groups = read_state(got, k, dim, scenario)
    want_g = [[tuple(float(x) for x in points[i]) for i in idx] for idx in want_groups]
    want_c = [tuple(float(x) for x in c) for c in want_cents]
    where = None
    inputs = {tuple(float(x) for x in p) for p in points}
    for j in range(k):
        foreign = [p for p in groups[j] if p not in inputs]
        if foreign:
            where = f"group {j} holds {_pt(foreign[0])}, which is not one of the input points"
            hint = FOREIGN_HINT
            break
        if groups[j] != want_g[j]:
            where = f"group {j} should be {_pts(want_g[j])}, got {_pts(groups[j])}"
            break
    if where is None:
        j = _centroids_differ(cents, want_c)
        if j is None:
            return
        if want_g[j]:
            where = f"centroid {j} should be {_pt(want_c[j])}, the mean of its group, got {_pt(cents[j])}"
            hint = mean_hint
        else:
            where = f"centroid {j} should be {_pt(want_c[j])}, got {_pt(cents[j])}"
            hint = EMPTY_HINT  # the groups are right: what went wrong is the empty cluster
    fail(f"{scenario}: {where}. Expected centroids {_pts(want_c)} with groups "
         f"{' '.join(_pts(g) for g in want_g)}; got centroids {_pts(cents)} with groups "
         f"{' '.join(_pts(g) for g in groups)}. {hint}",
         scenario=scenario, expected_centroids=_pts(want_c), got_centroids=_pts(cents), first_difference=where)


def _describe_case(points, init, **kwargs):
    text = f"points {_pts(points)}, init {_pts(init)}"
    return text + "".join(f", {k}={v}" for k, v in kwargs.items())


# ---------------------------------------------------------------------------------------------
# Hand-built cases
# ---------------------------------------------------------------------------------------------
# Needs exactly 5 iterations: each iteration one more point (x = 9, 8, 7 in turn) crosses over to
# centroid 0, and the 5th changes nothing. States after 1 and 2 iterations differ from each other,
# from the final state, and from a reassignment to their own centroids.
CHAIN_POINTS = [[0, 4], [7, 3], [8, 5], [9, 3], [10, 5], [11, 3]]
CHAIN_INIT = [[11, 3], [8, 5]]

# Squared shifts per iteration: 16, 4, 1/4, 1/4, 0 (all exact). Iteration 1 leaves centroid 1 empty.
TOL_POINTS = [[1, 0], [2, 0], [4, 1], [3, 2], [6, 1], [5, 1], [0, 2]]
TOL_INIT = [[7, 1], [8, 1]]
TOL_STOP_CENTS = [[2, 1], [5.5, 1]]  # the state after iteration 3, where the squared shift is 1/4
TOL_STOP_GROUPS = [[0, 1, 2, 3, 6], [4, 5]]


def _hand(sub, points, init, want_cents, want_groups, hint, what, mean_hint=MEAN_HINT, **kwargs):
    scenario = f"{what}: {_describe_case(points, init, **kwargs)}"
    got = sub.call("kmeans", points, init, **kwargs)
    expect_state(got, points, want_cents, want_groups, scenario=scenario, hint=hint, mean_hint=mean_hint)


@check("a point exactly between centroids goes to the lowest index")
def ties_lowest_index(sub, ctx):
    # (0, 2) is at squared distance 1 from both centroids, which never move: a fixed point at once.
    _hand(sub, [[-2, 2], [1, 2], [0, 2]], [[-1, 2], [1, 2]],
          [[-1, 2], [1, 2]], [[0, 2], [1]], TIE_HINT, "two-way tie")
    # (5, 5) is at squared distance 1 from centroids 1, 2 and 3; the state is a fixed point at once.
    _hand(sub, [[5, 5], [20, 20], [6, 5], [5, 4], [3, 5]], [[20, 20], [4, 5], [6, 5], [5, 4]],
          [[20, 20], [4, 5], [6, 5], [5, 4]], [[1], [0, 4], [2], [3]], TIE_HINT, "three-way tie among centroids 1, 2, 3")


@check("duplicate initial centroids: the second stays empty")
def duplicate_init(sub, ctx):
    # Centroids 0 and 1 coincide and stay at the mean of their points, so every point ties and
    # goes to 0; centroid 1 stays empty at (2, 3), in its place.
    _hand(sub, [[1, 3], [3, 3], [10, -2], [11, -2]], [[2, 3], [2, 3], [10, -2]],
          [[2, 3], [2, 3], [10.5, -2]], [[0, 1], [], [2, 3]], TIE_HINT,
          "duplicate initial centroids 0 and 1")


@check("more centroids than points")
def more_centroids_than_points(sub, ctx):
    # 5 centroids, 3 points (two of them equal); centroid 4 duplicates centroid 1.
    _hand(sub, [[1, 2], [4, 6], [4, 6]], [[2, -1], [1, 2], [9, 9], [4, 5], [1, 2]],
          [[2, -1], [1, 2], [9, 9], [4, 6], [1, 2]], [[], [0], [], [1, 2], []], TIE_HINT,
          "5 centroids for 3 points")


@check("an isolated centroid never gets a point and keeps its place")
def isolated_centroid(sub, ctx):
    _hand(sub, [[0, 1], [1, 0], [1, 1], [5, 6], [6, 5], [6, 6]], [[0, 0], [-40, 25], [5, 5]],
          [[2 / 3, 2 / 3], [-40, 25], [17 / 3, 17 / 3]], [[0, 1, 2], [], [3, 4, 5]], EMPTY_HINT,
          "centroid 1 far from every point")


@check("max_iter=1 returns the state after exactly one iteration")
def max_iter_one(sub, ctx):
    _hand(sub, CHAIN_POINTS, CHAIN_INIT, [[10, 3], [6.25, 4.25]], [[3, 5], [0, 1, 2, 4]], ITER_HINT,
          "a case that needs 5 iterations, stopped by max_iter", max_iter=1)


@check("max_iter=2 returns the state after exactly two iterations")
def max_iter_two(sub, ctx):
    _hand(sub, CHAIN_POINTS, CHAIN_INIT, [[10, 11 / 3], [5, 4]], [[3, 4, 5], [0, 1, 2]], ITER_HINT,
          "a case that needs 5 iterations, stopped by max_iter", max_iter=2)


@check("runs to convergence with the defaults")
def converges(sub, ctx):
    _hand(sub, CHAIN_POINTS, CHAIN_INIT, [[9, 3.8], [0, 4]], [[1, 2, 3, 4, 5], [0]], ITER_HINT,
          "a case that needs 5 iterations, default max_iter and tol")
    _hand(sub, CHAIN_POINTS, CHAIN_INIT, [[9, 3.8], [0, 4]], [[1, 2, 3, 4, 5], [0]], ITER_HINT,
          "a case that needs 5 iterations, max_iter exactly 5", max_iter=5)


@check("tol decides: squared shift <= tol < shift stops")
def tol_between(sub, ctx):
    # Iteration 3 moves both centroids by 0.5: squared shift 0.25 <= 0.3, unsquared 0.5 > 0.3.
    _hand(sub, TOL_POINTS, TOL_INIT, TOL_STOP_CENTS, TOL_STOP_GROUPS, TOL_HINT,
          "largest squared shift 16, 4, then 0.25 at iteration 3", mean_hint=TOL_HINT, tol=0.3)


@check("a squared shift exactly equal to tol stops")
def tol_equal(sub, ctx):
    _hand(sub, TOL_POINTS, TOL_INIT, TOL_STOP_CENTS, TOL_STOP_GROUPS, TOL_HINT,
          "largest squared shift 16, 4, then exactly 0.25 at iteration 3", mean_hint=TOL_HINT, tol=0.25)


@check("1-D points")
def one_dimensional(sub, ctx):
    points, init = [[0], [10], [11], [8], [7], [9]], [[11], [8]]
    _hand(sub, points, init, [[9.5], [3.5]], [[1, 2, 3, 5], [0, 4]], ITER_HINT,
          "1-D, stopped by max_iter", max_iter=3)
    _hand(sub, points, init, [[9], [0]], [[1, 2, 3, 4, 5], [0]], ITER_HINT, "1-D, to convergence")


@check("5-D points, a cluster emptied on the way")
def five_dimensional(sub, ctx):
    # Centroid 0 gets two points in iteration 1 and none from iteration 2 on: it keeps the
    # position it had after iteration 1, not its initial one.
    points = [[7, 4, 9, 1, 6], [7, 3, 7, 0, 7], [3, 2, 6, 2, 2], [3, 4, 6, 1, 2],
              [5, 3, 7, 0, 0], [4, 3, 7, 0, 0], [7, 3, 8, 0, 6], [5, 3, 7, -1, 8]]
    init = [[7, 4, 9, 1, 6], [7, 3, 7, 0, 7], [2, 5, 1, 0, 0]]
    _hand(sub, points, init, [[6, 3.5, 8, 0.5, 3], [6.5, 3.25, 7.75, 0, 6.75], [3.75, 3, 6.5, 0.75, 1]],
          [[], [0, 1, 6, 7], [2, 3, 4, 5]], EMPTY_HINT, "5-D")


@check("integer coordinates give true means")
def integer_coordinates(sub, ctx):
    points = [[0, 0], [1, 0], [0, 1], [10, 10], [11, 10], [10, 12]]
    init = [[0, 0], [9, 9], [100, -100]]
    _hand(sub, points, init, [[1 / 3, 1 / 3], [31 / 3, 32 / 3], [100, -100]], [[0, 1, 2], [3, 4, 5], []],
          INT_HINT, "int coordinates", mean_hint=INT_HINT)
    _hand(sub, CHAIN_POINTS, CHAIN_INIT, [[10, 3], [6.25, 4.25]], [[3, 5], [0, 1, 2, 4]], INT_HINT,
          "int coordinates", mean_hint=INT_HINT, max_iter=1)


# ---------------------------------------------------------------------------------------------
# Random cases
# ---------------------------------------------------------------------------------------------
def random_case(rng, n, k, dim, *, far=0, duplicate=False):
    """Gaussian blobs; init = k points of the data, plus `far` centroids nowhere near any point and
    optionally a duplicate of the first centroid (so some clusters start or end up empty)."""
    centers = rng.normal(0.0, 5.0, size=(max(k, 2), dim))
    labels = rng.integers(0, len(centers), size=n)
    points = (centers[labels] + rng.normal(0.0, 1.5, size=(n, dim))).round(6)
    init = points[rng.choice(n, size=k, replace=False)].tolist()
    init += (rng.normal(0.0, 1.0, size=(far, dim)) + 200.0).round(6).tolist()
    if duplicate:
        init.append(list(init[0]))
    return points.tolist(), init


RANDOM_CASES = [  # (seed, n, k, dim, far, duplicate)
    (1, 12, 3, 2, 0, False), (2, 40, 4, 3, 0, False), (3, 25, 5, 1, 0, False), (4, 30, 3, 5, 1, False),
    (5, 60, 6, 2, 0, True), (6, 10, 4, 2, 1, True), (7, 50, 2, 4, 0, False), (8, 20, 8, 2, 0, False),
]


def _random_scenario(n, k, dim, far, duplicate, seed):
    extra = (f", {far} far-away centroid" if far else "") + (", centroid 0 duplicated at the end" if duplicate else "")
    return f"random case seed {seed}: {n} points in {dim}-D, {k} initial centroids drawn from the points{extra}"


@check("matches the reference on random cases")
def random_vs_reference(sub, ctx):
    for seed, n, k, dim, far, duplicate in RANDOM_CASES:
        points, init = random_case(ctx.rng(seed), n, k, dim, far=far, duplicate=duplicate)
        scenario = _random_scenario(n, k, dim, far, duplicate, seed)
        want_cents, want_groups = ctx.reference.kmeans(points, init)
        cents, groups = read_state(sub.call("kmeans", points, init), len(init), dim, scenario)
        index = {tuple(p): i for i, p in enumerate(points)}
        for j, (g, w) in enumerate(zip(groups, want_groups)):
            w = [tuple(p) for p in w]
            if g != w:
                fail(f"{scenario}: group {j} should hold the input points {[index[p] for p in w]} (by index), got "
                     f"{[index.get(p, 'not an input point') for p in g]}. Every iteration assigns each point to its "
                     f"nearest centroid, then moves each centroid to its group's mean; groups are those of the "
                     f"last assignment, points in input order.", scenario=scenario, group=j)
        assert_close(cents, [tuple(c) for c in want_cents], what="centroids", scenario=scenario,
                     rtol=CENTROID_RTOL, atol=CENTROID_ATOL * 100,
                     hint="The groups match, so look at the update: each centroid is its group's mean. " + EMPTY_HINT)


PROPERTY_CASES = [  # (seed, n, k, dim, far, duplicate, iterations)
    (11, 30, 4, 2, 1, True, 6), (12, 40, 5, 3, 0, False, 6), (13, 15, 6, 1, 1, False, 5),
]


@check("every state follows from the one before it")
def properties(sub, ctx):
    """No reference involved: for t = 1, 2, ..., the groups after t iterations partition the points
    (in input order), each point is nearest to its centroid after t - 1 iterations, and each centroid
    is its group's mean, or the centroid after t - 1 iterations when its group is empty."""
    for seed, n, k, dim, far, duplicate, steps in PROPERTY_CASES:
        points, init = random_case(ctx.rng(seed), n, k, dim, far=far, duplicate=duplicate)
        base = _random_scenario(n, k, dim, far, duplicate, seed) + ", tol=0"
        k = len(init)
        trajectory = expect_sequence(sub.run(kmeans_trajectory, points, init, steps), steps,
                                     what="results for max_iter = 1.." + str(steps), scenario=base)
        before = [tuple(float(x) for x in c) for c in init]
        pts = [tuple(p) for p in points]
        for t, got in enumerate(trajectory, start=1):
            scenario = f"{base}, max_iter={t}"
            cents, groups = read_state(got, k, dim, scenario)
            _check_partition(groups, pts, scenario)
            _check_nearest(groups, before, scenario, t)
            _check_means(groups, cents, before, scenario, t)
            before = cents


def _check_partition(groups, pts, scenario):
    position = {p: i for i, p in enumerate(pts)}  # random points are distinct
    seen = []
    for j, g in enumerate(groups):
        idx = [position.get(p) for p in g]
        if None in idx:
            fail(f"{scenario}: group {j} holds {_pt(g[idx.index(None)])}, which is not one of the input points "
                 f"(groups hold the input points themselves, by value)")
        if idx != sorted(idx):
            fail(f"{scenario}: group {j} lists points {idx}: not in input order")
        seen += idx
    if sorted(seen) != list(range(len(pts))):
        missing = sorted(set(range(len(pts))) - set(seen))
        twice = sorted({i for i in seen if seen.count(i) > 1})
        fail(f"{scenario}: the groups must split the points, each in exactly one group; "
             + (f"points {missing} are in no group" if missing else f"points {twice} are in more than one group"))


def _sq(p, c):
    return math.fsum((a - b) ** 2 for a, b in zip(p, c))


def _check_nearest(groups, before, scenario, t):
    state = "the initial centroids" if t == 1 else f"the centroids after {t - 1} iteration(s)"
    for j, g in enumerate(groups):
        for p in g:
            d = [_sq(p, c) for c in before]
            best = min(d)
            if d[j] > best * (1 + 1e-9) + 1e-12:
                fail(f"{scenario}: point {_pt(p)} is in group {j} but is nearest to centroid {d.index(best)} of "
                     f"{state} (squared distance {best:.6g}, vs {d[j]:.6g} to centroid {j}). {ITER_HINT}",
                     point=_pt(p), group=j, nearest=d.index(best))


def _check_means(groups, cents, before, scenario, t):
    state = "its initial position" if t == 1 else f"its position after {t - 1} iteration(s)"
    for j, (g, c) in enumerate(zip(groups, cents)):
        if g:
            want = tuple(math.fsum(xs) / len(g) for xs in zip(*g))
            rule = f"the mean of its {len(g)} point(s)"
        else:
            want, rule = before[j], f"{state}, since its group is empty"
        if _centroids_differ([c], [want]) is not None:
            fail(f"{scenario}: centroid {j} should be {rule}, {_pt(want)}; got {_pt(c)}. "
                 + (EMPTY_HINT if not g else "The returned centroids are the means of the returned groups."),
                 centroid=j, expected=_pt(want), got=_pt(c))


# ---------------------------------------------------------------------------------------------
# Inputs and errors
# ---------------------------------------------------------------------------------------------
@check("points and init are left unchanged")
def inputs_left_alone(sub, ctx):
    points, init = random_case(ctx.rng(21), 20, 3, 2, far=1, duplicate=True)
    inputs_unchanged(sub, "kmeans", points, init, scenario=_random_scenario(20, 3, 2, 1, True, 21))
    inputs_unchanged(sub, "kmeans", CHAIN_POINTS, CHAIN_INIT, max_iter=2,
                     scenario=_describe_case(CHAIN_POINTS, CHAIN_INIT, max_iter=2))


BAD_INPUTS = [  # (what is wrong, points, init, max_iter)
    ("points is empty", [], [[0, 0]], 10),
    ("init is empty", [[0, 0], [1, 1]], [], 10),
    ("max_iter=0", [[0, 0], [1, 1]], [[0, 0]], 0),
    ("max_iter=-1", [[0, 0], [1, 1]], [[0, 0]], -1),
    ("points of mixed dimensions (2 and 3)", [[0, 0], [1, 1, 1], [2, 2]], [[0, 0]], 10),
    ("points of mixed dimensions (2 and 1)", [[0, 0], [1], [2, 2]], [[0, 0]], 10),
    ("init of dimension 3 for 2-D points", [[0, 0], [1, 1]], [[0, 0, 0], [1, 1, 1]], 10),
    ("init of dimension 1 for 2-D points", [[0, 0], [1, 1]], [[0], [1]], 10),
    ("init of mixed dimensions (2 and 3)", [[0, 0], [1, 1]], [[0, 0], [1, 1, 1]], 10),
]


@check("bad inputs raise ValueError")
def bad_inputs(sub, ctx):
    for what, points, init, max_iter in BAD_INPUTS:
        scenario = f"{what}: points {points}, init {init}, max_iter={max_iter}"
        outcome = expect_sequence(sub.run(kmeans_outcome, points, init, max_iter), 3, what="outcome", scenario=scenario)
        kind, names, message = outcome
        if kind == "raised" and isinstance(names, (list, tuple)) and "ValueError" in names:
            continue
        got = f"it raised {names[0]}: {message}" if kind == "raised" and names else "it returned normally"
        fail(f"{scenario}: expected ValueError, but {got}. Validate before the loop: zip() silently truncates "
             f"rows of different lengths, and range(0) runs no iteration at all.", scenario=scenario)
