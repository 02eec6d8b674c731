"""Checks for `auc-ranking`: ROC AUC by the pairwise definition (ties count half) and average precision as
scikit-learn defines it (a step sum over the distinct thresholds, tied scores entering together), in O(n log n).

Expected values are computed here from the definitions, never from the reference: the AUC by brute force
over every (positive, negative) pair when there are at most 10**6 pairs, and beyond that by counting with
a binary search over the sorted negatives (the same integers, 2 * wins + ties); the AP by a loop over the
distinct thresholds, highest first, counting the rows at or above each (exact fractions for up to 50 rows),
and beyond 2,000 rows by the equivalent mean over the positives of the precision at their own score.
Tolerance: float64's (rtol = atol = 1e-7), whatever the scores' dtype: both values are ratios of counts.

Hints follow the evidence: after a wrong value the judge recomputes what each known mistake gives on the
same input (1 - AUC, ties ordered by position, ties counted 0 or 1, interpolated precision, ties entering
one by one, recall over n, the trapezoid under the PR curve, scores negated in an unsigned dtype) and names
the one the learner's value matches, when exactly one does.

Speed, per function, on scores built in the sandbox from a seed and timed from the judge against the
reference in the same run: first the growth of the time per call from 1,000 rows (10 calls a run, so that
the round trip does not swamp them) to 300,000 rows for roc_auc, 100,000 for average_precision
(growth_check), at most 4x the reference's growth, which is what tells O(n log n) from O(n^2) whatever the
machine's load; then the catalogue's budget, 10**6 rows in at most 10x the reference's time (time_ratio).
The sizes keep a quadratic solution's cost bounded: it takes milliseconds at 1,000 rows, and its run at the
large size is stopped as soon as its growth passes the bound (2-4 s; on a very busy machine, at what the
check's time limit leaves, still as the same failure). Calibration on a loaded 2-core machine
(GROWTH_SIZES): the correct solutions' growths came to 0.15-2.0x the reference's (the slowest, a
pure-Python walk after sorted(), 1.4-2.0x); the quadratic ones' were stopped past 4x every time (left to
finish, 10-13x). A pure-Python walk over 10**6 distinct scores takes 8-14x the reference's roc_auc (0.33-0.83 s
against 0.04-0.06 s, quiet to loaded): the catalogue's 10x budget rejects it, and the prompt says so.
"""

import math
from fractions import Fraction

import numpy as np

from mlprep.grading import (Call, CheckFailed, as_float, check, fail, growth_check, inputs_unchanged, literal, out_of_memory_said, scenario, shrink_on_failure,
                            time_ratio)

MAX_TIME_RATIO = 10.0
SPEED_N, SPEED_SEED = 10**6, 11
# The growth's sizes, in rows. The large one is where a quadratic solution's time is far out of line while its cost stays
# bounded: the pairwise count spends its time at 1,000 rows on a Python loop over the positives, so it needs 300x the rows
# to show; recounting per threshold is costlier per row (its bound, max growth x 100x+ x its time at 1,000 rows, is what a
# failing grade costs), and shows at 100x.
GROWTH_SIZES = {"roc_auc": (1_000, 300_000), "average_precision": (1_000, 100_000)}
GROWTH_CALLS = 10  # calls per timed run at 1,000 rows: the round trip (~0.4 ms) would swamp one call (~0.1 ms)
MAX_GROWTH = 4.0  # the learner's growth over the reference's, measured in the same run
MISTAKE_RTOL = 1e-9
ONE_CLASS_EDGE = ("`roc_auc` raises `ValueError` when y has no positive or no negative (the AUC is 0 / 0 there); `average_precision`"
                  " raises `ValueError` when y has no positive, and returns 1.0 when y has no negative (every threshold then has precision 1).")
RTOL = ATOL = 1e-7  # float64's, for every input: both values are ratios of counts
EXACT_ROWS = 50  # up to this many rows, expected values are exact fractions (shown as such)


# ---------------------------------------------------------------------------------------------
# The definitions, judge side
# ---------------------------------------------------------------------------------------------
def positives(y):
    return np.asarray(y) == 1


