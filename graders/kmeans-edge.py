"""Checks for `kmeans-edge`: Lloyd's k-means from given centroids, graded on its edge cases.

Hand-built cases use small integers and halves, so every distance, tie and stopping threshold is
exact in floating point; their expected states were worked out by hand (and with fractions), and
are written here as the point indices of each group plus the centroids. Random cases compare with
the reference (centroids within 1e-9 relative, so `sum / n` and `math.fsum` both pass) and, with
no reference at all, with the contract itself: `kmeans_trajectory` runs max_iter = 1, 2, 3, ...
with tol = 0 in the sandbox, and each state must follow from the one before it.

A hint follows the evidence. When a case fails, the learner's code is run once more, step by step
(`kmeans_trajectory`, max_iter = 1, 2, ... with tol = 0), next to the reference run the same way:
the first iteration whose state differs, read against the state both agree on before it, says what
broke (a tie sent to a higher index, a point sent to a centroid that is not nearest, an empty
cluster that moved and what it became, a centroid that is not its group's mean), and when every
iteration agrees, the difference is in the stopping rule, which is then matched against the usual
ways of getting it wrong (one iteration more or fewer, tol against the unsquared shift, a shift
measured per coordinate or summed or averaged over the centroids, `<` for `<=`). What does not
classify is stated without a cause.

The learner may return tuples or lists (or arrays) anywhere; everything is compared by value.
No torch here: the exercise is pure Python.
"""

import copy
import math
from collections import Counter
from fractions import Fraction

import numpy as np

from mlprep.grading import (Call, CheckFailed, check, describe_value, expect_sequence, fail, inputs_unchanged, on_input, outcome, scenario,
                            shrink_on_failure)

# Centroids are means: another summation order (math.fsum, numpy's pairwise sum) moves them by
# a few ulps, far below this.
CENTROID_RTOL = 1e-9
CENTROID_ATOL = 1e-12
MAX_STEPS = 30  # iterations run step by step to explain a failure (the hand-built cases need at most 6)
SHOWN_IN_FULL = 40  # a case with at most this many numbers per argument is written out whole as the failing input

TIE_HINT = ("A point equidistant from several centroids goes to the lowest index among them: keep the first "
            "minimum (compare with `<`, or list.index(min(d)), or min(range(k), key=...))")
NEAREST_HINT = ("Each point goes to the centroid at the smallest squared Euclidean distance (the sum of its squared "
                "coordinate differences), among the centroids as they were before this iteration's update")
REASSIGN_HINT = ("Return the groups of the last assignment, the ones the last update averaged: do not assign the points "
                 "again to the updated centroids")
EMPTY_HINTS = {
    "point": "An empty cluster keeps its previous centroid here: no reseeding (moving it to a data point is common practice elsewhere, not this contract)",
    "origin": "An empty cluster keeps its previous centroid: not zeros (a sum of no points divided by a count of 1, or a fresh [0.0] * d)",
    "nan": "An empty cluster keeps its previous centroid: skip the update for an empty group instead of dividing by its size (0/0 is NaN)",
    "initial": "An empty cluster keeps its previous position, the one it had after the last iteration, not its initial one",
    "": "A centroid that gets no points keeps its previous position and its place in the list",
}
FLOOR_HINT = "A mean is a true division, also for integer coordinates: (1 + 2) / 2 is 1.5, not 1 (use /, not // or int())"
UNMOVED_HINT = "Every centroid that got points moves to their mean in every update"
ITER_COUNT_HINT = ("One iteration is one assignment followed by one update; max_iter = m means exactly m of them, unless tol "
                   "stops the loop earlier (max_iter=1: one assignment, one update)")
TOL_HINT = ("The shift of an iteration is the largest, over the centroids, of the squared Euclidean distance each one moved "
            "(summed over its coordinates); stop right after the update where it is <= tol, comparing the squared value itself")
STOP_BEFORE_UPDATE_HINT = ("Apply the update first, then test the shift, and return the updated centroids with the groups they "
                           "were averaged from")
FOREIGN_HINT = ("Groups hold the input points themselves, unchanged: if a point changed, something wrote into it "
                "(build new lists for sums and centroids instead of accumulating into a point)")


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox: they only observe, the checks below decide)
# ---------------------------------------------------------------------------------------------
def _trajectory_repro(interface, points, init, steps):
    note = f"the last of the calls with max_iter = 1..{steps}" if steps > 1 else ""
    return Call("kmeans", points, init, max_iter=steps, tol=0.0, note=note)


@scenario(repro=_trajectory_repro)
def kmeans_trajectory(module, points, init, steps):
    """The state after exactly t iterations for t = 1..steps: tol = 0 only stops at a fixed point,
    where more iterations change nothing. Each call gets fresh copies of the inputs. Each step's
    outcome is the toolkit's `outcome` record ({"raised": None, "result": ...} or {"raised": the
    exception's type name, "classes", "message"}), so one step that raises does not hide the others
    (for explaining a failure step by step)."""
    return [outcome(lambda t=t: module.kmeans(copy.deepcopy(points), copy.deepcopy(init), max_iter=t, tol=0.0))
            for t in range(1, steps + 1)]


@scenario(repro=lambda interface, points, init, max_iter: Call("kmeans", points, init, max_iter=max_iter, note="must raise ValueError"))
def kmeans_outcome(module, points, init, max_iter):
    """What happens on a bad input: the toolkit's `outcome` record, without the result (only whether
    it raised, and what, is judged)."""
    record = outcome(lambda: module.kmeans(points, init, max_iter=max_iter))
    record.pop("result", None)
    return record


# ---------------------------------------------------------------------------------------------
# Reading, showing and comparing states
# ---------------------------------------------------------------------------------------------
def _number(x, what, scenario):
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        fail(f"{what} ({scenario}): expected a number, got {type(x).__name__} {x!r:.60}")
    return float(x)


def _vector(x, dim, what, scenario):
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if not isinstance(x, (list, tuple)) or len(x) != dim:
        fail(f"{what} ({scenario}): expected a sequence of {dim} numbers, got {describe_value(x)}")
    return tuple(_number(v, what, scenario) for v in x)


