"""Checks for `kl-divergence`: KL(p || q) per row, in nats, and KL(softmax(a) || softmax(b)) from logits.

Expected values are computed here in float64 with torch: `xlogy(p, p) - xlogy(p, q)` summed over the last
axis for kl, and `F.kl_div(log_softmax(b), log_softmax(a), log_target=True)` summed for kl_from_logits.
Infinities must match exactly and NaN never passes. When a row comes back wrong in a batch, that row alone
(as a (1, K) batch) is tried: if it fails alone too, it is the failing input shown.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from mlprep.grading import (Call, as_float, assert_keeps_precision, assert_returns_like, check, check_each, control_value, fail, grid, inputs_unchanged,
                            matching_mistakes, matrix, same_values, shrink_on_failure, sized, tolerance_for)

MISTAKE_RTOL = 1e-6  # a wrong value "is" a known mistake's value when it is this close to it (and the right one is not)


# -- expected values and known mistakes (judge side, float64) --------------------------------------
def t64(x):
    return torch.from_numpy(np.asarray(x, dtype=np.float64).copy())


def kl_terms(p, q):
    p, q = t64(p), t64(q)
    return torch.special.xlogy(p, p) - torch.special.xlogy(p, q)


def want_kl(p, q):
    return kl_terms(p, q).sum(-1).numpy()


def want_kl_logits(a, b):
    a, b = t64(a), t64(b)
    return F.kl_div(F.log_softmax(b, -1), F.log_softmax(a, -1), reduction="none", log_target=True).sum(-1).numpy()


def kl_mistakes(p, q):
    """{mistake: what it gives for the call kl(p, q)}, each of the right one's shape (judge side, float64)."""
    right = want_kl(p, q)
    with np.errstate(invalid="ignore"):
        return {
            "swapped": want_kl(q, p),
            "log2": right / math.log(2),
            "mean": right / np.shape(p)[-1] if np.shape(p)[-1] > 1 else None,
            "cross_entropy": -(torch.special.xlogy(t64(p), t64(q))).sum(-1).numpy(),
        }


