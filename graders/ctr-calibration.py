"""Checks for `ctr-calibration`: undoing negative downsampling, and the expected calibration error.

correct_downsampled is judged against q = p w / (p w + 1 - p) in float64 at the tolerance of p's dtype,
also by a downsampling experiment whose true click rate is known; expected_calibration_error against the
judge's own loop over equal-width bins. The grader's p never sits on an inner bin edge (random floats,
or odd multiples of 1/128 with bins <= 12). A wrong value names the known mistake it equals, if one does.
"""

import math

import numpy as np

from mlprep.grading import (GraderDefect, as_float, assert_close, assert_keeps_precision, assert_returns_like, assert_shape, check, control_value, expect_raises,
                            explained, grid, inputs_unchanged, lists_of, mistake_hint, raised_by, shrink_on_failure, sized, when_raised)

NO_WARNINGS = {"over": "raise", "divide": "raise", "invalid": "raise"}
LOGIT_HINT = ("With every 0 and 1 of p replaced by 0.5, the same call gives no warning: the endpoints cause it. A logit of p = 0 or 1 is log(0) or a"
              " division by 1 - p = 0; q = p w / (p w + 1 - p) needs no logit, and its denominator is never 0 for w > 0.")
CORRECT, ECE = ("correct_downsampled",), ("expected_calibration_error",)


# -- expected values and known mistakes (judge side, float64) ------------------------------------------
def corrected(p, w):
    p = np.asarray(p, dtype=np.float64)
    return p * w / (p * w + 1 - p)


def correction_mistakes(p, w):
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(all="ignore"):
        return {"the odds are divided by w instead of multiplied (logit(p) - log(w)): keeping a fraction w of the negatives"
                " multiplies the odds by 1 / w, so the correction multiplies them by w": p / w / (p / w + 1 - p),
                "w is used as the fraction of negatives dropped; it is the fraction kept": p * (1 - w) / (p * (1 - w) + 1 - p),
                "the probability is multiplied by w; it is the odds p / (1 - p) that change by the factor w, so"
                " q = p w / (p w + 1 - p)": p * w}


def bin_sums(y, p, bins, p_one="last"):
    """[(n_b, sum y, sum p)] per bin, from explicit edges: bin b holds b / B <= p < (b + 1) / B; the rows with p = 1
    go to the last bin ("last"), to a bin B of their own ("own") or nowhere ("dropped")."""
    y, p = np.asarray(y, dtype=np.float64), np.asarray(p, dtype=np.float64)
    rows = [[] for _ in range(bins + 1)]
    for i, value in enumerate(p):
        b = next(b for b in range(bins) if value < (b + 1) / bins) if value < 1 else bins
        rows[bins - 1 if b == bins and p_one == "last" else b].append(i)
    kept = rows if p_one == "own" else rows[:bins]
    return [(len(r), y[r].sum(), p[r].sum()) for r in kept]


def ece(y, p, bins):
    return sum(abs(sy - sp) for _, sy, sp in bin_sums(y, p, bins)) / len(p)


def ece_mistakes(y, p, bins):
    sums, N = bin_sums(y, p, bins), len(p)
    kept = bin_sums(y, p, bins, "dropped")
    n_kept = max(sum(n for n, _, _ in kept), 1)
    gaps_kept = sum(abs(sy - sp) for _, sy, sp in kept)
    return {"every non-empty bin is weighted equally; each bin's gap is weighted by its share of the rows, n_b / N":
            float(np.mean([abs(sy - sp) / n for n, sy, sp in sums if n])),
            "the gap is signed (mean y - mean p); it is the absolute difference |mean y - mean p|": sum(sy - sp for _, sy, sp in sums) / N,
            "p = 1 gets a bin of its own (int(p * bins) is bins there); it belongs to the last bin":
            sum(abs(sy - sp) for _, sy, sp in bin_sums(y, p, bins, "own")) / N,
            "the rows with p = 1 are left out; they belong to the last bin": gaps_kept / N,
            "the rows with p = 1 are left out (and not counted in N); they belong to the last bin": gaps_kept / n_kept}