def read_state(got, k, dim, scenario):
    """The learner's (centroids, groups) as (k tuples of floats, k lists of point tuples), or a clean fail."""
    cents, groups = expect_sequence(got, 2, what="kmeans() result (centroids, groups)", scenario=scenario)
    if isinstance(cents, np.ndarray):
        cents = list(cents)
    if isinstance(groups, np.ndarray):
        groups = list(groups)
    if not isinstance(cents, (list, tuple)) or len(cents) != k:
        fail(f"centroids ({scenario}): expected {k} centroids (one per initial centroid, in the same order), got {describe_value(cents)}")
    if not isinstance(groups, (list, tuple)) or len(groups) != k:
        fail(f"groups ({scenario}): expected {k} groups (one per centroid, empty ones included), got {describe_value(groups)}")
    cents = [_vector(c, dim, f"centroid {j}", scenario) for j, c in enumerate(cents)]
    read_groups = []
    for j, g in enumerate(groups):
        if isinstance(g, np.ndarray):
            g = [] if g.size == 0 else list(g)
        if not isinstance(g, (list, tuple)):
            fail(f"group {j} ({scenario}): expected a list of points, got {describe_value(g)}")
        read_groups.append([_vector(p, dim, f"a point of group {j}", scenario) for p in g])
    return cents, read_groups


def _tuple(p):
    return tuple(float(x) for x in p)


def _num(x):
    return f"{int(x)}" if math.isfinite(x) and x == int(x) and abs(x) < 1e15 else f"{x:.6g}"


def _pt(p):
    return "(" + ", ".join(_num(x) for x in p) + ")"


def _pts(ps):
    return "[" + ", ".join(_pt(p) for p in ps) + "]"


def _plain(rows):
    return [[x.item() if isinstance(x, np.generic) else x for x in row] for row in rows]


def _small(points, init):
    return max(sum(map(len, points)), sum(map(len, init))) <= SHOWN_IN_FULL


def kmeans_call(points, init, *, whole=True, **kwargs):
    """The call as Python a learner can paste. `whole`: written out in full, for the hand-built and
    shrunk cases, which are small but may hold more numbers than the toolkit writes out by itself
    (the 5-D case); otherwise the toolkit's rendering, which describes a large case (so that a
    random case that fails gets shrunk)."""
    if not whole or not _small(points, init):
        return Call("kmeans", points, init, **kwargs)
    parts = [repr(_plain(points)), repr(_plain(init))] + [f"{key}={value!r}" for key, value in kwargs.items()]
    line = f"kmeans({', '.join(parts)})"
    return Call.code(line if len(line) <= 100 else "kmeans(\n" + "".join(f"    {part},\n" for part in parts) + ")")


def _centroids_differ(got, want):
    g, w = np.array(got, dtype=float), np.array(want, dtype=float)
    with np.errstate(invalid="ignore"):
        ok = np.abs(g - w) <= CENTROID_ATOL + CENTROID_RTOL * np.abs(w)
    bad = np.argwhere(~ok)
    return None if len(bad) == 0 else int(bad[0][0])


def _same_centroid(got, want):
    return _centroids_differ([got], [want]) is None


def _same_state(a, b):
    return a[1] == b[1] and _centroids_differ(a[0], b[0]) is None


def _sq(p, c):
    return math.fsum((a - b) ** 2 for a, b in zip(p, c))


def _assign(pts, cents):
    """The contract's assignment: each point to its nearest centroid, the lowest index on a tie."""
    groups = [[] for _ in cents]
    for p in pts:
        d = [_sq(p, c) for c in cents]
        groups[d.index(min(d))].append(p)
    return groups


def _labels(groups, pts):
    """For each input point, the group holding it (equal points share out their copies in group
    order), None where no group does; and the first point a group holds beyond the input's own
    ((group, point): a point that is not an input point, or one copy too many), or None."""
    holders = {}
    for j, g in enumerate(groups):
        for p in g:
            holders.setdefault(p, []).append(j)
    labels = [holders[p].pop(0) if holders.get(p) else None for p in pts]
    for j, g in enumerate(groups):
        for p in g:
            if j in holders[p]:  # what is left over after every input point took its group
                return labels, (j, p)
    return labels, None


# ---------------------------------------------------------------------------------------------
# Explaining a failure step by step (only after a failure: one extra sandbox call)
# ---------------------------------------------------------------------------------------------
def reference_states(ctx, points, init):
    """R[t]: the reference's (centroids, groups) after exactly t iterations (tol = 0), up to one past
    its fixed point (R[-1] == R[-2]); R[0] is (init, None)."""
    states = [([_tuple(c) for c in init], None)]
    for t in range(1, MAX_STEPS + 1):
        cents, groups = ctx.reference.kmeans(copy.deepcopy(points), copy.deepcopy(init), max_iter=t, tol=0.0)
        states.append(([_tuple(c) for c in cents], [[_tuple(p) for p in g] for g in groups]))
        if t >= 2 and states[t] == states[t - 1]:
            break
    return states


def learner_states(sub, points, init, steps):
    """L[t] for t = 1..steps (L[0] unused): the learner's state after max_iter = t with tol = 0, or a
    string saying what went wrong at that step; None when the step-by-step run itself crashed or hung.
    A control call: it only chooses the hint, and never becomes the check's failing input."""
    k, dim = len(init), len(points[0])
    records = sub.control(kmeans_trajectory, points, init, steps)
    if not isinstance(records, (list, tuple)) or len(records) != steps:
        return None
    states = [None]
    for t, record in enumerate(records, start=1):
        if record["raised"] is not None:
            states.append(f"raised {record['raised']}: {record['message']}")
            continue
        try:
            states.append(read_state(record["result"], k, dim, f"max_iter={t}"))
        except CheckFailed as failure:
            states.append(f"returned something unreadable ({failure.message})")
    return states


