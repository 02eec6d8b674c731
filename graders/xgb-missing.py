"""Checks for `xgb-missing`: XGBoost's best split of one feature, with a learned direction for missing values.

Thresholds are never compared: the judge makes the partition of the learner's (threshold, default_left)
and checks, in this order, that both children are non-empty, that the returned gain is that partition's
(recomputed in float64), and that no candidate of the brute force does better; partitions of equal gain
are all accepted. A wrong gain or a split that is not the best names the known mistake it matches.
"""

import numpy as np

from mlprep.grading import (as_float, assert_close, check, check_each, expect_sequence, explained, fail, inputs_unchanged, lists_of, matching_mistakes, shrink_on_failure,
                            sized)

NAN = float("nan")
RTOL = ATOL = 1e-7  # float64's tolerance, for every gain
HINT_RTOL = 1e-9  # a mistake's value counts as evidence only when the learner's gain matches it this closely


# -- the judge's side: partitions and their gains ----------------------------------------------------
def partition(x, threshold, default_left):
    """The rows that go left: present rows with x < threshold, missing rows when default_left."""
    missing = np.isnan(x)
    with np.errstate(invalid="ignore"):
        return np.where(missing, bool(default_left), x < threshold)


def gain_terms(left, g, h, rows=None):
    """The sums of the gain 0.5 * [G_L^2/(H_L + lam) + G_R^2/(H_R + lam) - G^2/(H + lam)] - gamma, over `rows` (all by default)."""
    rows = np.ones(len(g), dtype=bool) if rows is None else rows
    GL, HL = g[left & rows].sum(), h[left & rows].sum()
    GR, HR = g[~left & rows].sum(), h[~left & rows].sum()
    G, H = g[rows].sum(), h[rows].sum()
    return GL, HL, GR, HR, G, H


def split_gain(left, g, h, lam, gamma):
    GL, HL, GR, HR, G, H = gain_terms(left, g, h)
    return 0.5 * (GL**2 / (HL + lam) + GR**2 / (HR + lam) - G**2 / (H + lam)) - gamma


def candidates(x, g, h, lam, gamma, default_directions=(False, True), missing_alone=True):
    """Every valid split as (gain, threshold, default_left, left mask): thresholds at each distinct present value and +inf."""
    missing = np.isnan(x)
    values = np.unique(x[~missing])
    found = []
    for threshold in [*values.tolist(), float("inf")]:
        for default_left in default_directions:
            left = partition(x, threshold, default_left)
            if left.all() or not left.any():
                continue
            present_left = left[~missing]
            if not missing_alone and missing.any() and (present_left.all() or not present_left.any()):
                continue
            found.append((split_gain(left, g, h, lam, gamma), threshold, default_left, left))
    return found


def best_of(found):
    return max(found, key=lambda c: c[0]) if found else None


def mistaken_gains(left, x, g, h, lam, gamma, threshold):
    """{what the code does wrong: the gain it reports for the learner's own (threshold, default_left)}."""
    GL, HL, GR, HR, G, H = gain_terms(left, g, h)
    score = lambda G_, H_, lam_=lam: G_**2 / (H_ + lam_) if H_ + lam_ > 0 else np.nan  # NaN: never evidence
    bracket = score(GL, HL) + score(GR, HR) - score(G, H)
    found = {
        "lam is left out of the gain: use G^2 / (H + lam) for both children and the parent": 0.5 * (score(GL, HL, 0) + score(GR, HR, 0) - score(G, H, 0)) - gamma,
        "gamma is not subtracted: gain = 0.5 * [...] - gamma": 0.5 * bracket,
        "the factor 0.5 is missing: gain = 0.5 * [G_L^2/(H_L + lam) + G_R^2/(H_R + lam) - G^2/(H + lam)] - gamma": bracket - gamma,
        "the parent term G^2 / (H + lam) is left out; the gain is the improvement over not splitting": 0.5 * (score(GL, HL) + score(GR, HR)) - gamma,
    }
    missing = np.isnan(x)
    if missing.any():
        drop = ("the missing rows are left out of the totals G and H: they are in one of the children wherever they go, so G, H"
                " (and G_R = G - G_L, H_R = H - H_L) must count them")
        present = ~missing
        # Missing rows left out everywhere, or left out of the totals only (and added to the left child when default_left).
        pGL, pHL, pGR, pHR, pG, pH = gain_terms(left, g, h, rows=present)
        found[drop] = 0.5 * (score(pGL, pHL) + score(pGR, pHR) - score(pG, pH)) - gamma
        found[drop + " "] = 0.5 * (score(GL, HL) + score(pG - GL, pH - HL) - score(pG, pH)) - gamma
    if threshold is not None and np.isfinite(threshold) and np.any(x == threshold):
        with np.errstate(invalid="ignore"):
            at_or_below = np.where(missing, left, x <= threshold)
        if at_or_below.any() and not at_or_below.all():
            found[f"this is the gain of sending x <= threshold left, but rows with x == threshold ({threshold:g}) go right: the"
                  " contract sends x < threshold left"] = split_gain(at_or_below, g, h, lam, gamma)
    return found