def logits_mistakes(a, b):
    """{mistake: what it gives for the call kl_from_logits(a, b)}, each of the right one's shape."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)

    def stable_softmax(z, axis=-1):
        e = np.exp(z - z.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    with np.errstate(all="ignore"):
        pn, qn = np.exp(a64) / np.exp(a64).sum(-1, keepdims=True), np.exp(b64) / np.exp(b64).sum(-1, keepdims=True)
        lp, lq = a64 - np.log(np.exp(a64).sum(-1, keepdims=True)), b64 - np.log(np.exp(b64).sum(-1, keepdims=True)),
        mistakes = {
            "swapped": want_kl_logits(b64, a64),
            "probabilities": want_kl(stable_softmax(a64), stable_softmax(b64)),
            "overflow in softmax": (pn * (np.log(pn) - np.log(qn))).sum(-1),
            "overflow in log-softmax": (np.exp(lp) * (lp - lq)).sum(-1),
        }
        if a64.ndim == 2:
            pa, qa = stable_softmax(a64, 0), stable_softmax(b64, 0)
            mistakes["softmax over rows"] = (pa * (np.log(pa) - np.log(qa))).sum(-1)
    return mistakes


KL_CAUSES = {
    "swapped": "this is KL(q || p), the arguments swapped: KL(p || q) = sum p * log(p / q) weights the log-ratio by p, the first argument",
    "log2": "this is the value in bits (log2): the contract asks for nats, the natural log",
    "mean": "this is the mean over the K categories: KL sums its terms over the last axis",
    "cross_entropy": "this is the cross-entropy -sum p log q; KL subtracts the entropy of p: sum p * (log p - log q)",
    "eps": ("here q is 0 where p is not, so KL is inf (q cannot explain what p puts there); an eps added inside the log, or q clipped away"
            " from 0, turns that into a finite number: keep log(0) = -inf"),
}
OVERFLOW = "overflow"
LOGITS_CAUSES = {
    "swapped": "this is KL(softmax(b) || softmax(a)), the arguments swapped: the first argument, a, gives the distribution that weights the log-ratio",
    "probabilities": ("this is kl(softmax(a), softmax(b)) with softmax(b) rounded to 0 where it underflows, which makes the log-ratio inf;"
                      " compute log-probabilities in log space instead (log_softmax(z) = z - max - log(sum(exp(z - max))))"),
    OVERFLOW: ("exp of logits this large overflows to inf (inf / inf is NaN): subtract each row's max before exponentiating, and take"
               " log-probabilities as z - max - log(sum(exp(z - max)))"),
    "softmax over rows": ("this is what softmaxes normalised over axis 0, across the rows of the batch, give: normalise each row's logits"
                          " over the last axis (axis=-1)"),
}


def close(x, y):
    """x is y, within MISTAKE_RTOL (an infinity only matches itself, NaN nothing)."""
    return same_values(x, y, rtol=MISTAKE_RTOL, atol=MISTAKE_RTOL * 1e-12)


def at(values, i):
    return None if values is None else float(np.asarray(values, dtype=np.float64).reshape(-1)[i])


ACROSS_ROWS = {"softmax over rows"}  # the known mistakes that mix the rows of a batch: a row alone is right
# Logits whose exp overflows but whose softmaxes do not underflow: right unless the softmax itself is unstable.
OVERFLOW_CASE = ([1e4, 1e4 + 1], [1e4 + 1, 1e4])


def row_hint(fn, got, args, i, sub=None, alone_right=False):
    """The hint for row i of the call fn(*args), which gave `got` there: what the wrong value shows (the value of
    exactly one known mistake), or ''. With `sub`, a kl_from_logits value that both an unstable softmax and a detour
    through probabilities explain is told apart by a control call on OVERFLOW_CASE. `alone_right`: the same row
    alone, as a (1, K) batch, came back right, so only a mistake that mixes the rows of a batch can explain it."""
    want = at(want_kl(*args) if fn == "kl" else want_kl_logits(*args), i)
    row = [np.asarray(x)[i] if np.ndim(x) == 2 else np.asarray(x) for x in args]
    mistakes = kl_mistakes(*args) if fn == "kl" else logits_mistakes(*args)
    causes = KL_CAUSES if fn == "kl" else LOGITS_CAUSES
    named = [(OVERFLOW if name.startswith("overflow") else name, at(values, i)) for name, values in mistakes.items()]
    matches = matching_mistakes(got, named, want=want, rtol=MISTAKE_RTOL, atol=MISTAKE_RTOL * 1e-12, equal_nan=True, apart=(MISTAKE_RTOL, MISTAKE_RTOL * 1e-12))
    if alone_right:
        across = [name for name in matches if name in ACROSS_ROWS]
        return causes[across[0]] if len(across) == 1 else (
            f"row {i} alone, as a (1, K) batch, comes back right, so your code mixes the rows of a batch: something is taken over all the rows"
            " (one maximum or one sum for the whole batch, or a softmax over axis 0) where each row needs its own (axis=-1, keepdims=True)")
    if set(matches) == {OVERFLOW, "probabilities"} and sub is not None:
        a, b = (np.array(x, dtype=np.asarray(args[0]).dtype) for x in OVERFLOW_CASE)
        right = control_value(sub, "kl_from_logits", a, b, read=lambda got: close(float(np.asarray(got, dtype=np.float64).reshape(-1)[0]),
                                                                                     float(want_kl_logits(a, b))))
        if right:
            return causes["probabilities"] + (f" (logits {OVERFLOW_CASE[0]} against {OVERFLOW_CASE[1]}, where exp overflows but nothing"
                                              " underflows, come back right)")
        matches = [OVERFLOW]
    if len(matches) == 1:
        return causes[matches[0]]
    if fn == "kl" and math.isnan(got) and np.any(row[0] == 0):
        return ("NaN where p has zeros: a term with p = 0 counts as 0 (0 log 0 = 0, also where q = 0), but p * log(p / q) computes"
                " 0 * -inf or 0 * NaN there; take those terms as 0 (np.where(p > 0, ..., 0))")
    if fn == "kl" and math.isinf(want) and math.isfinite(got):
        return KL_CAUSES["eps"]
    if got < -tolerance_for(np.asarray(args[0]).dtype)[1]:
        return ("KL is never negative (Gibbs' inequality); a negative value means the terms do not come from two distributions over this"
                " row's categories" + (": normalise each softmax over the last axis" if fn == "kl_from_logits" else ""))
    return ""


# -- judging one call ------------------------------------------------------------------------------
def as_rows(got, want, fn, args, scenario):
    """The result as a float64 array of want's shape (a scalar for 1-D input; shape (1,) accepted too)."""
    names = "p, q" if fn == "kl" else "a, b"
    if np.ndim(want) == 0:
        return np.array(as_float(got, what=f"{fn}({names})", scenario=scenario))
    assert_returns_like(got, args[0], what=f"{fn}({names})", scenario=scenario)
    N, K = np.shape(args[0])
    shape = np.shape(got)
    if shape != (N,):
        terms = kl_terms(*args).numpy() if fn == "kl" else None
        values = np.asarray(got, dtype=np.float64) if np.size(got) else np.zeros(shape)
        hint = f"one value per row: a ({N}, {K}) input gives shape ({N},), summing each row's terms over the last axis (axis=-1)"
        if terms is not None and values.shape in ((), (1,)) and N > 1:
            if close(float(values.reshape(-1)[0]), float(terms.sum())):
                hint = "this is the sum over the whole batch; " + hint
            elif close(float(values.reshape(-1)[0]), float(terms.sum(-1).mean())):
                hint = "this is the mean over the batch; " + hint
        elif terms is not None and values.shape == (K,) and np.allclose(values, terms.sum(0), rtol=MISTAKE_RTOL, atol=0, equal_nan=True):
            hint = "these are sums over the rows (axis 0); " + hint
        fail(f"{fn}({names}) ({scenario}): expected shape ({N},), got shape {shape}; {hint}.", expected_shape=[N], got_shape=list(shape))
    return np.asarray(got, dtype=np.float64)