def explain(sub, ctx, points, init, kwargs, got):
    """Why the learner's state `got` for kmeans(points, init, **kwargs) is wrong, as far as the
    evidence shows: a sentence for the message, or "" when the step-by-step run gave nothing."""
    pts = [_tuple(p) for p in points]
    R = reference_states(ctx, points, init)
    steps = len(R) - 1
    L = learner_states(sub, points, init, steps)
    if L is None:
        return ""
    how = f"Step by step (kmeans(points, init, max_iter=t, tol=0.0) for t = 1..{steps})"
    shifted = _shifted_count(L, R)
    if shifted:
        return f"{how}, {shifted}. {ITER_COUNT_HINT}."
    for t in range(1, steps + 1):
        if isinstance(L[t], str):
            return f"{how}, your code at max_iter={t} {L[t]}."
        if not _same_state(L[t], R[t]):
            agreed = "the initial centroids" if t == 1 else f"the centroids after iteration {t - 1} (where your code still agrees)"
            return f"{how}, your code first differs at iteration {t}: " + _iteration_difference(t, L[t], R, pts, init, agreed)
    return f"{how}, your code agrees with the contract at every iteration, so the difference is in when it stops: it " + \
        _stopping_difference(got, R, kwargs, pts)


def _state_at(R, t):
    return R[min(t, len(R) - 1)]


def _shifted_count(L, R):
    """'max_iter=t gives the state after t + 1 (or t - 1) iterations', when every step says so and it shows."""
    steps = len(R) - 1
    for d, word in ((1, "one iteration too many"), (-1, "one iteration too few")):
        ts = [t for t in range(1, steps + 1) if t + d >= 1]
        if not ts or any(isinstance(L[t], str) or not _same_state(L[t], _state_at(R, t + d)) for t in ts):
            continue
        shows = [t for t in ts if not _same_state(_state_at(R, t), _state_at(R, t + d))]
        if not shows:
            continue
        t = shows[0]
        text = (f"max_iter=t returns the state after t {'+' if d > 0 else '-'} 1 iterations, at every t (max_iter={t} gives the state "
                f"after {t + d} iteration{'s' if t + d != 1 else ''}): it runs {word}")
        if d < 0 and isinstance(L[1], str):
            text += f" (max_iter=1, which leaves no iteration to run, {L[1]})"
        return text
    return ""


def _iteration_difference(t, got, R, pts, init, agreed):
    """What broke at iteration t, the first whose state differs, given the agreed state before it."""
    prev, want = R[t - 1][0], R[t]
    got_cents, got_groups = got
    if got_groups != want[1] and _centroids_differ(got_cents, want[0]) is None and got_groups == _assign(pts, got_cents):
        return (f"its centroids are right, but its groups are an assignment to those updated centroids, not the groups that update "
                f"averaged (expected groups {' '.join(_pts(g) for g in want[1])}). {REASSIGN_HINT}.")
    if got_groups != want[1]:
        return _assignment_difference(got_groups, want[1], prev, pts, agreed)
    return _update_difference(t, got_cents, want, prev, pts, init)


def _assignment_difference(got_groups, want_groups, prev, pts, agreed):
    got_labels, extra = _labels(got_groups, pts)
    want_labels, _ = _labels(want_groups, pts)
    for i, (j_got, j_want) in enumerate(zip(got_labels, want_labels)):
        if j_got == j_want:
            continue
        p = pts[i]
        if j_got is None:
            return f"point {i}, {_pt(p)}, is in no group; it belongs to group {j_want}. Every point is in exactly one group."
        d = [_sq(p, c) for c in prev]
        best = min(d)
        tied = [j for j, dj in enumerate(d) if dj == best]
        if j_got in tied:
            return (f"point {i}, {_pt(p)}, is at squared distance {_num(best)} from centroids {_both(tied)} of {agreed}, "
                    f"a tie: it goes to the lowest index, centroid {j_want}, but your code put it in group {j_got}. {TIE_HINT}.")
        text = (f"point {i}, {_pt(p)}, went to centroid {j_got} at squared distance {_num(d[j_got])}, but centroid {j_want} of {agreed} "
                f"is nearer (squared distance {_num(best)}).")
        manhattan = [math.fsum(abs(a - b) for a, b in zip(p, c)) for c in prev]
        if manhattan.index(min(manhattan)) == j_got and manhattan[j_got] < manhattan[j_want]:
            text += (f" Centroid {j_got} is the nearest by the sum of absolute coordinate differences (Manhattan distance), "
                     f"{_num(manhattan[j_got])} against {_num(manhattan[j_want])}, not by the squared Euclidean distance.")
        return f"{text} {NEAREST_HINT}."
    if extra is not None:
        j, p = extra
        what = "which is not one of the input points" if p not in pts else "one copy more than the input has"
        return f"group {j} holds {_pt(p)}, {what}. Every input point is in exactly one group, by value."
    for j, (g, w) in enumerate(zip(got_groups, want_groups)):
        if g != w:
            return f"group {j} lists its points as {_pts(g)}, expected {_pts(w)}: in input order."
    return "the groups differ."  # not reached: equal labels and no extra point mean equal groups


def _what_empty_became(c, c_prev, init_c, pts, t):
    """The known things an empty cluster's centroid turns into, that `c` is: [(kind, words)]."""
    if any(math.isnan(x) for x in c):
        return [("nan", "NaN")]
    found = []
    if all(x == 0 for x in c) and not all(x == 0 for x in c_prev):
        found.append(("origin", "the origin"))
    if t >= 2 and c == init_c and c_prev != init_c:
        found.append(("initial", "its initial position"))
    if c in pts:
        found.append(("point", f"the input point {pts.index(c)}, {_pt(c)}"))
    return found


def _update_difference(t, got_cents, want, prev, pts, init):
    want_cents, groups = want
    bad = [j for j, (g, w) in enumerate(zip(got_cents, want_cents)) if not _same_centroid(g, w)]
    j = bad[0]
    c, w, c_prev = got_cents[j], want_cents[j], prev[j]
    if not groups[j]:
        became = _what_empty_became(c, c_prev, _tuple(init[j]), pts, t)
        text = f"centroid {j} got no points in that assignment, so it keeps its position {_pt(c_prev)}; your code moved it to {_pt(c)}"
        if became:
            text += ", which is " + " and ".join(words for _, words in became)
        return f"{text}. {EMPTY_HINTS[became[0][0] if len(became) == 1 else '']}."
    text = f"centroid {j} should be the mean of its {len(groups[j])} point(s), {_pt(w)}; your code gave {_pt(c)}"
    full = [j for j in bad if groups[j]]

    def floored(i):
        return all(x == math.floor(m) for x, m in zip(got_cents[i], want_cents[i])) and any(m != math.floor(m) for m in want_cents[i])

    if full and all(floored(i) for i in full):
        return f"{text}, the mean rounded down coordinate by coordinate. {FLOOR_HINT}."
    if full and all(got_cents[i] == prev[i] for i in full):
        return f"{text}, where it was before the update. {UNMOVED_HINT}."
    return text + "."