def cut_inside_ties(x, g, h, lam, gamma, got_gain):
    """Whether got_gain is the gain of a cut between two sorted rows of equal x, a partition no threshold makes."""
    missing = np.isnan(x)
    order = np.flatnonzero(~missing)[np.argsort(x[~missing], kind="stable")]
    xs = x[order]
    for i in np.flatnonzero(xs[1:] == xs[:-1]) + 1:
        for default_left in (False, True):
            left = missing & default_left
            left[order[:i]] = True
            if np.isclose(split_gain(left, g, h, lam, gamma), got_gain, rtol=HINT_RTOL, atol=HINT_RTOL):
                return True
    return False


def gain_hint(left, x, g, h, lam, gamma, threshold, got_gain, want_gain):
    """The known mistake the learner's gain matches, when exactly one does."""
    matches = matching_mistakes(got_gain, mistaken_gains(left, x, g, h, lam, gamma, threshold), want=want_gain, apart=(RTOL, ATOL), rtol=HINT_RTOL,
                                atol=HINT_RTOL, finite_only=True)
    if len(matches) == 1:
        return f"Your gain matches a known mistake: {matches[0]}."
    if not matches and cut_inside_ties(x, g, h, lam, gamma, got_gain):
        return ("Your gain is that of a cut between two rows with the same x, which no threshold makes: rows with equal x go"
                " to the same side, so cut only where the sorted value changes.")
    return ""


def describe(x, lam, gamma, what=""):
    n, n_missing = len(x), int(np.isnan(x).sum())
    return f"n = {n}, {n_missing} missing, lam = {lam:g}, gamma = {gamma:g}{what}"


def describe_split(threshold, default_left, gain, left):
    rows = f", left rows {np.flatnonzero(left).tolist()}" if len(left) <= 20 else f", {int(left.sum())} of {len(left)} rows left"
    return f"threshold {threshold:g}, default_left={bool(default_left)} (gain {gain:.8g}{rows})"


def as_flag(value):
    """A Python or NumPy bool (or the integer 0 or 1) as a bool; None for anything else."""
    if np.ndim(value) == 0 and np.asarray(value).dtype.kind in "bi" and np.asarray(value).item() in (0, 1):
        return bool(np.asarray(value).item())
    return None