def want_auc(y, score):
    """P(positive scores above negative) + P(tie) / 2 over all (positive, negative) pairs, as a Fraction."""
    pos, s = positives(y), np.asarray(score, dtype=np.float64)
    sp, sn = s[pos], s[~pos]
    if sp.size * sn.size <= 10**6:
        wins, ties = int((sp[:, None] > sn[None, :]).sum()), int((sp[:, None] == sn[None, :]).sum())
    else:
        neg = np.sort(sn)
        below, upto = np.searchsorted(neg, sp, side="left"), np.searchsorted(neg, sp, side="right")
        wins, ties = int(below.sum()), int((upto - below).sum())
    return Fraction(2 * wins + ties, 2 * sp.size * sn.size)


def want_ap(y, score):
    """sum over distinct thresholds t (highest first) of (R(t) - R(previous)) * P(t), every row scored >= t counted."""
    pos, s = positives(y), np.asarray(score, dtype=np.float64)
    n_pos = int(pos.sum())
    if s.size > 2000:  # the same sum grouped by positive: each gets the precision at its own score
        at_or_above = s.size - np.searchsorted(np.sort(s), s[pos], side="left")
        pos_at_or_above = n_pos - np.searchsorted(np.sort(s[pos]), s[pos], side="left")
        return math.fsum(pos_at_or_above / at_or_above) / n_pos
    exact = s.size <= EXACT_ROWS
    terms, seen = [], 0
    for t in np.unique(s)[::-1]:
        above = s >= t
        tp, k = int((pos & above).sum()), int(above.sum())
        terms.append(Fraction(tp - seen, n_pos) * Fraction(tp, k) if exact else (tp - seen) / n_pos * tp / k)
        seen = tp
    return sum(terms, Fraction(0)) if exact else math.fsum(terms)


def curve_one_by_one(y, score, reverse_ties=False):
    """(tp, fp) after each row, highest score first, ties in row order (or reversed): no distinct thresholds."""
    pos, s = positives(y), np.asarray(score, dtype=np.float64)
    idx = np.arange(s.size)
    order = np.lexsort((-idx if reverse_ties else idx, -s))
    tp = np.cumsum(pos[order])
    return tp, np.arange(1, s.size + 1) - tp


def ap_from_curve(tp, fp, n_pos, denominator=None, interpolate=False, trapezoid=False):
    precision = tp / (tp + fp)
    if interpolate:
        precision = np.maximum.accumulate(precision[::-1])[::-1]
    recall = tp / (denominator or n_pos)
    if trapezoid:
        r, p = np.r_[0.0, recall], np.r_[1.0, precision]
        return float(np.sum(np.diff(r) * (p[1:] + p[:-1]) / 2))
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))


