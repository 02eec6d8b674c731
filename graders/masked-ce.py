"""Checks for `masked_ce`: label-smoothed, temperature-scaled cross-entropy over the rows a mask counts.

Expected values come from torch's F.cross_entropy(logits[c] / T, y[c], label_smoothing=eps) over the counted
rows c, in float64 on the values the learner got (float32 logits are promoted exactly), and 0.0 when no row counts.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
from mlprep.grading import (as_float, assert_close, assert_keeps_precision, check, explained, grid, inputs_unchanged, lists_of, log_softmax, matrix,
                            mistake_hint, shifted_logits_hint, shrink_on_failure)


# -- expected values and known mistakes (judge side) -----------------------------------------------
def expected(logits, y, mask, eps, T):
    """F.cross_entropy over the counted rows, float64; 0.0 when no row counts."""
    counted = np.asarray(mask) != 0
    if not counted.any():
        return 0.0
    z = torch.from_numpy(np.asarray(logits, dtype=np.float64)[counted]) / T
    return float(F.cross_entropy(z, torch.from_numpy(np.asarray(y, dtype=np.int64)[counted]), label_smoothing=eps))


def mistakes(logits, y, mask, eps, T):
    """{what the code does wrong: the loss it then gives} for the known mistakes, in float64."""
    z = np.asarray(logits, dtype=np.float64)
    mask = np.asarray(mask)
    counted = mask != 0
    N, V = z.shape
    rows, safe_y = np.arange(N), np.where(counted, y, 0)
    n = max(int(counted.sum()), 1)

    def per_row(logp, smoothing="mean"):
        nll = -logp[rows, safe_y]
        uniform = {"mean": -logp.mean(axis=1), "sum": -logp.sum(axis=1), "V-1": (-logp.sum(axis=1) - nll) / max(V - 1, 1), "none": 0.0}
        return (1 - eps) * nll + eps * uniform[smoothing]

    logp = log_softmax(z / T, axis=1)
    true = per_row(logp)
    found = {
        "the sum is divided by all N rows, masked ones included; divide by the number of counted rows":
            true[counted].sum() / N,
        "the smoothing term is the sum of -log p over the V classes; it is their mean (eps / V on each class)":
            per_row(logp, "sum")[counted].sum() / n,
        "eps is spread over the V - 1 wrong classes; F.cross_entropy spreads eps / V over all V classes, the true one included":
            per_row(logp, "V-1")[counted].sum() / n,
        "the target is (1 - eps) * one_hot with the uniform part eps / V left out":
            per_row(logp, "none")[counted].sum() / n,
        "eps is ignored (no smoothing)":
            -logp[rows, safe_y][counted].sum() / n,
        "the logits are multiplied by T; they are divided by it":
            per_row(log_softmax(z * T, axis=1))[counted].sum() / n,
        "T divides the log-probabilities; it divides the logits, before the softmax":
            per_row(log_softmax(z, axis=1) / T)[counted].sum() / n,
        "the smoothing term is averaged over all rows, masked ones included":
            (1 - eps) * -logp[rows, safe_y][counted].sum() / n + eps * -logp.mean(axis=1).mean(),
    }
    if ((0 <= np.asarray(y)) & (np.asarray(y) < V)).all():
        every_row = (1 - eps) * -logp[rows, np.asarray(y)] + eps * -logp.mean(axis=1)
        found["every row's loss is averaged, masked rows included; only rows with mask != 0 count"] = every_row.mean()
    return found


def likely_cause(value, logits, y, mask, eps, T, rel_tol):
    """The known mistake whose loss the learner's value matches (and the true loss does not), or ""."""
    return mistake_hint(value, mistakes(logits, y, mask, eps, T), want=expected(logits, y, mask, eps, T), rtol=rel_tol, atol=1e-12,
                        apart=(10 * rel_tol, 1e-12), say="Your result matches a loss where {}.", two="Your result matches a loss where {}, and also one where {}.")


# -- judging one call ------------------------------------------------------------------------------
def describe(logits, y, mask, eps, T):
    logits, mask = np.asarray(logits), np.asarray(mask)
    n = int(np.count_nonzero(mask))
    return (f"{logits.dtype.name} logits of shape {logits.shape}, {mask.dtype.name} mask counting {n} of {len(mask)} rows,"
            f" eps={eps:g}, T={T:g}")