def matching(value, want, variants, rtol=1e-9):
    """A hint naming the known mistake whose value `value` equals (and the right answer does not), or ""."""
    return mistake_hint(value, variants, want=want, rtol=rtol, atol=1e-12, equal_nan=True, apart=(10 * rtol, 1e-12))


# -- judging one call -------------------------------------------------------------------------------
def judge_correction(sub, p, w, scenario, want=None, errstate=False):
    if errstate:
        with sub.errstate(**NO_WARNINGS):
            got = sub.call("correct_downsampled", p, w)
    else:
        got = sub.call("correct_downsampled", p, w)
    assert_returns_like(got, p, what="correct_downsampled's result", scenario=scenario)
    assert_shape(got, p.shape, what="correct_downsampled's result", scenario=scenario)
    assert_keeps_precision(got, p.dtype, what="correct_downsampled's result", scenario=scenario)
    want = corrected(p, w) if want is None else want
    with explained(lambda: matching(got, want, correction_mistakes(p, w), rtol=1e-9 if p.dtype == np.float64 else 1e-5)):
        assert_close(got, want, what="correct_downsampled's result", scenario=scenario, dtype=p.dtype)
    return got


def judge_ece(sub, y, p, bins, scenario=None):
    scenario = scenario or f"{len(p)} rows, {np.asarray(y).dtype.name} labels, bins = {bins}"
    got = sub.call("expected_calibration_error", y, p, bins)
    value = as_float(got, what="expected_calibration_error's result", scenario=scenario)
    want = ece(y, p, bins)
    empty = sum(1 for n, _, _ in bin_sums(y, p, bins) if n == 0)
    hint = (f"{empty} of the {bins} bins are empty here: an empty bin adds 0 to the ECE, never 0 / 0 (weighting each bin by n_b / N,"
            " n_b / N * |sum y / n_b - sum p / n_b| is |sum y - sum p| / N: no division by n_b needed)") if math.isnan(value) and empty else ""
    with explained(lambda: "" if hint else matching(value, want, ece_mistakes(y, p, bins))):
        assert_close(value, want, what="expected_calibration_error's result", scenario=scenario, hint=hint)


def endpoints_hint(sub, p, w):
    """After a floating-point warning: whether the same call with p's 0s and 1s replaced by 0.5 gives none (the endpoints are the cause)."""
    inner = np.where((p == 0) | (p == 1), 0.5, p).astype(p.dtype)
    with sub.errstate(**NO_WARNINGS):
        return LOGIT_HINT if control_value(sub, "correct_downsampled", inner, w) is not None else ""


def ece_case_of(n):
    """n labels, n probabilities (odd multiples of 1/128, never on an inner edge b / B for B <= 12, or 0 and 1), bins 1-12."""
    from hypothesis import strategies as st

    prob = st.one_of(grid(0, 63, 64, offset=1 / 128), st.sampled_from([0.0, 1.0]))
    return st.tuples(lists_of(st.integers(0, 1), n), lists_of(prob, n), st.integers(1, 12))


def verify_small_ece(sub, case):
    y, p, bins = case
    judge_ece(sub, np.array(y), np.array(p), bins)


# -- the cases (every check's inputs, for the inputs-unchanged check too) ---------------------------------
def value_cases(ctx):
    rng = ctx.rng(1)
    return [(np.array([0.5]), 0.1), (np.array([0.2, 0.5, 0.9]), 0.25), (np.array([0.3, 0.6]), 1.0),
            (np.round(rng.uniform(0.01, 0.99, (3, 4)), 3), 0.05), (rng.uniform(0, 1, 50), 0.3)]


def downsampled_cases():
    """(p, w, true rate, P, n_neg, K): clicks P and negatives n_neg, all clicks kept and K = w * n_neg (a whole number) of the negatives."""
    for P, n_neg, w in ((70, 9930, 0.1), (7, 1000, 0.01), (300, 9700, 0.25), (2000, 8000, 0.02), (600, 400, 0.75)):
        K = round(w * n_neg)
        if abs(K - w * n_neg) > 1e-9:
            raise GraderDefect(f"w * n_neg = {w * n_neg} is not a whole number of negatives")
        yield np.array([P / (P + K)]), w, np.array([P / (P + n_neg)]), P, n_neg, K