def distinct_curve(y, score):
    """(tp, fp) at each distinct threshold, highest first, every row scored >= t counted (for the mistakes' values)."""
    pos, s = positives(y), np.asarray(score, dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    last = np.r_[np.flatnonzero(np.diff(s[order])), s.size - 1]
    tp = np.cumsum(pos[order])[last]
    return tp, last + 1 - tp


def unsigned_negated(score):
    """What a descending sort by -score sees for unsigned integer scores (-3 is 253 in uint8), as floats to rank by."""
    score = np.asarray(score)
    return -(-score).astype(np.float64) if score.dtype.kind == "u" else None


def auc_mistakes(y, score):
    """{what the code does wrong: the AUC it then gives}."""
    pos, s = positives(y), np.asarray(score, dtype=np.float64)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    sp, sn = s[pos], s[~pos]
    wins = int(sum(np.count_nonzero(sn < v) for v in sp)) if s.size <= 2000 else None
    ties = int(sum(np.count_nonzero(sn == v) for v in sp)) if s.size <= 2000 else None
    found = {"this is 1 - AUC: the pairs where the negative scores higher were counted (a low score taken as positive, or an ascending"
             " sort read as descending)": 1 - float(want_auc(y, score))}
    for reverse in (False, True):
        tp, fp = curve_one_by_one(y, score, reverse)
        # Ordinal ranking: each negative passed adds the positives already seen (one by one, no halves).
        auc = float(np.sum(np.diff(np.r_[0, fp]) * tp) / (n_pos * n_neg))
        found[f"tied scores were ranked by their position ({'later' if reverse else 'earlier'} rows first) instead of sharing their"
              " mean rank: a tied (positive, negative) pair must count 1/2"] = auc
    if wins is not None:
        found["a tied (positive, negative) pair counted 0: ties count 1/2"] = wins / (n_pos * n_neg)
        found["a tied (positive, negative) pair counted 1: ties count 1/2"] = (wins + ties) / (n_pos * n_neg)
    flipped = unsigned_negated(score)
    if flipped is not None:
        found[UNSIGNED] = float(want_auc(y, flipped))
    return found


def ap_mistakes(y, score):
    """{what the code does wrong: the AP it then gives}."""
    pos = positives(y)
    n_pos = int(pos.sum())
    tp, fp = distinct_curve(y, score)
    found = {
        "the precision was interpolated (each threshold took the best precision at its recall or beyond): AP is the plain step sum":
            ap_from_curve(tp, fp, n_pos, interpolate=True),
        "the recall was divided by n, all the rows, instead of by the number of positives": ap_from_curve(tp, fp, n_pos, denominator=pos.size),
        "this is the trapezoidal area under the precision-recall curve; AP is the step sum sum((R_k - R_k-1) * P_k), no interpolation":
            ap_from_curve(tp, fp, n_pos, trapezoid=True),
    }
    for reverse in (False, True):
        found[f"tied scores entered one at a time ({'later' if reverse else 'earlier'} rows first) instead of together: rows with the same"
              " score share one threshold, and so one precision"] = ap_from_curve(*curve_one_by_one(y, score, reverse), n_pos)
    if np.asarray(y).dtype.kind in "iu":
        found[("this is -AP: ~ on integer labels is bitwise not (~0 is -1, ~1 is -2), not logical not, so counting the negatives with it"
               " makes every precision negative; build a boolean mask first (y == 1)")] = -float(want_ap(y, score))
    flipped = unsigned_negated(score)
    if flipped is not None:
        found[UNSIGNED] = float(want_ap(y, flipped))
    return found


UNSIGNED = ("these unsigned integer scores were negated in their own dtype (-score wraps around: -3 is 253 in uint8), which scrambles"
            " a descending sort; convert to float first, or sort ascending and reverse")
MISTAKES = {"roc_auc": auc_mistakes, "average_precision": ap_mistakes}
WANT = {"roc_auc": want_auc, "average_precision": want_ap}


def likely_cause(fn, value, y, score):
    """The known mistakes (one or two) whose value the learner's matches, where the right value differs; or ""."""
    want = float(WANT[fn](y, score))
    matches = [text for text, v in MISTAKES[fn](y, score).items()
               if not math.isclose(v, want, rel_tol=1e-6, abs_tol=1e-9) and math.isclose(value, v, rel_tol=MISTAKE_RTOL, abs_tol=1e-12)]
    if len(matches) == 1:
        return f"Your value matches a known mistake: {matches[0]}."
    if len(matches) == 2:
        return f"Your value matches two known mistakes here: {matches[0]}; or {matches[1]}."
    return ""


# ---------------------------------------------------------------------------------------------
# Judging one call
# ---------------------------------------------------------------------------------------------
def describe(y, score):
    y, score = np.asarray(y), np.asarray(score)
    n_pos, distinct = int(positives(y).sum()), np.unique(score).size
    values = "all distinct" if distinct == score.size else f"{distinct} distinct value{'s' if distinct > 1 else ''}"
    return f"{y.size} rows, {n_pos} positive; {y.dtype.name} labels; {score.dtype.name} scores, {values}"


def shown(value):
    """An expected value as a fraction and a decimal (7/12 = 0.5833333333), or the decimal alone."""
    text = f"{float(value):.10g}"
    if isinstance(value, Fraction) and 1 < value.denominator <= 1000:
        return f"{value.numerator}/{value.denominator} = {text}"
    return text


def judge(sub, fn, y, score, scenario=""):
    """The learner's fn(y, score) is the definition's value within float64's tolerance."""
    got = sub.call(fn, y, score)
    what = f"{fn}(y, score)"
    where = describe(y, score) + (f"; {scenario}" if scenario else "")
    value = as_float(got, what=what, scenario=where)
    want = WANT[fn](y, score)
    if abs(value - float(want)) <= RTOL * abs(float(want)) + ATOL:  # NaN fails here
        return
    fail(f"{what} ({where}): expected {shown(want)}, got {value!r}; allowed |got - expected| <= {ATOL:g} + {RTOL:g} * |expected|.",
         explain=(lambda: likely_cause(fn, value, y, score)) if math.isfinite(value) else None,
         what=what, scenario=where, first_index="(scalar)", expected=f"{float(want)!r}", got=f"{value!r}", rtol=RTOL, atol=ATOL)


@scenario(repro=lambda interface, fn, y, score: Call.code(f"{fn}({literal(y)}, {literal(score)})  # expected: ValueError"))
def outcome_of(module, fn, y, score):
    """Scenario: {"raised": "ValueError" (or a subclass's), another exception's name, or None; "message" or "result"}."""
    try:
        result = getattr(module, fn)(y, score)
    except ValueError as exc:
        return {"raised": "ValueError", "message": str(exc)[:200]}
    except Exception as exc:  # named for the judge, so the message can say what was raised instead
        return {"raised": type(exc).__name__, "message": str(exc)[:200]}
    return {"raised": None, "result": result}


def expect_value_error(sub, fn, y, score, why):
    outcome = sub.run(outcome_of, fn, y, score)
    raised = outcome.get("raised") if isinstance(outcome, dict) else None
    if raised == "ValueError":
        return
    if raised:
        fail(f"{fn}(y, score) with y = {np.asarray(y).tolist()} ({why}): expected ValueError, but it raised {raised}: {outcome.get('message')}",
             raised=raised)
    got = outcome.get("result") if isinstance(outcome, dict) else outcome
    nan = " (0 / 0: check the class counts before dividing)" if isinstance(got, (float, np.floating)) and math.isnan(got) else ""
    fail(f"{fn}(y, score) with y = {np.asarray(y).tolist()} ({why}): expected ValueError, but it returned {got!r}{nan}; raise"
         " ValueError with a message saying which class is missing", got=repr(got)[:100])


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------
def random_case(rng, n, pos_rate=0.3, decimals=None, need_negative=True):
    """(y, score): int64 labels with at least one positive (and one negative), scores N(0, 1) + y, rounded when asked (ties)."""
    y = (rng.random(n) < pos_rate).astype(np.int64)
    y[rng.integers(n)] = 1
    if need_negative and y.all():
        y[0] = 0
    score = rng.standard_normal(n) + y
    return y, (np.round(score, decimals) + 0.0 if decimals is not None else score)  # + 0.0: no -0.0 in the failing input


def small_cases(need_negative):
    """Hypothesis cases (y, score): 1-8 rows of 0/1 labels (both classes, or at least one positive), scores in quarters 0-1 (ties)."""
    from hypothesis import strategies as st

    def valid(case):
        n_pos = int(np.sum(case[0]))
        return n_pos > 0 and (n_pos < len(case[0]) or not need_negative)

    return (st.integers(1 + need_negative, 8)
            .flatmap(lambda n: st.tuples(st.lists(st.integers(0, 1), min_size=n, max_size=n), st.lists(st.integers(0, 4), min_size=n, max_size=n)))
            .map(lambda c: (np.array(c[0][::-1]), np.array(c[1]) / 4)).filter(valid))


RANDOM_SIZES = ((10, 0, 0.4), (100, 1, 0.3), (1000, None, 0.5), (10**4, 2, 0.3), (10**4, None, 0.01))  # (rows, decimals: ties, positive rate)


def shrinking(sub, fn):
    return shrink_on_failure(sub, lambda: small_cases(fn == "roc_auc"), lambda case: judge(sub, fn, *case))


# ---------------------------------------------------------------------------------------------
# Checks: roc_auc
# ---------------------------------------------------------------------------------------------
@check("roc_auc: hand-built rankings without ties", uses=("roc_auc",))
def auc_hand_built(sub, ctx):
    judge(sub, "roc_auc", np.array([0, 1]), np.array([0.25, 0.75]))
    judge(sub, "roc_auc", np.array([1, 0]), np.array([0.25, 0.75]))
    judge(sub, "roc_auc", np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8]))
    judge(sub, "roc_auc", np.array([1, 0, 1, 0, 0, 1]), np.array([0.9, 0.8, 0.7, 0.6, 0.55, 0.2]))