# -- judging one call --------------------------------------------------------------------------------
def judge_split(sub, x, g, h, lam, gamma, what=""):
    """best_split(x, g, h, lam, gamma) against the brute-force best, the checks in the order the module's docstring gives."""
    scenario = describe(x, lam, gamma, what)
    got = expect_sequence(sub.call("best_split", x, g, h, lam, gamma), 3, what="best_split's result (threshold, default_left, gain)",
                          scenario=scenario)
    found = candidates(x, g, h, lam, gamma)
    best = best_of(found)
    got_threshold, got_default, got_gain = got
    if best is None:
        judge_no_split(got, x, scenario)
        return
    best_gain, best_threshold, best_default, best_left = best
    best_text = describe_split(best_threshold, best_default, best_gain, best_left)
    if got_threshold is None:
        reason = (f" The best gain is not positive here ({best_gain:.6g}, gamma = {gamma:g}); the best split is returned whatever its"
                  " sign: deciding not to split is the caller's business." if best_gain <= 0 else "")
        if not reason and all(not c[3][~np.isnan(x)].any() or c[3][~np.isnan(x)].all() for c in found):
            reason = " The only splits here put every present row on one side and the missing rows alone on the other: that is a split too."
        fail(f"best_split ({scenario}): returned no split (threshold None), but one exists; the best is {best_text}.{reason}",
             what="threshold", expected=float(best_threshold), got="None")
    threshold = as_float(got_threshold, what="threshold", scenario=scenario)
    if np.isnan(threshold):
        fail(f"threshold ({scenario}): got NaN; x < NaN is False for every row. Return a number (+inf or -inf included).", what="threshold")
    default_left = as_flag(got_default)
    if default_left is None:
        fail(f"default_left ({scenario}): expected a bool, got {type(got_default).__name__} {str(got_default)[:60]}", what="default_left")
    gain = as_float(got_gain, what="gain", scenario=scenario)
    left = partition(x, threshold, default_left)
    if left.all() or not left.any():
        where, empty = ("left", "right") if left.all() else ("right", "left")
        fail(f"best_split ({scenario}): threshold {threshold:g} with default_left={default_left} sends every row {where}, so the {empty}"
             f" child is empty; a split needs rows on both sides (present rows with x < threshold go left). The best is {best_text}.",
             what="partition", threshold=threshold, default_left=default_left, explain=lambda: empty_child_hint(x, threshold, left))
    own_gain = split_gain(left, g, h, lam, gamma)
    split_text = f"threshold {threshold:g}, default_left={default_left}"
    with explained(lambda: gain_hint(left, x, g, h, lam, gamma, threshold, gain, own_gain)):
        assert_close(gain, own_gain, what=f"gain of your split ({split_text})", scenario=scenario, rtol=RTOL, atol=ATOL)
    if own_gain < best_gain - (ATOL + RTOL * abs(best_gain)):
        fail(f"best_split ({scenario}): your split, {describe_split(threshold, default_left, own_gain, left)}, is not the best; the best is"
             f" {best_text}.", what="gain of the best split", expected=float(best_gain), got=float(own_gain),
             explain=lambda: candidate_hint(x, g, h, lam, gamma, left, best_default, best_left))


def empty_child_hint(x, threshold, left):
    """After an empty child: whether it is empty because rows equal to the threshold went right."""
    present = x[~np.isnan(x)]
    if not left.any() and present.size and threshold == present.min():
        return (f"x < threshold is strict: the rows with x == {threshold:g}, the smallest value, go right, so the left child is"
                " empty. A threshold sends left exactly the values below it.")
    return ""


def candidate_hint(x, g, h, lam, gamma, left, best_default, best_left):
    """Which known mistake's candidate set the learner's split is the best of (and the full set's best is not in)."""
    missing = np.isnan(x)
    if missing.any():
        only_right = best_of(candidates(x, g, h, lam, gamma, default_directions=(False,)))
        if best_default and only_right is not None and np.array_equal(only_right[3], left):
            return ("Your split is the best of those that send the missing rows right: try both default directions (missing"
                    " rows left and right) at every threshold and keep the better.")
        interior = best_of(candidates(x, g, h, lam, gamma, missing_alone=False))
        present_best = best_left[~missing]
        if (present_best.all() or not present_best.any()) and interior is not None and np.array_equal(interior[3], left):
            return ("Your split is the best of the thresholds between present values; the candidates also include the split that"
                    " puts every present row on one side and the missing rows alone on the other (missingness itself is the signal here).")
    return ""


def judge_no_split(got, x, scenario):
    threshold, default_left, gain = got
    missing = np.isnan(x)
    reason = "every row is missing" if missing.all() else "one distinct value and no missing row" if not missing.any() else "no split leaves rows on both sides"
    try:
        ok = threshold is None and as_flag(default_left) is False and float(np.asarray(gain)) == -np.inf
    except (TypeError, ValueError):
        ok = False
    if not ok:
        shown = ", ".join(str(v) if not isinstance(v, float) else f"{v:g}" for v in got)
        fail(f"best_split ({scenario}): no split exists ({reason}), so expected (None, False, -inf), got ({shown}).",
             what="best_split's result", expected="(None, False, -inf)", got=shown[:80])