def _shift_measures(old, new):
    """Ways of measuring one iteration's shift, the contract's ("largest") and the usual mistakes."""
    sq = [[(a - b) ** 2 for a, b in zip(c, m)] for c, m in zip(old, new)]
    rows = [math.fsum(r) for r in sq]
    k, dim = len(sq), len(sq[0])
    return {
        "largest": max(rows),
        "unsquared": math.sqrt(max(rows)),
        "per coordinate": max(max(r) for r in sq),
        "mean over centroids": math.fsum(rows) / k,
        "mean over coordinates": math.fsum(rows) / (k * dim),
        "sum over centroids": math.fsum(rows),
        "sum over centroids per coordinate": max(math.fsum(sq[j][i] for j in range(k)) for i in range(dim)),
    }


SHIFT_MISTAKES = {  # measure -> how the message names it
    "unsquared": "tol compared with the unsquared shift, a distance",
    "per coordinate": "a shift measured per coordinate, the largest squared change of a single coordinate",
    "mean over centroids": "the centroids' squared shifts averaged instead of the largest taken",
    "mean over coordinates": "the squared changes averaged over every coordinate of every centroid, as np.mean((new - old) ** 2)",
    "sum over centroids": "the centroids' squared shifts summed instead of the largest taken",
    "sum over centroids per coordinate": "the squared changes summed over the centroids per coordinate, then the largest coordinate taken",
}


def _stopping_difference(got, R, kwargs, pts):
    """Every iteration agrees: which stopping rule gives the state the learner returned."""
    steps = len(R) - 1
    max_iter, tol = kwargs.get("max_iter", 100), kwargs.get("tol", 1e-9)
    measures = [None] + [_shift_measures(R[t - 1][0], R[t][0]) for t in range(1, steps + 1)]

    def stop(measure="largest", strict=False, budget=max_iter):
        first = next((t for t in range(1, steps + 1) if (measures[t][measure] < tol if strict else measures[t][measure] <= tol)), None)
        return budget if first is None else min(first, budget)

    t_want = stop()
    by_tol = stop(budget=10**9) <= max_iter
    why = (f"the first iteration whose largest squared centroid shift is <= tol={tol:g} (the largest squared shifts are "
           f"{', '.join(_num(measures[t]['largest']) for t in range(1, steps + 1))})" if by_tol else f"max_iter={max_iter}")
    t_got = next((t for t in range(1, steps + 1) if _same_state(got, R[t])), None)
    if t_got is None:
        # Both readings below give the same state (the groups of iteration t are an assignment to the centroids
        # after t - 1); with max_iter alone the state is right, so the stop on tol skipped the last update.
        for t in range(1, steps + 1):
            if got[1] == R[t][1] and _centroids_differ(got[0], R[t - 1][0]) is None and R[t][0] != R[t - 1][0]:
                return (f"returned the groups of iteration {t} with the centroids from before that iteration's update; the contract "
                        f"stops after iteration {t_want}, {why}. {STOP_BEFORE_UPDATE_HINT}.")
        for t in range(1, steps + 1):
            if _centroids_differ(got[0], R[t][0]) is None and got[1] == _assign(pts, got[0]) != R[t][1]:
                return (f"returned the centroids after iteration {t} with the points assigned to them again, not the groups that "
                        f"iteration averaged. {REASSIGN_HINT}.")
        return f"returned a state that is not the state after any number of iterations; the contract stops after iteration {t_want}, {why}."
    text = f"returned the state after iteration {t_got}, but the contract stops after iteration {t_want}, {why}."
    fits = []
    for budget, words in ((max_iter + 1, "one iteration more than max_iter"), (max_iter - 1, "one iteration fewer than max_iter")):
        if budget >= 1 and _same_state(_state_at(R, stop(budget=budget)), got):
            fits.append(words)
    at = min(t_got if t_got < t_want else t_want, steps)  # early: where the mistake stopped; late: where the contract stopped
    if _same_state(_state_at(R, stop(strict=True)), got):
        exact = f" (the squared shift is exactly tol at iteration {t_want})" if measures[min(t_want, steps)]["largest"] == tol else ""
        fits.append(f"the squared shift compared with < instead of <={exact}")
    sign = "<=" if t_got < t_want else ">"
    for measure, words in SHIFT_MISTAKES.items():
        if _same_state(_state_at(R, stop(measure)), got):
            fits.append(f"{words} ({_num(measures[at][measure])} {sign} tol at iteration {at})")
    if not fits:
        return text
    largest = measures[at]["largest"]
    j = max(range(len(R[at][0])), key=lambda i: _sq(R[at - 1][0][i], R[at][0][i]))
    move = tuple(b - a for a, b in zip(R[at - 1][0][j], R[at][0][j]))
    rule = (f"At iteration {at} centroid {j} moved by {_pt(move)}, a squared shift of {_num(largest)} "
            f"({'>' if largest > tol else '<='} tol): that is the largest, so it decides.")
    iteration_only = all(words.startswith("one iteration") for words in fits)
    hint = ITER_COUNT_HINT if iteration_only else f"{rule} {TOL_HINT}"
    return f"{text} Stopping {'that early' if t_got < t_want else 'that late'} fits {_either(fits)}. {hint}."


def _either(items, word="or"):
    items = [str(item) for item in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} " + items[-1]


def _both(items):
    return _either(items, "and")