@check("roc_auc: a tied (positive, negative) pair counts 1/2, in any row order", uses=("roc_auc",))
def auc_ties(sub, ctx):
    judge(sub, "roc_auc", np.array([0, 1]), np.array([0.5, 0.5]))
    judge(sub, "roc_auc", np.array([1, 0]), np.array([0.5, 0.5]))
    judge(sub, "roc_auc", np.array([1, 1, 0]), np.array([0.5, 0.5, 0.25]), "ties between positives only")
    y, score = np.array([0, 1, 0, 1, 1, 0]), np.array([0.5, 0.5, 0.25, 0.75, 0.5, 0.75])
    judge(sub, "roc_auc", y, score)
    judge(sub, "roc_auc", y[::-1].copy(), score[::-1].copy(), "the same rows in reverse order")


@check("roc_auc: equals the pairwise definition on random cases (up to 10**4 rows)", uses=("roc_auc",))
def auc_random(sub, ctx):
    rng = ctx.rng(1)
    with shrinking(sub, "roc_auc"):
        for n, decimals, rate in RANDOM_SIZES:
            judge(sub, "roc_auc", *random_case(rng, n, rate, decimals))


@check("roc_auc: y with one class raises ValueError", uses=("roc_auc",), edge=ONE_CLASS_EDGE)
def auc_one_class(sub, ctx):
    score = np.array([0.25, 0.5, 0.75])
    expect_value_error(sub, "roc_auc", np.array([0, 0, 0]), score, "no positive")
    expect_value_error(sub, "roc_auc", np.array([1, 1, 1]), score, "no negative")
    expect_value_error(sub, "roc_auc", np.array([True, True, True]), score, "bool labels, no negative")
    expect_value_error(sub, "roc_auc", np.array([0.0, 0.0, 0.0]), score, "float labels, no positive")
    expect_value_error(sub, "roc_auc", np.array([1]), np.array([0.5]), "one row")