def judge(sub, got, logits, y, mask, eps, T, scenario=None, hint=""):
    """The learner's result for this input is F.cross_entropy's value at the logits' dtype tolerance."""
    scenario = scenario or describe(logits, y, mask, eps, T)
    dtype = np.asarray(logits).dtype.name
    value = as_float(got, what="masked_ce's result", scenario=scenario)
    assert_keeps_precision(got, dtype, what="masked_ce's result", scenario=scenario)
    rel_tol = 1e-9 if dtype == "float64" else 1e-5
    with explained(lambda: likely_cause(value, logits, y, mask, eps, T, rel_tol) if math.isfinite(value) else
                   shifted_logits_hint(sub, "masked_ce", logits, y, mask, eps=eps, T=T)):
        assert_close(value, expected(logits, y, mask, eps, T), what="masked_ce's result", scenario=scenario, dtype=dtype, hint=hint)


def call_and_judge(sub, logits, y, mask, eps=0.1, T=1.0, hint=""):
    got = sub.call("masked_ce", logits, y, mask, eps=eps, T=T)
    judge(sub, got, logits, y, mask, eps, T, hint=hint)


def random_case(rng, N, V, *, scale=2.0, dtype="float64", counted=0.7, ignore_label=None):
    """(logits, y, mask): N(0, scale) logits, labels in range, an int 0/1 mask counting about `counted` of
    the rows (at least one); masked rows get `ignore_label` when given."""
    logits = np.round(scale * rng.standard_normal((N, V)), 2).astype(dtype)  # short numbers: the failing input reads well
    y = rng.integers(0, V, N)
    mask = (rng.random(N) < counted).astype(np.int64)
    mask[rng.integers(N)] = 1
    if ignore_label is not None:
        y = np.where(mask != 0, y, ignore_label)
    return logits, y, mask


# -- shrinking: small cases of short numbers -------------------------------------------------------
MASK_KINDS = {"binary": [("int64", (0, 1))], "all": [("int64", (0, 1)), ("bool", (0, 1)), ("float64", (0.0, 1.0))]}


def small_cases(eps_values=(0.1,), T_values=(1.0,), masks="binary", ignore_labels=(None,), dtype="float64"):
    """Hypothesis cases (logits, y, mask, eps, T): N 1-4, V 2-4, logits -4 to 4 in halves, labels in range
    (masked rows may get an ignore label), at least one row counted; shrinks toward the first choices."""
    from hypothesis import strategies as st

    @st.composite
    def case(draw):
        N, V = draw(st.integers(1, 4)), draw(st.integers(2, 4))
        logits = draw(matrix(N, V, grid(-8, 8, 2), dtype))
        mask_dtype, values = draw(st.sampled_from(MASK_KINDS[masks]))
        mask = np.array(draw(lists_of(st.sampled_from(values[::-1]), N)), dtype=mask_dtype)
        if not mask.any():
            mask[0] = 1
        y = np.array(draw(lists_of(st.integers(0, V - 1), N)), dtype=np.int64)
        ignore = draw(st.sampled_from(ignore_labels))
        if ignore is not None:
            y = np.where(mask != 0, y, V if ignore == "V" else ignore)
        return logits, y, mask, draw(st.sampled_from(eps_values)), draw(st.sampled_from(T_values))

    return case()


def shrinking(sub, **strategy):
    return shrink_on_failure(sub, lambda: small_cases(**strategy), lambda case: call_and_judge(sub, *case))


# -- the checks' inputs, small to large: (logits, y, mask, eps, T) (inputs_left_unchanged sends every one again) ---
HAND_BUILT = [(np.array([[0.0, 0.0, 0.0], [2.0, 0.0, -2.0]]), np.array([1, 0]), np.array([1, 1]), eps, 1.0) for eps in (0.0, 0.1)]
DEFAULTS = (np.array([[0.0, 0.0, 0.0], [2.0, 0.0, -2.0]]), np.array([2, 2]), np.array([1, 1]))  # called without eps and T
MASK_KINDS_BATCH = (np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-2.0, 0.5, 1.0], [1.0, 1.0, -3.0]]), np.array([0, -100, 2, 1]))
MASKS = [np.array([True, False, True, True]), np.array([1, 0, 1, 1]), np.array([1.0, 0.0, 1.0, 1.0])]
ALL_MASKED = [(np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]]), np.array([-100, -100]), mask, 0.1, 2.0)
              for mask in (np.zeros(2, dtype=np.int64), np.zeros(2, dtype=bool), np.zeros(2))]