def expect_state(sub, ctx, got, points, init, kwargs, want_cents=None, want_groups=None, *, scenario, show_state=True):
    """The learner's state for kmeans(points, init, **kwargs) equals the contract's: groups exactly
    (by value, in input order), centroids within CENTROID_RTOL. The hand-worked state is given as
    centroids and point indices per group; otherwise the reference's is used. With `show_state` (small
    cases) the message holds both whole states, the quickest way to the bug; the cause comes from `explain`,
    run (a sandbox call) only for the failure the check reports (CheckFailed.explain)."""
    dim, k = len(points[0]), len(init)
    if want_cents is None:
        want_c, want_g = read_state(ctx.reference.kmeans(copy.deepcopy(points), copy.deepcopy(init), **kwargs), k, dim, "the reference")
    else:
        want_c = [_tuple(c) for c in want_cents]
        want_g = [[_tuple(points[i]) for i in idx] for idx in want_groups]
    cents, groups = read_state(got, k, dim, scenario)
    pts = [_tuple(p) for p in points]
    small = show_state and _small(points, init)
    where, cause = None, None
    inputs = set(pts)
    foreign = next(((j, p) for j, g in enumerate(groups) for p in g if p not in inputs), None)
    if foreign is not None:
        where, cause = f"group {foreign[0]} holds {_pt(foreign[1])}, which is not one of the input points", FOREIGN_HINT + "."
    for j in range(k if where is None else 0):
        if groups[j] != want_g[j]:
            if small:
                where = f"group {j} should be {_pts(want_g[j])}, got {_pts(groups[j])}"
            else:
                index = {p: i for i, p in enumerate(pts)}
                where = (f"group {j} should hold the input points {[index[p] for p in want_g[j]]} (by index), got "
                         f"{[index.get(p, 'not an input point') for p in groups[j]]}")
            break
    if where is None:
        j = _centroids_differ(cents, want_c)
        if j is None:
            return
        where = f"centroid {j} should be {_pt(want_c[j])}" + (", the mean of its group" if want_g[j] else "") + f", got {_pt(cents[j])}"
    state = (f" Expected centroids {_pts(want_c)} with groups {' '.join(_pts(g) for g in want_g)}; got centroids {_pts(cents)} "
             f"with groups {' '.join(_pts(g) for g in groups)}." if small else "")
    details = {"scenario": scenario, "expected_centroids": _pts(want_c), "got_centroids": _pts(cents), "first_difference": where}
    explained = (lambda: cause) if cause is not None else (lambda: explain(sub, ctx, points, init, kwargs, (cents, groups)))
    fail(f"{scenario}: {where}.{state}", explain=explained, **details)


def shrinking(sub, verify):
    """shrink_on_failure over `small_cases` (every failure's cause is explained once, for the one reported)."""
    return shrink_on_failure(sub, small_cases, verify)


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

# Squared shifts per iteration: 16, 4, 1/4, 1/4, 0 (all exact), every move along x. Iteration 1
# leaves centroid 1 empty; iteration 3 moves both centroids by 0.5 (summed: 0.5).
TOL_POINTS = [[1, 0], [2, 0], [4, 1], [3, 2], [6, 1], [5, 1], [0, 2]]
TOL_INIT = [[7, 1], [8, 1]]
TOL_STOP_CENTS = [[2, 1], [5.5, 1]]  # the state after iteration 3, where the squared shift is 1/4
TOL_STOP_GROUPS = [[0, 1, 2, 3, 6], [4, 5]]

# Iteration 1 moves centroid 0 by (0, -0.5) and centroid 1 not at all: the largest squared shift
# is 0.25, their mean 0.125. Iteration 2 moves (0, 4) over to centroid 1; iteration 3 is a fixed point.
MEAN_SHIFT_POINTS = [[0, 4], [0, 1], [1, 5]]
MEAN_SHIFT_INIT = [[0, 3], [1, 5]]

# Iteration 1 moves centroid 0 by (0.5, 0) and centroid 1 by (-0.5, 0.5): the largest squared shift
# is 0.5 (centroid 1), the largest squared change of one coordinate 0.25, the mean over the
# centroids 0.375. Iteration 2 moves (3, 1) over to centroid 0; iteration 3 is a fixed point.
DIAGONAL_POINTS = [[2, 4], [2, 0], [3, 1], [1, 2]]
DIAGONAL_INIT = [[1, 1], [3, 2]]


# The hand-built cases of the checks below (points, init): "points and init are left unchanged" runs each of them too.
HAND = {
    "two_way_tie": ([[-2, 2], [1, 2], [0, 2]], [[-1, 2], [1, 2]]),
    "three_way_tie": ([[5, 5], [20, 20], [6, 5], [5, 4], [3, 5]], [[20, 20], [4, 5], [6, 5], [5, 4]]),
    "duplicate_init": ([[1, 3], [3, 3], [10, -2], [11, -2]], [[2, 3], [2, 3], [10, -2]]),
    "more_centroids": ([[1, 2], [4, 6], [4, 6]], [[2, -1], [1, 2], [9, 9], [4, 5], [1, 2]]),
    "isolated": ([[0, 1], [1, 0], [1, 1], [5, 6], [6, 5], [6, 6]], [[0, 0], [-40, 25], [5, 5]]),
    "one_dimensional": ([[0], [10], [11], [8], [7], [9]], [[11], [8]]),
    "five_dimensional": ([[7, 4, 9, 1, 6], [7, 3, 7, 0, 7], [3, 2, 6, 2, 2], [3, 4, 6, 1, 2],
                          [5, 3, 7, 0, 0], [4, 3, 7, 0, 0], [7, 3, 8, 0, 6], [5, 3, 7, -1, 8]],
                         [[7, 4, 9, 1, 6], [7, 3, 7, 0, 7], [2, 5, 1, 0, 0]]),
    "integer": ([[0, 0], [1, 0], [0, 1], [10, 10], [11, 10], [10, 12]], [[0, 0], [9, 9], [100, -100]]),
}


def _hand(sub, ctx, what, points, init, want_cents, want_groups, **kwargs):
    scenario = f"{what}: {_describe_case(points, init, **kwargs)}"
    with on_input(kmeans_call(points, init, **kwargs)):
        got = sub.call("kmeans", points, init, **kwargs)
        expect_state(sub, ctx, got, points, init, kwargs, want_cents, want_groups, scenario=scenario)


@check("a point exactly between centroids goes to the lowest index")
def ties_lowest_index(sub, ctx):
    # (0, 2) is at squared distance 1 from both centroids, which never move: a fixed point at once.
    _hand(sub, ctx, "two-way tie", *HAND["two_way_tie"], [[-1, 2], [1, 2]], [[0, 2], [1]])
    # (5, 5) is at squared distance 1 from centroids 1, 2 and 3; the state is a fixed point at once.
    _hand(sub, ctx, "three-way tie among centroids 1, 2, 3", *HAND["three_way_tie"], [[20, 20], [4, 5], [6, 5], [5, 4]], [[1], [0, 4], [2], [3]])