# ---------------------------------------------------------------------------------------------
# Checks: average_precision
# ---------------------------------------------------------------------------------------------
@check("average_precision: hand-built rankings without ties", uses=("average_precision",))
def ap_hand_built(sub, ctx):
    judge(sub, "average_precision", np.array([1, 0]), np.array([0.75, 0.25]))
    judge(sub, "average_precision", np.array([0, 1]), np.array([0.75, 0.25]))
    judge(sub, "average_precision", np.array([0, 1, 1]), np.array([0.9, 0.5, 0.1]), "precision 0, 1/2, 2/3 down the ranking")
    judge(sub, "average_precision", np.array([1, 0, 1, 0, 0, 1]), np.array([0.9, 0.8, 0.7, 0.6, 0.55, 0.2]))


@check("average_precision: tied scores enter together, in any row order", uses=("average_precision",))
def ap_ties(sub, ctx):
    judge(sub, "average_precision", np.array([1, 0]), np.array([0.5, 0.5]))
    judge(sub, "average_precision", np.array([0, 1]), np.array([0.5, 0.5]))
    y, score = np.array([1, 1, 0, 0, 1, 0]), np.array([0.5, 0.75, 0.75, 0.25, 0.5, 0.5])
    judge(sub, "average_precision", y, score)
    judge(sub, "average_precision", y[::-1].copy(), score[::-1].copy(), "the same rows in reverse order")


@check("average_precision: equals the step-sum definition on random cases (up to 10**4 rows)", uses=("average_precision",))
def ap_random(sub, ctx):
    rng = ctx.rng(2)
    with shrinking(sub, "average_precision"):
        for n, decimals, rate in RANDOM_SIZES:
            judge(sub, "average_precision", *random_case(rng, n, rate, decimals))