LARGE = [(np.array([[1e4, 0.0, -1e4]]), np.array([2]), np.array([1]), 0.1, 1.0),
         (np.array([[1e4, -1e4], [-1e4, 1e4], [1e4, 1e4]]), np.array([0, 0, 1]), np.array([1, 1, 0]), 0.1, 1.0),
         (np.array([[5e3, -5e3, 0.0], [1e4, 0.0, 1e4]]), np.array([1, 2]), np.array([1, 1]), 0.2, 0.5)]
LARGE_LOGITS = [(logits.astype(dtype), y, mask, eps, T) for dtype in ("float64", "float32") for logits, y, mask, eps, T in LARGE]
# float32 holds 10000.3 as 10000.2998: a loss computed from float32 logits is off by about 1e-4 relative here.
PRECISION = (np.array([[10000.3, 10000.0, 9999.1]]), np.array([1]), np.array([1]), 0.1, 1.0)


def smoothing_cases(rng):
    return [(*random_case(rng, N, V, counted=1.0), eps, 1.0) for N, V, eps in ((1, 2, 0.1), (3, 4, 0.25), (4, 5, 0.6), (2, 3, 1.0), (32, 10, 0.3))]


def temperature_cases(rng):
    return [(*random_case(rng, N, V, counted=1.0), eps, T) for N, V, T, eps in ((2, 3, 2.0, 0.0), (3, 4, 0.5, 0.1), (4, 5, 4.0, 0.1), (32, 10, 0.25, 0.2))]


def counted_cases(rng):
    return [(np.array([[0.0, 0.0], [3.0, -1.0], [1.0, 2.0]]), np.array([0, 1, 1]), np.array([1, 0, 1]), 0.1, 1.0),
            *((*random_case(rng, N, V, counted=0.5), eps, 1.0) for N, V, eps in ((4, 3, 0.1), (5, 4, 0.0), (64, 10, 0.3)))]


def ignore_cases(rng):
    return [(np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0], [0.0, 0.0, 3.0]]), np.array([2, -100, 0]), np.array([1, 0, 1]), 0.1, 1.0),
            *((*random_case(rng, N, V, counted=0.5, ignore_label=label), 0.1, 2.0) for N, V, label in ((4, 4, 4), (5, 3, -1), (64, 10, -100)))]


def float32_cases(rng):
    return [(*random_case(rng, N, V, dtype="float32", counted=0.6), eps, T) for N, V, eps, T in ((3, 4, 0.1, 1.0), (4, 5, 0.3, 2.0), (64, 10, 0.1, 0.5))]


def unchanged_cases(rng):
    """Three random batches, float32 logits and every mask kind, -100 at the masked rows (their results graded too)."""
    cases = []
    for dtype, mask_dtype in (("float64", "int64"), ("float32", "bool"), ("float64", "float64")):
        logits, y, mask = random_case(rng, 4, 5, dtype=dtype, counted=0.5, ignore_label=-100)
        cases.append((logits, y, mask.astype(mask_dtype), 0.1, 2.0))
    return cases


# -- checks ----------------------------------------------------------------------------------------
@check("matches F.cross_entropy on a hand-built batch (every row counted)")
def hand_built(sub, ctx):
    for case in HAND_BUILT:
        call_and_judge(sub, *case)
    logits, y, mask = DEFAULTS
    got = sub.call("masked_ce", logits, y, mask)  # the defaults: eps=0.1, T=1.0
    judge(sub, got, logits, y, mask, 0.1, 1.0, scenario="the defaults eps=0.1, T=1.0, " + describe(logits, y, mask, 0.1, 1.0))


@check("label smoothing spreads eps / V over all V classes")
def smoothing(sub, ctx):
    with shrinking(sub, eps_values=(0.1, 0.25, 0.6, 1.0)):
        for case in smoothing_cases(ctx.rng(1)):
            call_and_judge(sub, *case)


@check("temperature divides the logits before the softmax")
def temperature(sub, ctx):
    with shrinking(sub, T_values=(2.0, 0.5, 4.0), eps_values=(0.0, 0.1)):
        for case in temperature_cases(ctx.rng(2)):
            call_and_judge(sub, *case)