@check("duplicate initial centroids: the second stays empty")
def duplicate_init(sub, ctx):
    # Centroids 0 and 1 coincide and stay at the mean of their points, so every point ties and
    # goes to 0; centroid 1 stays empty at (2, 3), in its place.
    _hand(sub, ctx, "duplicate initial centroids 0 and 1", *HAND["duplicate_init"],
          [[2, 3], [2, 3], [10.5, -2]], [[0, 1], [], [2, 3]])


@check("more centroids than points")
def more_centroids_than_points(sub, ctx):
    # 5 centroids, 3 points (two of them equal); centroid 4 duplicates centroid 1.
    _hand(sub, ctx, "5 centroids for 3 points", *HAND["more_centroids"],
          [[2, -1], [1, 2], [9, 9], [4, 6], [1, 2]], [[], [0], [], [1, 2], []])


@check("an isolated centroid never gets a point and keeps its place")
def isolated_centroid(sub, ctx):
    _hand(sub, ctx, "centroid 1 far from every point", *HAND["isolated"],
          [[2 / 3, 2 / 3], [-40, 25], [17 / 3, 17 / 3]], [[0, 1, 2], [], [3, 4, 5]])


@check("max_iter=1 returns the state after exactly one iteration")
def max_iter_one(sub, ctx):
    _hand(sub, ctx, "a case that needs 5 iterations, stopped by max_iter", CHAIN_POINTS, CHAIN_INIT,
          [[10, 3], [6.25, 4.25]], [[3, 5], [0, 1, 2, 4]], max_iter=1)


@check("max_iter=2 returns the state after exactly two iterations")
def max_iter_two(sub, ctx):
    _hand(sub, ctx, "a case that needs 5 iterations, stopped by max_iter", CHAIN_POINTS, CHAIN_INIT,
          [[10, 11 / 3], [5, 4]], [[3, 4, 5], [0, 1, 2]], max_iter=2)


@check("runs to convergence with the defaults")
def converges(sub, ctx):
    _hand(sub, ctx, "a case that needs 5 iterations, default max_iter and tol", CHAIN_POINTS, CHAIN_INIT,
          [[9, 3.8], [0, 4]], [[1, 2, 3, 4, 5], [0]])
    _hand(sub, ctx, "a case that needs 5 iterations, max_iter exactly 5", CHAIN_POINTS, CHAIN_INIT,
          [[9, 3.8], [0, 4]], [[1, 2, 3, 4, 5], [0]], max_iter=5)


@check("tol decides: squared shift <= tol < shift stops")
def tol_between(sub, ctx):
    # Iteration 3 moves both centroids by 0.5: squared shift 0.25 <= 0.3, unsquared 0.5 > 0.3.
    _hand(sub, ctx, "largest squared shift 16, 4, then 0.25 at iteration 3", TOL_POINTS, TOL_INIT, TOL_STOP_CENTS, TOL_STOP_GROUPS, tol=0.3)


@check("a squared shift exactly equal to tol stops")
def tol_equal(sub, ctx):
    _hand(sub, ctx, "largest squared shift 16, 4, then exactly 0.25 at iteration 3", TOL_POINTS, TOL_INIT, TOL_STOP_CENTS,
          TOL_STOP_GROUPS, tol=0.25)


@check("the shift is the largest squared Euclidean move of a centroid")
def shift_euclidean(sub, ctx):
    # Iteration 1: largest squared shift 0.25 > 0.2 goes on; the mean over the centroids, 0.125, would stop.
    _hand(sub, ctx, "2-D, one centroid moves by (0, -0.5) in iteration 1, the other stays", MEAN_SHIFT_POINTS, MEAN_SHIFT_INIT,
          [[0, 1], [0.5, 4.5]], [[1], [0, 2]], tol=0.2)
    # Iteration 1: centroid 1 moves by (-0.5, 0.5), a squared shift of 0.5 > 0.3; each coordinate
    # alone changes by 0.25 <= 0.3, and the mean over the centroids is 0.375 > 0.3.
    _hand(sub, ctx, "2-D, a centroid moves diagonally by (-0.5, 0.5) in iteration 1", DIAGONAL_POINTS, DIAGONAL_INIT,
          [[2, 1], [2, 4]], [[1, 2, 3], [0]], tol=0.3)


@check("1-D points")
def one_dimensional(sub, ctx):
    points, init = HAND["one_dimensional"]
    _hand(sub, ctx, "1-D, stopped by max_iter", points, init, [[9.5], [3.5]], [[1, 2, 3, 5], [0, 4]], max_iter=3)
    _hand(sub, ctx, "1-D, to convergence", points, init, [[9], [0]], [[1, 2, 3, 4, 5], [0]])


@check("5-D points, a cluster emptied on the way")
def five_dimensional(sub, ctx):
    # Centroid 0 gets two points in iteration 1 and none from iteration 2 on: it keeps the
    # position it had after iteration 1, not its initial one.
    points, init = HAND["five_dimensional"]
    _hand(sub, ctx, "5-D", points, init, [[6, 3.5, 8, 0.5, 3], [6.5, 3.25, 7.75, 0, 6.75], [3.75, 3, 6.5, 0.75, 1]],
          [[], [0, 1, 6, 7], [2, 3, 4, 5]])


@check("integer coordinates give true means")
def integer_coordinates(sub, ctx):
    points, init = HAND["integer"]
    _hand(sub, ctx, "int coordinates", points, init, [[1 / 3, 1 / 3], [31 / 3, 32 / 3], [100, -100]], [[0, 1, 2], [3, 4, 5], []])
    _hand(sub, ctx, "int coordinates", CHAIN_POINTS, CHAIN_INIT, [[10, 3], [6.25, 4.25]], [[3, 5], [0, 1, 2, 4]], max_iter=1)


# ---------------------------------------------------------------------------------------------
# Random cases, and the small cases a failure among them shrinks to
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


def _half(v):
    return v // 2 if v % 2 == 0 else v / 2