@check("average_precision: no negative gives 1.0; no positive raises ValueError", uses=("average_precision",), edge=ONE_CLASS_EDGE)
def ap_one_class(sub, ctx):
    judge(sub, "average_precision", np.array([1, 1, 1]), np.array([0.25, 0.5, 0.75]), "no negative: every precision is 1")
    judge(sub, "average_precision", np.array([True, True]), np.array([0.5, 0.5]), "no negative, tied")
    score = np.array([0.25, 0.5, 0.75])
    expect_value_error(sub, "average_precision", np.array([0, 0, 0]), score, "no positive")
    expect_value_error(sub, "average_precision", np.array([False, False, False]), score, "bool labels, no positive")


# ---------------------------------------------------------------------------------------------
# Checks: both
# ---------------------------------------------------------------------------------------------
@check("int, float and bool labels give the same values")
def label_kinds(sub, ctx):
    y, score = np.array([1, 0, 1, 1, 0, 0, 1]), np.array([0.8, 0.3, 0.3, 0.6, 0.9, 0.1, 0.45])
    for labels in (y.astype(np.int32), y.astype(np.float64), y.astype(bool)):
        for fn in ("roc_auc", "average_precision"):
            judge(sub, fn, labels, score)


@check("float32, integer and unsigned integer scores")
def score_kinds(sub, ctx):
    y = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    for score in (np.array([0.8, 0.3, 0.3, 0.6, 0.9, 0.1, 0.45, 0.6], dtype=np.float32), np.array([8, 3, 3, 6, 9, 1, 4, 6]),
                  np.array([200, 3, 3, 6, 0, 1, 4, 6], dtype=np.uint8)):
        for fn in ("roc_auc", "average_precision"):
            judge(sub, fn, y, score)


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    y, score = np.array([0, 1, 1, 0, 1]), np.array([0.3, 0.9, 0.1, 0.6, 0.6])
    for fn in ("roc_auc", "average_precision"):
        inputs_unchanged(sub, fn, y, score, scenario=f"{fn}(y, score) on unsorted scores (sorting them in place would change them)")
    # The other checks' inputs, extreme ones included (bool, float and int32 labels, float32, integer and uint8 scores, ties,
    # 10**4 rows, 1% positive, no negative), small ones first.
    y, score = np.array([1, 0, 1, 1, 0, 0, 1]), np.array([0.8, 0.3, 0.3, 0.6, 0.9, 0.1, 0.45])
    cases = [(labels, score) for labels in (y.astype(np.int32), y.astype(np.float64), y.astype(bool))]
    y = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    cases += [(y, np.array([0.8, 0.3, 0.3, 0.6, 0.9, 0.1, 0.45, 0.6], dtype=np.float32)), (y, np.array([8, 3, 3, 6, 9, 1, 4, 6])),
              (y, np.array([200, 3, 3, 6, 0, 1, 4, 6], dtype=np.uint8))]
    for seed in (1, 2):  # the two random checks' generators
        rng = ctx.rng(seed)
        cases += [random_case(rng, n, rate, decimals) for n, decimals, rate in RANDOM_SIZES]
    for y, score in cases:
        for fn in ("roc_auc", "average_precision"):
            inputs_unchanged(sub, fn, y, score, scenario=f"{fn}(y, score), {describe(y, score)}")
    inputs_unchanged(sub, "average_precision", np.array([True, True]), np.array([0.5, 0.5]), scenario="average_precision(y, score), no negative, tied")


def _timed_repro(interface, fn, seed, n, calls=1):
    return Call.code(f"import time\n{speed_code(seed, n)}\nstart = time.perf_counter(); {fn}(y, score)\n"
                     f"time.perf_counter() - start  # seconds: at most {MAX_TIME_RATIO:g}x the reference's time on this input")


def speed_code(seed, n):
    return f"rng = np.random.default_rng({seed})\ny = (rng.random({n}) < 0.3).astype(np.int64)\nscore = rng.standard_normal({n}) + y"


@scenario(repro=_timed_repro)
def timed_call(module, fn, seed, n, calls=1):
    """Scenario: fn on n labels and scores built here from a seed (cheaper than sending 16 MB through the pipe), `calls`
    times on fresh ones (a run at 1,000 rows is then not mostly the round trip); returns the last value."""
    rng = np.random.default_rng(seed)
    for _ in range(calls):
        y = (rng.random(n) < 0.3).astype(np.int64)
        score = rng.standard_normal(n) + y
        value = getattr(module, fn)(y, score)
    return value