def rows_match(sub, fn, args, scenario, reduce_rows=True):
    """The learner's fn(*args) equals the float64 expectation, row by row, at the input dtype's tolerance.
    A wrong row of a batch is tried alone; if it fails alone too, that (1, K) call is the failing input."""
    want = want_kl(*args) if fn == "kl" else want_kl_logits(*args)
    got = sub.call(fn, *args)
    i = wrong_row(got, want, fn, args, scenario)
    if i is None:
        return
    got_i = at(got, i)
    if np.ndim(want) == 1 and len(want) > 1 and reduce_rows:
        one = [np.asarray(x)[i:i + 1] for x in args]
        alone = control_value(sub, fn, *one, read=lambda got: (wrong_row(got, want[i:i + 1], fn, one, ""), at(got, 0)))
        if alone is not None and alone[0] == 0:
            got_one = alone[1]
            fail(row_message(got_one, at(want, i), fn, one, f"row {i} of: {scenario}; passed alone as a (1, K) batch"), failing_input=Call(fn, *one),
                 explain=lambda: hint_sentence(fn, got_one, one, 0, sub))
        alone_right = alone is not None and alone[0] is None
    else:
        alone_right = False
    where = f"{scenario}, row {i}" if np.ndim(want) == 1 else scenario
    fail(row_message(got_i, at(want, i), fn, [np.asarray(x)[i] if np.ndim(want) == 1 else x for x in args], where),
         explain=lambda: hint_sentence(fn, got_i, args, i, sub, alone_right))