def small_cases():
    """Hypothesis cases (points, init): 1 to 8 points in 1-3 dimensions with coordinates that are
    small integers or halves (so sums, and the distances to centroids that are exact in binary, are
    exact), init 1 to 4 of the points, repeats allowed (duplicate centroids, empty clusters).
    Drawn as independent parts (the dimension first, then 3-D rows cut to it, then which points
    init takes), so each shrinks on its own: toward 1-D, fewer points, coordinates 0, init the
    first point. No lambdas here: Hypothesis describes a lambda by parsing its source with `ast`,
    which is not thread-safe in CPython 3.11 (a SystemError when grades run in threads)."""
    from hypothesis import strategies as st

    rows = st.lists(st.lists(st.integers(-8, 8).map(_half), min_size=3, max_size=3), min_size=1, max_size=8)
    return st.tuples(st.sampled_from([1, 2, 3]), rows, st.lists(st.integers(0, 7), min_size=1, max_size=4)).map(_small_case)


def _small_case(drawn):
    dim, rows, picks = drawn
    points = [row[:dim] for row in rows]
    return points, [list(points[i % len(points)]) for i in picks]


def unambiguous(points, init, max_iter=100):
    """Whether every correct implementation gives this case the same groups: run the contract in
    exact fractions and refuse a case where a point ties between centroids that floats cannot hold
    exactly (1/3, say): there another correct distance formula may round the tie the other way.
    Distinct distances of these small halves differ by far more than rounding, and an unchanged
    group gives an exactly unchanged mean, so nothing else can go two ways."""
    pts = [tuple(Fraction(x) for x in p) for p in points]
    cents = [tuple(Fraction(x) for x in c) for c in init]
    for _ in range(max_iter):
        groups = [[] for _ in cents]
        for p in pts:
            d = [sum((a - b) ** 2 for a, b in zip(p, c)) for c in cents]
            tied = [j for j, dj in enumerate(d) if dj == min(d)]
            if len(tied) > 1 and any(Fraction(float(x)) != x for j in tied for x in cents[j]):
                return False
            groups[tied[0]].append(p)
        new = [tuple(sum(xs) / len(g) for xs in zip(*g)) if g else c for c, g in zip(cents, groups)]
        if new == cents:
            return True
        cents = new
    return True


def _small_scenario(points, init, **kwargs):
    return f"small case: {_describe_case(points, init, **kwargs)}"


def verify_against_reference(sub, ctx, case):
    """One small case: the learner's kmeans(points, init) against the reference's, as in the random check."""
    points, init = case
    if not unambiguous(points, init):
        return
    with on_input(kmeans_call(points, init)):
        got = sub.call("kmeans", points, init)
        expect_state(sub, ctx, got, points, init, {}, scenario=_small_scenario(points, init))


# (seed, n, k, dim, far, duplicate), small to large. Each holds more than the 20 numbers the toolkit
# writes out, so a failure among them is always shrunk: a small case of halves reads better than 10
# random points with 6 decimals.
RANDOM_CASES = [
    (1, 12, 3, 2, 0, False), (6, 12, 4, 2, 1, True), (3, 25, 5, 1, 0, False), (8, 20, 8, 2, 0, False),
    (2, 40, 4, 3, 0, False), (5, 60, 6, 2, 0, True), (4, 30, 3, 5, 1, False), (7, 50, 2, 4, 0, False),
]


def _random_scenario(n, k, dim, far, duplicate, seed):
    extra = (f", {far} far-away centroid" if far else "") + (", centroid 0 duplicated at the end" if duplicate else "")
    return f"random case seed {seed}: {n} points in {dim}-D, {k} initial centroids drawn from the points{extra}"


@check("matches the reference on random cases")
def random_vs_reference(sub, ctx):
    with shrinking(sub, lambda case: verify_against_reference(sub, ctx, case)):
        for seed, n, k, dim, far, duplicate in RANDOM_CASES:
            points, init = random_case(ctx.rng(seed), n, k, dim, far=far, duplicate=duplicate)
            with on_input(kmeans_call(points, init, whole=False)):
                got = sub.call("kmeans", points, init)
                expect_state(sub, ctx, got, points, init, {}, scenario=_random_scenario(n, k, dim, far, duplicate, seed), show_state=False)


PROPERTY_CASES = [  # (seed, n, k, dim, far, duplicate, iterations), small to large; all shrink, as RANDOM_CASES
    (13, 24, 6, 1, 1, False, 5), (11, 30, 4, 2, 1, True, 6), (12, 40, 5, 3, 0, False, 6),
]


def follows_step_by_step(sub, ctx, points, init, steps, base, whole):
    """No reference involved: for t = 1..steps, the groups after t iterations partition the points
    (by value, in input order), each point is nearest to its centroid after t - 1 iterations, and
    each centroid is its group's mean, or the centroid after t - 1 iterations when its group is empty.
    A failure at t reports kmeans(points, init, max_iter=t, tol=0.0) as its input. A failure whose
    cause does not show in the state itself gets it from `explain` (the reference as evidence, not as
    the verdict), run once for the failure the check reports."""
    k, dim = len(init), len(points[0])
    records = expect_sequence(sub.run(kmeans_trajectory, points, init, steps), steps,
                              what="results for max_iter = 1.." + str(steps), scenario=base)
    for t, record in enumerate(records, start=1):
        if record["raised"] is not None:
            # Called again on its own, so that it is reported as your code raising, with its traceback and this input.
            sub.call("kmeans", points, init, max_iter=t, tol=0.0)
            fail(f"{base}, max_iter={t}: kmeans() raised {record['raised']}: {record['message']} (but not when called again with the same input)",
                 failing_input=kmeans_call(points, init, whole=whole, max_iter=t, tol=0.0))
    trajectory = [record["result"] for record in records]
    before = [_tuple(c) for c in init]
    pts = [_tuple(p) for p in points]
    for t, got in enumerate(trajectory, start=1):
        scenario = f"{base}, max_iter={t}"
        with on_input(kmeans_call(points, init, whole=whole, max_iter=t, tol=0.0)):
            cents, groups = read_state(got, k, dim, scenario)
            _check_partition(groups, pts, scenario)
            def diagnose(t=t, state=(cents, groups)):
                return explain(sub, ctx, points, init, {"max_iter": t, "tol": 0.0}, state)

            _check_nearest(groups, before, scenario, t, diagnose)
            _check_means(groups, cents, before, [_tuple(c) for c in init], pts, scenario, t, diagnose)
        before = cents


def verify_properties(sub, ctx, case):
    points, init = case
    steps = min(len(reference_states(ctx, points, init)) - 1, 6)
    follows_step_by_step(sub, ctx, points, init, steps, _small_scenario(points, init, tol=0), whole=True)