def _growth_repro(fn):
    small, large = GROWTH_SIZES[fn]
    return Call.code(f"import time\ndef seconds(n):\n    {speed_code(SPEED_SEED, 'n').replace(chr(10), chr(10) + '    ')}\n"
                     f"    start = time.perf_counter(); {fn}(y, score)\n    return time.perf_counter() - start\n"
                     f"seconds({large}) / seconds({small})  # your time's growth: at most {MAX_GROWTH:g}x the reference's on the same machine")


def growth(sub, ctx, fn, hint):
    """growth_check: the learner's time per call from GROWTH_SIZES[fn][0] to [1] rows, against the reference's growth."""
    small, large = GROWTH_SIZES[fn]
    growth_check(sub, ctx, timed_call, (fn, SPEED_SEED, small, GROWTH_CALLS), (fn, SPEED_SEED, large), sizes=(small, large),
                 size_format="{:,} rows", calls=(GROWTH_CALLS, 1), max_growth=MAX_GROWTH, hint=hint, failing_input=_growth_repro(fn),
                 what=f"growth of the time of {fn}(y, score) from {small:,} to {large:,} rows (30% positive)")


def speed(sub, ctx, fn, hint):
    """The growth first (what tells n log n from n^2), then time_ratio against the reference at 10**6 rows. The verdicts are
    recorded as what/got without the timings (which vary from run to run), so that the diagnosis compares runs by what
    failed; running out of memory on this input is the same verdict."""
    growth(sub, ctx, fn, hint)
    # The growth passed: the cost is O(n log n), so what is left is the cost per row, not the algorithm.
    per_row = (f"Your {fn}'s time grows as the reference's does (its growth, measured first, passed), so the algorithm is right; each row costs more: a"
            " Python loop over 10**6 rows (or a Python object per row) takes about 10x one vectorised pass. Sort once, then take"
            " cumulative sums and read them at the last row of each run of tied scores.")
    what = f"speed, {fn}(y, score) on {SPEED_N:,} distinct float64 scores, 30% positive"
    verdict = {"what": what, "got": "not O(n log n)", "first_index": ""}
    pairs = 0.3 * 0.7 * SPEED_N**2
    try:
        with out_of_memory_said(lambda said: f"{what}: {said}. For scale: all (positive, negative) pairs of this input are {pairs:.2g} comparisons,"
                                f" {pairs / 2**30:.0f} GiB as a bool matrix, while the scores themselves are {8 * SPEED_N / 2**20:.1f} MiB. {hint}", fails=verdict):
            learner_s, reference_s, ratio = time_ratio(sub, ctx, timed_call, fn, SPEED_SEED, SPEED_N, repeats=1, max_ratio=MAX_TIME_RATIO,
                                                       what=what, hint=per_row)
    except CheckFailed as failure:  # stopped at the cut-off
        failure.details.update(verdict)
        raise
    if ratio > MAX_TIME_RATIO:
        fail(f"{what}: your {fn} took {learner_s:.2f} s, {ratio:.1f}x the reference's {reference_s:.2f} s measured in the same run"
             f" (allowed: {MAX_TIME_RATIO:g}x). {per_row}", learner_s=learner_s, reference_s=reference_s, ratio=ratio, **verdict)


@check("speed: roc_auc's time grows from 10**3 to 3 * 10**5 scores at most 4x as much as the reference's, and 10**6 scores take at most"
       " 10x the reference's time", uses=("roc_auc",))
def auc_speed(sub, ctx):
    speed(sub, ctx, "roc_auc", "One sort is enough: with mid-ranks (tied scores sharing their mean rank), the AUC is (sum of the positives'"
          " ranks - n_pos (n_pos + 1) / 2) / (n_pos n_neg); comparing every positive with every negative is O(n_pos n_neg).")


@check("speed: average_precision's time grows from 10**3 to 10**5 scores at most 4x as much as the reference's, and 10**6 scores take at"
       " most 10x the reference's time", uses=("average_precision",))
def ap_speed(sub, ctx):
    speed(sub, ctx, "average_precision", "Sort once (descending), take cumulative sums of the positives and negatives, and read them at the"
          " last row of each run of equal scores; recounting the rows above every threshold is O(n) per threshold.")