def wrong_row(got, want, fn, args, scenario):
    """None when right; else the index of the first wrong row (type and shape problems fail here)."""
    got_arr = as_rows(got, want, fn, args, scenario)
    assert_keeps_precision(got, np.asarray(args[0]).dtype, what=f"{fn}'s result", scenario=scenario)
    rtol, atol = tolerance_for(np.asarray(args[0]).dtype)
    g, w = got_arr.reshape(-1), np.asarray(want, dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        ok = (g == w) | (np.isfinite(w) & (np.abs(g - w) <= atol + rtol * np.abs(w)))  # an inf only matches itself
    return None if ok.all() else int(np.flatnonzero(~ok)[0])


def row_message(got, want, fn, row_args, scenario):
    names = ("p", "q") if fn == "kl" else ("a", "b")
    rtol, atol = tolerance_for(np.asarray(row_args[0]).dtype)
    shown = ", ".join(f"{n} = {np.asarray(x).tolist()}" for n, x in zip(names, row_args)) if np.size(row_args[0]) <= 8 else ""
    return (f"{fn}({', '.join(names)}) ({scenario}{'; ' + shown if shown else ''}): expected {want:.10g}, got {got:.10g}"
            + (f"; allowed |got - expected| <= {atol:g} + {rtol:g} * |expected|." if math.isfinite(want) else "."))


def hint_sentence(fn, got, args, i, sub, alone_right=False):
    hint = row_hint(fn, got, args, i, sub, alone_right)
    return f"{hint[0].upper()}{hint[1:]}." if hint else ""


# -- inputs ----------------------------------------------------------------------------------------
def random_rows(rng, N, K, dtype="float64"):
    """(N, K) probability rows, every entry positive (Dirichlet(1)), each row summing to 1 in its dtype's rounding."""
    return rng.dirichlet(np.ones(K), size=N).astype(dtype)


def _normalised(counts):
    return counts / counts.sum(axis=-1, keepdims=True)


def small_distributions():
    """Hypothesis cases (p, q): 1 to 3 rows of 1 to 4 positive categories from small integers, normalised."""
    from hypothesis import strategies as st

    return sized((1, 3), (1, 4), then=lambda N, K: st.tuples(matrix(N, K, grid(1, 8)).map(_normalised),
                                                             matrix(N, K, grid(1, 8)).map(_normalised)))


def small_logits():
    """Hypothesis cases (a, b): 1 to 3 rows of 1 to 4 logits, -4 to 4 in halves."""
    from hypothesis import strategies as st

    return sized((1, 3), (1, 4), then=lambda N, K: st.tuples(matrix(N, K, grid(-8, 8, 2)), matrix(N, K, grid(-8, 8, 2))))


# -- the checks' inputs: ([p, q] or [a, b], scenario), small to large (inputs_kept sends every one of them again) ----
def pair(x, y, dtype="float64"):
    return [np.array(x, dtype=dtype), np.array(y, dtype=dtype)]


KL_HAND = [(pair([[0.5, 0.25, 0.25], [0.125, 0.375, 0.5]], [[0.25, 0.5, 0.25], [0.5, 0.25, 0.25]]), "float64, 2 rows of 3")]
KL_1D = [(pair([0.75, 0.25], [0.5, 0.5]), "1-D, one distribution"), (pair([1.0], [1.0]), "1-D, K = 1")]
KL_ZERO_P = [(pair([0.5, 0.5, 0.0], [0.25, 0.25, 0.5]), "p = 0 in one category, q > 0 there"),
             (pair([0.0, 1.0], [0.0, 1.0]), "p = q = 0 in one category"),
             (pair([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]], [[0.5, 0.25, 0.25], [0.0, 0.75, 0.25]]), "2 rows with zeros in p, one with q = 0 there too")]
KL_INF = [(pair([0.5, 0.5], [1.0, 0.0]), "q = 0 where p = 0.5"),
          (pair([[0.5, 0.5], [0.5, 0.5], [0.0, 1.0]], [[1.0, 0.0], [0.5, 0.5], [0.5, 0.5]]), "3 rows: q = 0 < p in the first only (inf, 0, log 2)")]
KL_EQUAL = (pair([[0.5, 0.25, 0.25], [0.125, 0.125, 0.75]], [[0.5, 0.25, 0.25], [0.125, 0.125, 0.75]]), "p = q")
KL_ASYMMETRIC = [(pair([0.875, 0.125], [0.5, 0.5]), "p peaked, q uniform"), (pair([0.5, 0.5], [0.875, 0.125]), "p uniform, q peaked")]
KL_FLOAT32 = (pair([0.5, 0.25, 0.25], [0.25, 0.5, 0.25], "float32"), "float32, 1-D")
LOGITS_HAND = [(pair([0.5, -1.0, 2.0], [0.0, 1.5, -0.5]), "1-D, 3 logits"),
               (pair([[1.0, 0.0], [0.0, -2.0], [3.0, 3.0]], [[0.0, 1.0], [0.5, 0.5], [-1.0, 2.0]]), "3 rows of 2")]