ENDPOINTS = [(np.array([0.0, 1.0]), 0.1), (np.array([1.0, 0.5, 0.0]), 1.0), (np.array([0.0, 1e-300, 0.5, 1 - 2**-52, 1.0]), 0.02),
             (np.array([0.0, 0.25, 1.0], dtype=np.float32), 0.5)]


def dtype_cases(ctx):
    rng = ctx.rng(2)
    return [(rng.uniform(0, 1, (4, 5)).astype(dtype), 0.05) for dtype in ("float32", "float64")]


ECE_HAND_BUILT = [(np.array([0, 1, 1, 0, 1]), np.array([0.1, 0.3, 0.6, 0.8, 0.9]), 2), (np.array([1, 0, 0]), np.array([0.2, 0.45, 0.7]), 1),
                  (np.array([1, 0, 0, 0, 0, 1, 1, 1, 0, 0]), np.array([0.2] * 5 + [0.6] * 5), 2),
                  (np.array([1, 0, 1, 1, 0, 0]), np.array([0.05, 0.15, 0.55, 0.62, 0.68, 0.93]), 10)]
ECE_EMPTY_BINS = [(np.array([1, 0, 1]), np.array([0.12, 0.14, 0.87]), 10), (np.array([0, 1]), np.array([0.3, 0.3]), 5),
                  (np.array([0, 1, 1, 0]), np.array([0.011, 0.013, 0.994, 0.997]), 100)]
ECE_ENDPOINTS = [(np.array([1, 0, 0, 1, 1]), np.array([0.0, 0.05, 1.0, 0.95, 0.92]), 10), (np.array([0, 1, 1]), np.array([1.0, 1.0, 0.6]), 4),
                 (np.array([1, 0]), np.array([0.0, 0.0]), 3)]


def ece_random_cases(ctx):
    rng = ctx.rng(3)
    for N, bins, dtype in ((6, 3, "int64"), (40, 10, "bool"), (200, 15, "float64"), (1000, 1, "int64"), (10_000, 20, "float64")):
        p = rng.beta(0.6, 2.0, N)
        yield (rng.random(N) < np.clip(p * 1.3, 0, 1)).astype(dtype), p, bins


def p_text(p, w):
    return f"p = {p.tolist()}, w = {w:g}" if p.size <= 4 else f"{p.dtype.name} p of shape {p.shape}, w = {w:g}"


# -- checks -----------------------------------------------------------------------------------------
@check("correct_downsampled: q = p w / (p w + 1 - p), i.e. logit(q) = logit(p) + log(w)", uses=CORRECT)
def correction_values(sub, ctx):
    for p, w in value_cases(ctx):
        judge_correction(sub, p, w, f"p = {p.tolist()}, w = {w:g}" if p.size <= 4 else f"p of shape {p.shape}, w = {w:g}")


@check("correct_downsampled recovers the true click rate after negative downsampling", uses=CORRECT)
def recovers_true_rate(sub, ctx):
    for p_ds, w, rate, P, n_neg, K in downsampled_cases():
        scenario = (f"{P} clicks in {P + n_neg} impressions (true rate {rate[0]:.4g}); keeping all clicks and w = {w:g} of the negatives"
                    f" ({K}) gives a training click rate of {P}/{P + K} = {p_ds[0]:.4g}, which a calibrated model predicts")
        judge_correction(sub, p_ds, w, scenario, want=rate)


@check("correct_downsampled: p = 0 and p = 1 give 0 and 1, with no floating-point warning", uses=CORRECT,
       edge="`p = 0` gives 0 and `p = 1` gives 1 (within the tolerance below: `(p * w + 1) - p` may round), without a floating-point warning.")