@check("every state follows from the one before it")
def properties(sub, ctx):
    with shrinking(sub, lambda case: verify_properties(sub, ctx, case)):
        for seed, n, k, dim, far, duplicate, steps in PROPERTY_CASES:
            points, init = random_case(ctx.rng(seed), n, k, dim, far=far, duplicate=duplicate)
            follows_step_by_step(sub, ctx, points, init, steps, _random_scenario(n, k, dim, far, duplicate, seed) + ", tol=0", whole=False)


def _check_partition(groups, pts, scenario):
    """Each group lists input points in input order, and together they hold every input point once
    (by value: equal points are interchangeable)."""
    for j, g in enumerate(groups):
        foreign = [p for p in g if p not in pts]
        if foreign:
            fail(f"{scenario}: group {j} holds {_pt(foreign[0])}, which is not one of the input points. {FOREIGN_HINT}.")
    have, want = Counter(p for g in groups for p in g), Counter(pts)
    missing, extra = want - have, have - want
    if missing and extra:  # one value turned into another: the points themselves were changed
        fail(f"{scenario}: {_pt(next(iter(missing)))} is in no group, while {_pt(next(iter(extra)))} is in the groups more often than "
             f"in the input. {FOREIGN_HINT}.")
    if missing or extra:
        fail(f"{scenario}: the groups must split the points, each in exactly one group; "
             + (f"{_pt(next(iter(missing)))} is in no group" if missing else f"{_pt(next(iter(extra)))} is in more than one group"))
    for j, g in enumerate(groups):
        rest = iter(pts)
        if not all(any(p == q for q in rest) for p in g):  # g is a subsequence of the points
            fail(f"{scenario}: group {j} lists {_pts(g)}: not in input order")


def _check_nearest(groups, before, scenario, t, diagnose):
    state = "the initial centroids" if t == 1 else f"the centroids after {t - 1} iteration(s)"
    for j, g in enumerate(groups):
        for p in g:
            d = [_sq(p, c) for c in before]
            best = min(d)
            if d[j] > best * (1 + 1e-9) + 1e-12:
                text = (f"{scenario}: point {_pt(p)} is in group {j} but is nearest to centroid {d.index(best)} of {state} "
                        f"(squared distance {best:.6g}, vs {d[j]:.6g} to centroid {j}).")
                # The cause comes from running it step by step next to the reference (`explain`): that
                # these groups happen to fit the returned centroids is too weak a sign on its own.
                fail(text, explain=lambda: diagnose() or NEAREST_HINT + ".", point=_pt(p), group=j, nearest=d.index(best))


def _check_means(groups, cents, before, init, pts, scenario, t, diagnose):
    """What the wrong centroid is (a floored mean; for an empty group NaN, the origin, a data point,
    its initial position) is evidence enough for a cause; otherwise it comes from `diagnose`."""
    state = "its initial position" if t == 1 else f"its position after {t - 1} iteration(s)"
    for j, (g, c) in enumerate(zip(groups, cents)):
        want = tuple(math.fsum(xs) / len(g) for xs in zip(*g)) if g else before[j]
        if _same_centroid(c, want):
            continue
        details = {"centroid": j, "expected": _pt(want), "got": _pt(c)}
        if g:
            text = f"{scenario}: centroid {j} should be the mean of its {len(g)} point(s), {_pt(want)}; got {_pt(c)}"
            if all(x == math.floor(m) for x, m in zip(c, want)) and any(m != math.floor(m) for m in want):
                fail(f"{text}, the mean rounded down. {FLOOR_HINT}.", **details)
            fail(text + ".", explain=lambda: diagnose() or "The returned centroids are the means of the returned groups.", **details)
        became = _what_empty_became(c, want, init[j], pts, t)
        text = f"{scenario}: centroid {j} should be {state}, {_pt(want)}, since its group is empty; got {_pt(c)}"
        if not became:
            fail(text + ".", explain=lambda: diagnose() or EMPTY_HINTS[""] + ".", **details)
        fail(f"{text}, which is {' and '.join(words for _, words in became)}. {EMPTY_HINTS[became[0][0] if len(became) == 1 else '']}.", **details)


# ---------------------------------------------------------------------------------------------
# Inputs and errors
# ---------------------------------------------------------------------------------------------
@check("points and init are left unchanged")
def inputs_left_alone(sub, ctx):
    # The input shown is code whose last line is the inputs after the call: what changed is there, not in the result.
    shown = Call.code(f"points = {CHAIN_POINTS!r}\ninit = {CHAIN_INIT!r}\nkmeans(points, init, max_iter=2)\n"
                      "points, init  # as they were before the call")
    with on_input(shown):
        inputs_unchanged(sub, "kmeans", CHAIN_POINTS, CHAIN_INIT, max_iter=2, scenario=_describe_case(CHAIN_POINTS, CHAIN_INIT, max_iter=2))
    points, init = random_case(ctx.rng(21), 20, 3, 2, far=1, duplicate=True)
    inputs_unchanged(sub, "kmeans", points, init, scenario=_random_scenario(20, 3, 2, 1, True, 21))
    # Every hand-built case too, the extreme ones included (ties, duplicate and far centroids, more centroids than
    # points, 1-D, 5-D, integers), and the cases stopped by tol.
    for name, (points, init) in [*HAND.items(), ("tol", (TOL_POINTS, TOL_INIT)), ("mean shift", (MEAN_SHIFT_POINTS, MEAN_SHIFT_INIT)),
                                 ("diagonal shift", (DIAGONAL_POINTS, DIAGONAL_INIT))]:
        with on_input(kmeans_call(points, init)):
            inputs_unchanged(sub, "kmeans", points, init, scenario=f"{name.replace('_', ' ')}: {_describe_case(points, init)}")


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
        record = sub.run(kmeans_outcome, points, init, max_iter)
        if record["raised"] is not None and "ValueError" in record["classes"]:
            continue
        got = f"it raised {record['raised']}: {record['message']}" if record["raised"] is not None else "it returned normally"
        fail(f"{scenario}: expected ValueError, but {got}. Validate before the loop: zip() silently truncates "
             f"rows of different lengths, and range(0) runs no iteration at all.", scenario=scenario)