# -- inputs ------------------------------------------------------------------------------------------
def case(x, g, h, lam=1.0, gamma=0.0, what=""):
    """A case (x, g, h, lam, gamma, what) with float64 arrays."""
    return np.array(x, dtype=np.float64), np.array(g, dtype=np.float64), np.array(h, dtype=np.float64), lam, gamma, what


def logistic_case(seed, n, missing_rate, decimals=1):
    """x with ties (rounded) and NaN, gradients of the logistic loss at a base score: g = p - y, h = p (1 - p)."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.standard_normal(n), decimals)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * x))).astype(np.float64)
    p = rng.uniform(0.3, 0.7, n)
    missing = rng.random(n) < missing_rate
    y[missing] = rng.random(missing.sum()) < 0.8  # missingness carries the label
    x[missing] = np.nan
    return x, p - y, p * (1 - p)


def small_case(n):
    """Hypothesis cases (x, g, h, lam, gamma) of n rows, x from {0, 1, 2, 3, NaN} (ties and missing), dyadic g and h."""
    from hypothesis import strategies as st

    x, g, h = (lists_of(st.sampled_from(values), n) for values in ([0.0, 1.0, 2.0, 3.0, NAN], [1.0, -1.0, 0.5, -0.5, 2.0, -2.0], [1.0, 0.5, 0.25]))
    return st.tuples(x, g, h, st.sampled_from([1.0, 0.0, 3.0]), st.sampled_from([0.0, 0.5])).map(lambda drawn: case(*drawn)[:5])  # without the text


# -- the cases: (x, g, h, lam, gamma, what) per check, and all of them for the inputs-unchanged check ------------
HAND_BUILT = [case([1, 2, 3, 4], [-1, -1, 1, 1], [1, 1, 1, 1]), case([1, 2, NAN, 3, 4], [-1, -0.5, 1, 1, 0.5], [1, 1, 1, 1, 1]),
              case([3, NAN, 1, 2, NAN, 4, 2], [1, -2, -1, 0.5, -1.5, 2, -0.5], [1, 0.5, 1, 0.5, 1, 0.25, 1])]
# Logistic gradients at p = 0.5: g = 0.5 - y. Low x are label 0, high x label 1; the missing rows are labelled like the high x, or the low.
G_HIGH_MISSING, G_LOW_MISSING = [0.5, 0.5, 0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5], [0.5, 0.5, 0.5, -0.5, -0.5, -0.5, 0.5, 0.5, 0.5]
MISSING_DIRECTION = [case([1, 2, 3, 4, 5, 6, NAN, NAN, NAN], G_HIGH_MISSING, [0.25] * 9, what=", missing rows labelled like the high x: they belong right"),
                     case([1, 2, 3, 4, 5, 6, NAN, NAN, NAN], G_LOW_MISSING, [0.25] * 9, what=", missing rows labelled like the low x: they belong left"),
                     case([6, 5, 4, 3, 2, 1, NAN, NAN, NAN], G_HIGH_MISSING, [0.25] * 9, what=", high x labelled 0, missing rows labelled 1: they belong left")]
MISSING_ALONE = [case([5, 5, 5, NAN, NAN], [0.5, 0.5, 0.5, -0.5, -0.5], [0.25] * 5, what=", one distinct present value: the only split is present against missing"),
                 case([1, 2, 3, 4, NAN, NAN, NAN], [0.5, -0.5, 0.5, -0.5, -1, -1, -1], [0.25] * 7, what=", no signal in x, all of it in missingness"),
                 case([NAN, 1, NAN, 2, 3, NAN], [2, -0.5, 2, -0.5, -0.5, 2], [1] * 6, lam=0.0, what=", lam = 0, no signal in x")]
NO_MISSING = [case([3, 1, 2, 5, 4], [1, -1, -1, 2, 1], [1, 1, 1, 1, 1]), case([0.5, 0.25, 0.75, 1], [-2, -1, 1, 0.5], [0.5, 0.5, 1, 1], lam=2.0, gamma=0.25),
              (*logistic_case(21, 300, 0.0, decimals=2), 1.0, 0.0, "")]
NO_SPLIT = [case(x, [1.0, -1.0, 0.5][:len(x)] if len(x) > 1 else [1.0], [1.0] * len(x)) for x in ([NAN], [NAN, NAN, NAN], [2.0], [2.0, 2.0, 2.0])]
GAIN_FORMULA = [case([1, 2, 3, NAN, 4, 5], [-1, -1.5, 0.5, -2, 1, 1.5], [1, 0.5, 1, 1, 0.5, 1], lam, gamma)
                for lam, gamma in ((1.0, 0.0), (0.0, 0.0), (4.0, 0.0), (1.0, 0.75), (0.5, 0.25))]
NEGATIVE_GAIN = [case([1, 2, 3, NAN], [-1, 0.5, 1, -0.5], [1, 1, 1, 1], gamma=10.0),
                 case([1, 1, 2, 2], [1, -1, 1, -1], [1, 1, 1, 1], what=", x carries no signal: the best gain is 0 - gamma = 0")]
TIED = [case([1, 1, 1, 2, 2, 2], [-1, -1, 1, -1, 1, 1], [1] * 6), case([2, 1, 2, NAN, 1, 3, 2, 3], [1, -1, -1, 0.5, -1, 2, 1, -0.5], [1] * 8)]
RANDOM = [(*logistic_case(seed, n, rate), lam, gamma, "") for seed, n, rate, lam, gamma in ((31, 30, 0.2, 1.0, 0.0), (32, 200, 0.1, 0.0, 0.0),
                                                                                         (33, 200, 0.5, 5.0, 0.3), (34, 2000, 0.3, 1.0, 0.1))]


# -- checks -----------------------------------------------------------------------------------------
hand_built = check_each("hand-built: the best of every threshold and both default directions", HAND_BUILT, judge_split)
missing_direction = check_each("missing rows that carry the label go to the matching side (left and right)", MISSING_DIRECTION, judge_split)
missing_alone = check_each("present values all on one side, missing rows alone on the other", MISSING_ALONE, judge_split)
no_missing = check_each("no missing values: any default direction is accepted", NO_MISSING, judge_split)
no_split = check_each(
    "no split exists: every row missing, or one distinct value and no missing row -> (None, False, -inf)", NO_SPLIT, judge_split,
    edge="No split exists when no partition leaves rows on both sides: every row missing, or no missing row and one distinct value (n = 1 included)."
         " ... With no split, return exactly `(None, False, -inf)`.")
gain_formula = check_each("the gain formula: lam in every term, 0.5 * [...] - gamma", GAIN_FORMULA, judge_split)
negative_gain = check_each(
    "the best split is returned when its gain is negative (large gamma)", NEGATIVE_GAIN, judge_split,
    edge="The best split is returned whatever the sign of its gain, negative included (gamma larger than any improvement): whether to split at all"
         " is the caller's decision.")
tied_values = check_each("rows with equal x go to the same side", TIED, judge_split)


@check("random logistic gradients with ties and missing values equal brute force")
def random_cases(sub, ctx):
    with shrink_on_failure(sub, lambda: sized((1, 8), then=small_case), lambda case: judge_split(sub, *case)):
        for args in RANDOM:
            judge_split(sub, *args)


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    own = [case([3, NAN, 1, 2, NAN, 4], [1, -2, -1, 0.5, -1.5, 2], [1, 0.5, 1, 0.5, 1, 0.25]), (*logistic_case(41, 100, 0.2), 1.0, 0.0, "")]
    # Then every check's inputs, the extreme ones included.
    for x, g, h, lam, gamma, what in [*own, *HAND_BUILT, *MISSING_DIRECTION, *MISSING_ALONE, *NO_MISSING, *NO_SPLIT, *GAIN_FORMULA, *NEGATIVE_GAIN, *TIED, *RANDOM]:
        inputs_unchanged(sub, "best_split", x, g, h, lam, gamma, scenario=describe(x, lam, gamma, what))