@check("only the counted rows are averaged")
def counted_rows(sub, ctx):
    with shrinking(sub, eps_values=(0.1, 0.0, 0.3)):
        for case in counted_cases(ctx.rng(3)):
            call_and_judge(sub, *case)


@check("ignore labels (-100, V, -1) at masked rows neither raise nor count",
       edge="The labels of the other rows may be anything: `-100`, `V`, `-1`. They must neither raise nor change the result, so do not index with them.")
def ignore_labels(sub, ctx):
    with shrinking(sub, ignore_labels=(-100, "V", -1)):
        for case in ignore_cases(ctx.rng(4)):
            call_and_judge(sub, *case)


@check("bool, int and float masks; every non-zero value counts once", edge="`mask` an (N,) NumPy array of bool, int64 or float64 values 0 and 1.")
def mask_kinds(sub, ctx):
    with shrinking(sub, masks="all", ignore_labels=(-100,)):
        for mask in MASKS:
            call_and_judge(sub, *MASK_KINDS_BATCH, mask)


@check("an all-masked batch gives 0.0 without a floating-point warning",
       edge="An all-masked batch gives 0.0, and computing it must not raise a floating-point warning")
def all_masked(sub, ctx):
    for logits, y, mask, eps, T in ALL_MASKED:
        with sub.errstate(over="raise", divide="raise", invalid="raise"):
            got = sub.call("masked_ce", logits, y, mask, eps=eps, T=T)
        nan = isinstance(got, (float, np.floating, np.ndarray)) and np.size(got) == 1 and bool(np.isnan(got).all())
        hint = ("With no counted row the count is 0, and 0 / 0 is NaN: divide by max(count, 1), or return 0.0 before dividing."
                if nan else "")
        judge(sub, got, logits, y, mask, eps, T, hint=hint)


@check("logits of 1e4 give finite, correct losses (float64 and float32)")
def large_logits(sub, ctx):
    for case in LARGE_LOGITS:
        call_and_judge(sub, *case)


@check("float64 logits keep float64 precision")
def float64_precision(sub, ctx):
    logits, y, mask, eps, T = PRECISION
    got = sub.call("masked_ce", logits, y, mask, eps=eps, T=T)
    value = as_float(got, what="masked_ce's result", scenario=describe(logits, y, mask, eps, T))
    rounded = expected(logits.astype(np.float32), y, mask, eps, T)
    want = expected(logits, y, mask, eps, T)
    hint = ("Your result is what these logits give once rounded to float32: keep float64 inputs in float64 throughout"
            " (no float32 conversion or float32 constant on the way).") if abs(value - rounded) < abs(value - want) / 10 else ""
    judge(sub, got, logits, y, mask, eps, T, hint=hint)


@check("float32 logits (graded at float32 tolerance)")
def float32_logits(sub, ctx):
    with shrinking(sub, dtype="float32", eps_values=(0.1, 0.3), T_values=(1.0, 2.0)):
        for case in float32_cases(ctx.rng(5)):
            call_and_judge(sub, *case)


@check("inputs are left unchanged")
def inputs_left_unchanged(sub, ctx):
    for logits, y, mask, eps, T in unchanged_cases(ctx.rng(6)):
        scenario = describe(logits, y, mask, eps, T) + ", ignore label -100 at the masked rows"
        got = inputs_unchanged(sub, "masked_ce", logits, y, mask, scenario=scenario, eps=eps, T=T)
        judge(sub, got, logits, y, mask, eps, T, scenario=scenario)
    # Then every input the other checks send, the logits of 1e4 included (only whether they change is judged here): a shift
    # written into the caller's logits only where they are large changes nothing at ordinary ones.
    others = [*HAND_BUILT, (*DEFAULTS, 0.1, 1.0), *smoothing_cases(ctx.rng(1)), *temperature_cases(ctx.rng(2)), *counted_cases(ctx.rng(3)),
              *ignore_cases(ctx.rng(4)), *((*MASK_KINDS_BATCH, mask, 0.1, 1.0) for mask in MASKS), *ALL_MASKED, *LARGE_LOGITS, PRECISION,
              *float32_cases(ctx.rng(5))]
    for logits, y, mask, eps, T in others:
        inputs_unchanged(sub, "masked_ce", logits, y, mask, scenario=describe(logits, y, mask, eps, T), eps=eps, T=T)