LOGITS_LARGE = [(pair([1e4, 1e4 + 1], [1e4 + 1, 1e4]), "logits near 1e4: exp overflows, tanh(0.5) expected"),
                (pair([0.0, 0.0], [1e4, 0.0]), "softmax(b) underflows to [1, 0]: 5000 - log 2 expected"),
                (pair([1e4, 0.0], [0.0, 0.0]), "softmax(a) underflows to [1, 0]: log 2 expected"),
                (pair([[0.0, 0.0, 0.0], [-1e4, 0.0, 1e4], [2.0, 1.0, 0.0]], [[1e4, 0.0, -1e4], [0.0, 0.0, 0.0], [2.0, 1.0, 1e4]]),
                 "3 rows mixing logits of +-1e4 and small ones")]
LOGITS_ASYMMETRIC = [(pair([2.0, 0.0], [0.0, 0.0]), "a peaked, b uniform"), (pair([0.0, 0.0], [2.0, 0.0]), "a uniform, b peaked")]
LOGITS_FLOAT32 = [(pair([0.5, -1.0, 2.0], [0.0, 1.5, -0.5], "float32"), "float32, 1-D"),
                  (pair([0.0, 0.0], [1e4, 0.0], "float32"), "float32, softmax(b) underflows")]


def kl_random_cases(rng):
    return [([random_rows(rng, N, K), random_rows(rng, N, K)], f"float64, {N} Dirichlet rows of {K}") for N, K in ((5, 4), (40, 10), (300, 50))]


def kl_shape_cases(rng):
    return [([random_rows(rng, N, K), random_rows(rng, N, K)], f"float64, shape ({N}, {K})") for N, K in ((3, 5), (4, 4), (1, 6), (5, 1))]


def near_cases(rng):
    """p random, q within 0.1% of p (KL about 1e-7)."""
    p = random_rows(rng, 50, 8)
    q = p * (1 + 1e-3 * rng.standard_normal(p.shape))
    return p, q / q.sum(axis=1, keepdims=True)


def logits_random_cases(rng):
    return [([3 * rng.standard_normal((N, K)), 3 * rng.standard_normal((N, K))], f"float64, {N} rows of {K}, logits ~ 3 N(0, 1)")
            for N, K in ((4, 5), (50, 10), (200, 40))]


# -- checks: kl ------------------------------------------------------------------------------------
def cases_check(name, fn, cases):
    """A check that judges fn on each (args, scenario) of `cases`, in order: a list, or a function of ctx that makes it (from ctx.rng)."""
    return check_each(name, cases, lambda sub, args, scenario: rows_match(sub, fn, args, scenario), uses=(fn,))


@check("kl: random probability rows (float64)", uses=("kl",))
def kl_random(sub, ctx):
    with shrink_on_failure(sub, small_distributions, lambda case: rows_match(sub, "kl", list(case), "small rows", reduce_rows=False)):
        for args, scenario in KL_HAND + kl_random_cases(ctx.rng(1)):
            rows_match(sub, "kl", args, scenario)


kl_shapes = cases_check("kl: one value per row; a 1-D input gives a scalar", "kl", lambda ctx: KL_1D + kl_shape_cases(ctx.rng(2)))
kl_zero_p = cases_check("kl: 0 where p = 0 (0 log 0 = 0)", "kl", KL_ZERO_P)
kl_inf = cases_check("kl: inf where q = 0 < p", "kl", KL_INF)


@check("kl: 0 for p = q, and never negative", uses=("kl",))
def kl_nonnegative(sub, ctx):
    rows_match(sub, "kl", *KL_EQUAL)
    p, q = near_cases(ctx.rng(3))
    rows_match(sub, "kl", [p, q], "q within 0.1% of p: KL about 1e-7, positive")
    got = np.asarray(sub.call("kl", p, q), dtype=np.float64)
    atol = tolerance_for(p.dtype)[1]
    if got.shape == (50,) and (got < -atol).any():
        i = int(np.flatnonzero(got < -atol)[0])
        fail(f"kl(p, q) (q within 0.1% of p), row {i}: {got[i]:.3g} is negative; KL is never negative (Gibbs' inequality)",
             failing_input=Call("kl", p[i:i + 1], q[i:i + 1]))