def correction_endpoints(sub, ctx):
    for p, w in ENDPOINTS:
        scenario = f"p = {p.tolist()} ({p.dtype.name}), w = {w:g}, under np.errstate(over, divide and invalid = 'raise')"
        warned = lambda message, scenario=scenario: f"correct_downsampled ({scenario}): {message.partition(chr(10))[0]}."
        with when_raised("floating_point", fail_with=warned, what="correct_downsampled's warning", got="a floating-point warning",
                         explain=lambda p=p, w=w: endpoints_hint(sub, p, w)):
            judge_correction(sub, p, w, scenario, errstate=True)


@check("correct_downsampled: float32 p at float32 tolerance, float64 p keeps float64", uses=CORRECT)
def correction_dtypes(sub, ctx):
    for p, w in dtype_cases(ctx):
        judge_correction(sub, p, w, f"{p.dtype.name} p of shape (4, 5), w = 0.05")


@check("invalid arguments raise ValueError (w outside (0, 1], bins < 1, y and p of different lengths)",
       edge="`w <= 0` or `w > 1` raises `ValueError`. ... `bins < 1`, or `y` and `p` of different lengths, raise `ValueError`.")
def invalid_arguments(sub, ctx):
    y, p = np.array([0, 1, 1]), np.array([0.2, 0.7, 0.9])
    cases = [("w = 0", "correct_downsampled", (p, 0.0)), ("w = -0.1", "correct_downsampled", (p, -0.1)),
             ("w = 1.5", "correct_downsampled", (p, 1.5)), ("bins = 0", "expected_calibration_error", (y, p, 0)),
             ("y of 2 rows, p of 3", "expected_calibration_error", (y[:2], p, 10))]
    remedy = "check the arguments first and raise ValueError with a clear message."
    for what, fn, args in cases:
        expect_raises(sub.run(raised_by, fn, *args), exact=True, what=f"{fn} with {what}", shown=lambda result: "a value", raised_hint=remedy,
                      returned_hint=remedy)


@check("ECE on hand-built cases (one bin, two bins, a perfectly calibrated model)", uses=ECE)
def ece_hand_built(sub, ctx):
    for y, p, bins in ECE_HAND_BUILT:
        judge_ece(sub, y, p, bins)


@check("ECE: empty bins add 0", uses=ECE)
def ece_empty_bins(sub, ctx):
    for y, p, bins in ECE_EMPTY_BINS:
        judge_ece(sub, y, p, bins)


@check("ECE: p = 0 falls in the first bin, p = 1 in the last", uses=ECE,
       edge="`p = 0` is in the first bin and `p = 1` in the last bin (not in a bin of its own, not dropped).")
def ece_endpoints(sub, ctx):
    for y, p, bins in ECE_ENDPOINTS:
        judge_ece(sub, y, p, bins)


@check("ECE on random data (int, bool and float labels; 1 to 20 bins; up to 10,000 rows)", uses=ECE)
def ece_random(sub, ctx):
    with shrink_on_failure(sub, lambda: sized((1, 8), then=ece_case_of), lambda case: verify_small_ece(sub, case)):
        for y, p, bins in ece_random_cases(ctx):
            judge_ece(sub, y, p, bins)


@check("inputs unchanged", uses=None)
def inputs_kept(sub, ctx):
    p = np.array([0.0, 0.2, 0.7, 1.0])
    inputs_unchanged(sub, "correct_downsampled", p, 0.1, scenario="p = [0, 0.2, 0.7, 1], w = 0.1")
    inputs_unchanged(sub, "expected_calibration_error", np.array([0, 1, 1, 0]), p, 4, scenario="y = [0, 1, 1, 0], p = [0, 0.2, 0.7, 1], bins = 4")
    # and every other check's inputs, extreme ones included
    for p, w in [*value_cases(ctx), *((p, w) for p, w, *_ in downsampled_cases()), *ENDPOINTS, *dtype_cases(ctx)]:
        inputs_unchanged(sub, "correct_downsampled", p, w, scenario=p_text(p, w))
    for y, p, bins in [*ECE_HAND_BUILT, *ECE_EMPTY_BINS, *ECE_ENDPOINTS, *ece_random_cases(ctx)]:
        inputs_unchanged(sub, "expected_calibration_error", y, p, bins, scenario=f"{len(p)} rows, {y.dtype.name} labels, bins = {bins}")