kl_asymmetric = cases_check("kl: KL(p || q), not KL(q || p)", "kl", KL_ASYMMETRIC)


@check("kl: float32 inputs; float64 keeps float64 precision", uses=("kl",))
def kl_dtypes(sub, ctx):
    rng = ctx.rng(4)
    rows_match(sub, "kl", *KL_FLOAT32)
    rows_match(sub, "kl", [random_rows(rng, 30, 10, "float32"), random_rows(rng, 30, 10, "float32")], "float32, 30 rows of 10")
    p, q = random_rows(rng, 20, 6), random_rows(rng, 20, 6)
    assert_keeps_precision(sub.call("kl", p, q), p.dtype, what="kl's result", scenario="float64, 20 rows of 6")


# -- checks: kl_from_logits ------------------------------------------------------------------------
@check("kl_from_logits: random logits (float64)", uses=("kl_from_logits",))
def logits_random(sub, ctx):
    with shrink_on_failure(sub, small_logits, lambda case: rows_match(sub, "kl_from_logits", list(case), "small logits", reduce_rows=False)):
        for args, scenario in LOGITS_HAND + logits_random_cases(ctx.rng(5)):
            rows_match(sub, "kl_from_logits", args, scenario)


logits_large = cases_check("kl_from_logits: finite and right at logits of 1e4", "kl_from_logits", LOGITS_LARGE)
logits_asymmetric = cases_check("kl_from_logits: KL(softmax(a) || softmax(b)), not the reverse", "kl_from_logits", LOGITS_ASYMMETRIC)


@check("kl_from_logits: float32 logits; float64 keeps float64 precision", uses=("kl_from_logits",))
def logits_dtypes(sub, ctx):
    rng = ctx.rng(6)
    rows_match(sub, "kl_from_logits", *LOGITS_FLOAT32[0])
    rows_match(sub, "kl_from_logits", [(3 * rng.standard_normal((30, 10))).astype(np.float32), (3 * rng.standard_normal((30, 10))).astype(np.float32)],
               "float32, 30 rows of 10")
    rows_match(sub, "kl_from_logits", *LOGITS_FLOAT32[1])
    a, b = rng.standard_normal((20, 6)), rng.standard_normal((20, 6))
    assert_keeps_precision(sub.call("kl_from_logits", a, b), a.dtype, what="kl_from_logits's result", scenario="float64, 20 rows of 6")


@check("inputs unchanged", uses=("kl", "kl_from_logits"))
def inputs_kept(sub, ctx):
    p, q = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]]), np.array([[0.25, 0.75, 0.0], [0.5, 0.0, 0.5]])
    inputs_unchanged(sub, "kl", p, q, scenario="p, q (2, 3) with zeros")
    a, b = np.array([[1e4, 0.0, 1.0], [0.5, -2.0, 3.0]]), np.array([[0.0, 1.0, 2.0], [1e4, 1e4, 0.0]])
    inputs_unchanged(sub, "kl_from_logits", a, b, scenario="a, b (2, 3), logits up to 1e4 (shifting by the max in place would change them)")
    # Then every input the other checks send, extreme ones included.
    for args, scenario in [*KL_HAND, *kl_random_cases(ctx.rng(1)), *KL_1D, *kl_shape_cases(ctx.rng(2)), *KL_ZERO_P, *KL_INF, KL_EQUAL,
                           (list(near_cases(ctx.rng(3))), "q within 0.1% of p"), *KL_ASYMMETRIC, KL_FLOAT32]:
        inputs_unchanged(sub, "kl", *args, scenario=scenario)
    for args, scenario in [*LOGITS_HAND, *logits_random_cases(ctx.rng(5)), *LOGITS_LARGE, *LOGITS_ASYMMETRIC, *LOGITS_FLOAT32]:
        inputs_unchanged(sub, "kl_from_logits", *args, scenario=scenario)
