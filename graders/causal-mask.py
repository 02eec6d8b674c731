"""Grader for `causal-mask`: masked scaled dot-product attention, and the next-token loss.

Attention is compared with torch's F.scaled_dot_product_attention in float64 with the combined causal & key-padding
mask, in two parts: the real queries (a pad query that sees keys is outside the contract), then the queries that see no
key (zeros). The gradient checks use left padding only, where every position is graded. lm_loss takes a model, so its
checks run `lm_loss_scenario`, which builds a tiny causal model in the sandbox and hands back the loss, whether
backward() worked, and the parameters' gradients.
"""

import functools
import inspect
import math
import threading
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from mlprep.grading import (Call, CheckFailed, GraderDefect, assert_close, assert_finite, assert_keeps_precision, assert_returns_like, check, dtype_name,
                            explained, fail, fail_if_changed, gradcheck_float64, mistake_hint, on_input, scenario, shrink_on_failure, sized,
                            Snapshot, tolerance_for, value_and_grad)
from mlprep.grading.attention import (JOIN, SHIFT_MISTAKES, attend, attention_output, causality_probe, f64, far_apart, float32_hint, keep_rows,
                                      known_mistake, matches, normal, small_values, tensors, unchanged_probe, v_alone_hint)

ATTENTION, LOSS = ("causal_attention",), ("lm_loss",)  # what each check calls (`uses`)

# keep patterns, one row per sequence (T = 6): every scenario names the ones it uses.
ALL_REAL = [True, True, True, True, True, True]
RIGHT_PADDED = [True, True, True, True, False, False]
LEFT_PADDED = [False, False, True, True, True, True]
WITH_HOLES = [True, False, True, True, False, True]
ALL_PAD = [False, False, False, False, False, False]

NO_KEY_RULE = "A query that sees no key (no real key among 0..t) returns zeros."


# -- Expectations, and what the known mistakes give (judge side) -----------------------------------
def _keep(*rows):
    return torch.tensor(rows, dtype=torch.bool)


def _allowed(keep, T):
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return causal[None, None] & keep.cpu()[:, None, None, :]  # (B, 1, T, T)


def _sees_no_key(keep):
    """(B, 1, T, 1): True where query t has no real key among 0..t."""
    return ~(keep.cpu().long().cumsum(dim=1) > 0)[:, None, :, None]


def _real(keep):
    """(B, 1, T, 1): True at real queries (a real query always sees at least its own key)."""
    return keep.cpu()[:, None, :, None]


def _expected(q, k, v, keep):
    """torch's SDPA in float64 with the combined mask; zeros for queries that see no key."""
    q, k, v = f64(q, k, v)
    allowed = _allowed(keep, q.shape[-2])
    empty = _sees_no_key(keep)
    # An all-False row is not something every SDPA backend defines; give it any key, zero it after.
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | empty)
    return out.masked_fill(empty, 0.0)


def _only(out, where):
    """`out` (as a CPU tensor) with everything outside `where` (broadcast) set to 0: the part a comparison judges."""
    return torch.where(where, torch.as_tensor(out).detach().cpu(), 0.0)


def _mistakes(q, k, v, keep):
    """(hint, output) for each known mistake, computed lazily: a hint says what the output equals."""
    T, d = q.shape[-2], q.shape[-1]
    causal = torch.ones(T, T, dtype=torch.bool)
    keys = keep.cpu()[:, None, None, :]
    allowed = causal.tril()[None, None] & keys
    yield ("Your output is what attention over keys t..T-1 gives (the upper triangle, triu): query t looks at the past,"
           " keys 0..t (torch.tril, diagonal included).", lambda: attend(q, k, v, causal.triu()[None, None] & keys))
    yield ("Your output is what attention over keys 0..t-1 gives, without the query's own key (tril(diagonal=-1)):"
           " query t sees keys 0..t, itself included.", lambda: attend(q, k, v, causal.tril(diagonal=-1)[None, None] & keys))
    yield ("Your output is what attention over every real key gives, later ones included: add the causal mask (query t"
           " sees keys 0..t only).", lambda: attend(q, k, v, causal[None, None] & keys))
    # keep ignored and keep on the query axis give the same real queries: both leave the pad KEYS visible.
    yield ("Your output is what causal attention with the pad keys left visible gives (keep ignored, or applied on the"
           " query axis): hide the pads on the KEY axis, the last axis of the scores (keep[:, None, None, :]), so that no"
           " query gives them weight.", lambda: attend(q, k, v, causal.tril()[None, None].expand(keep.shape[0], 1, T, T)))
    yield ("Your output is what masked scores set to 0 instead of -inf give: exp(0) = 1 still gives the masked keys"
           " weight; fill them with float('-inf') before the softmax.", lambda: attend(q, k, v, allowed, fill=0.0))
    yield ("Your output is what a softmax over all keys with the masked weights zeroed afterwards gives: the remaining"
           " weights no longer sum to 1; mask the scores (-inf) before the softmax instead.",
           lambda: attend(q, k, v, allowed, after_softmax=True))
    yield ("Your output is what scores without the 1 / sqrt(d) scale give: use q.k / sqrt(d).",
           lambda: attend(q, k, v, allowed, scale=1.0))
    yield (f"Your output is what scores divided by d = {d} instead of sqrt(d) give: use q.k / sqrt(d).",
           lambda: attend(q, k, v, allowed, scale=1.0 / d))
    yield ("Your output is what a softmax over the query axis (dim=-2) gives: normalise over the keys, the last axis"
           " (dim=-1).", lambda: attend(q, k, v, allowed, dim=-2))
    for shift, hint in SHIFT_MISTAKES.items():
        yield hint, partial(attend, q, k, v, allowed, shift=shift)


def _tolerance(q, rtol=None, atol=None):
    """10x the comparison's tolerance: what "equals a known mistake" allows."""
    default_rtol, default_atol = tolerance_for(q.dtype)
    return 10 * (default_rtol if rtol is None else rtol), 10 * (default_atol if atol is None else atol)


def _diagnose(got, q, k, v, keep, rtol=None, atol=None):
    """A hint for a wrong output at the real queries, from the evidence only: the known mistake whose output it equals
    on this input, float32-sized errors on float64 inputs, or where the wrong rows are; else ""."""
    got, want = f64(got), _expected(q, k, v, keep)
    where = _real(keep).expand(want.shape)
    rtol, atol = _tolerance(q, rtol, atol)
    known = known_mistake(got, _mistakes(q, k, v, keep), want, rtol=rtol, atol=atol, where=where, apart=10)
    if known:
        return known
    if torch.where(where, got.isnan(), False).any():
        return ("Real queries return NaN, though each of them sees at least its own key, so it is not the no-key case: look"
                " for a softmax (or a division) over a slice whose entries are all -inf (or all 0).")
    silent = where.all(dim=-1) & (got == 0).all(dim=-1) & (want != 0).any(dim=-1)  # (B, H, T): a real query with an all-zero output
    if silent.any():
        b, _, t = (int(i) for i in silent.nonzero()[0])
        return (f"Real query {t} of row {b} returns zeros, what a query that sees no key returns; but a real query always"
                f" sees at least itself (key {t}: the diagonal belongs to the causal mask).")
    float32 = float32_hint(got, want, lambda: attend(q, k, v, _allowed(keep, q.shape[-2]), float32_softmax=True), q.dtype, where=where)
    if float32:
        return float32
    bad = where & ~((got - want).abs() <= atol + rtol * want.abs())
    rows_bad, rows_real = bad.flatten(1).any(dim=1), keep.cpu().all(dim=1)
    if rows_bad.any() and rows_real.any() and not (rows_bad & rows_real).any():
        first = int(rows_bad.nonzero()[0, 0])
        return (f"The rows without padding are right; only rows with pads are wrong (the first is row {first}, keep ="
                f" {keep[first].tolist()}): look at how keep enters the mask.")
    return ""


ZERO_THEM = "Zero the output of the queries that see no key."


def _no_key_evidence(got, q, k, v, keep, rtol=None, atol=None):
    """(what the queries that see no key return instead of zeros, the remedy), or ("", "") when it is nothing known."""
    got = f64(got)
    where = _sees_no_key(keep).expand(got.shape)
    if torch.where(where, got.isnan(), False).any():
        return ("They return NaN: a softmax over a row of scores that are all -inf is 0/0.",
                "Let such rows see something finite (e.g. every key) and zero their output afterwards; the zeroing also"
                " zeroes their gradient.")
    if matches(got, f64(v).mean(dim=-2, keepdim=True).expand(got.shape), rtol=1e-4, atol=1e-5, where=where):
        return ("They return the plain average of every value, pads included: what a softmax gives over a row whose scores"
                " were all replaced by the same finite number (a large negative fill).", ZERO_THEM)
    T = q.shape[-2]
    if matches(got, attend(q, k, v, torch.ones(1, 1, T, T, dtype=torch.bool)), rtol=1e-4, atol=1e-5, where=where):
        return ("They return attention over every key, as if unmasked: what a large negative number added to every score of"
                " a row gives (the shift cancels in the softmax).", ZERO_THEM)
    rtol, atol = _tolerance(q, rtol, atol)
    known = known_mistake(got, _mistakes(q, k, v, keep), rtol=rtol, atol=atol, where=where, first=True)
    return (f"They still look at keys. {known}", "") if known else ("", "")


def _no_key_hint(got, q, k, v, keep, lead="", **tolerance):
    """A hint for queries that see no key but do not return zeros, chosen by what they return instead, or else
    by what the real queries of the same output show (a known mistake there explains these too)."""
    evidence, remedy = _no_key_evidence(got, q, k, v, keep, **tolerance)
    if not evidence:
        remedy = _diagnose(got, q, k, v, keep, **tolerance)
        evidence = "The real queries are wrong as well." if remedy else ""
    return " ".join(part for part in (lead, evidence, NO_KEY_RULE, remedy) if part)


# -- Calling and judging causal_attention ----------------------------------------------------------
def _output(sub, q, k, v, keep, scenario):
    return attention_output(sub, "causal_attention", q, k, v, keep, what="causal_attention output", shape=q.shape, scenario=scenario)


def _judge(got, q, k, v, keep, scenario, no_key_first=False, **tolerance):
    """The output against SDPA: the real queries (pad queries that see keys are not compared), and the
    queries that see no key (zeros), in that order or the other."""
    parts = [  # (where, expected there, what, the hint when it differs)
        (_real(keep), _expected(q, k, v, keep), "causal_attention output at real queries", _diagnose),
        (_sees_no_key(keep), torch.zeros(q.shape, dtype=torch.float64), "causal_attention output at queries that see no key (must be zeros)", _no_key_hint),
    ]
    for where, want, what, hint in parts[::-1] if no_key_first else parts:
        with explained(partial(hint, got, q, k, v, keep, **tolerance)):
            assert_close(_only(got, where), _only(want, where), what=what, scenario=scenario, dtype=q.dtype, **tolerance)


def _scenario(q, keep, device, extra=""):
    return f"{dtype_name(q.dtype)}, q/k/v shape {tuple(q.shape)}, keep {keep.tolist()}{extra}, {device}"


# Tiny hand-written inputs (exact numbers, pasted in full when they fail): B = 2 rows of T = 3, d = 2.
TINY_Q = [[[[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]]], [[[1.0, 0.5], [-1.25, 1.0], [0.25, -1.5]]]]
TINY_K = [[[[1.0, 0.5], [-0.5, 1.5], [2.0, -1.0]]], [[[0.75, -0.25], [1.0, 1.0], [-1.5, 0.5]]]]
TINY_V = [[[[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]]], [[[2.0, 1.0], [-1.0, 0.5], [0.25, -0.75]]]]
TINY_KEEP = _keep([True, False, True], [False, True, True])


# -- causal_attention ------------------------------------------------------------------------------
@check("query 0 attends to itself only", uses=ATTENTION)
def first_query_sees_itself(sub, ctx):
    cases = [  # small to large
        (*tensors([[[[1.0], [2.0]]]], [[[[1.0], [-1.0]]]], [[[[0.5], [-1.5]]]]), _keep([True, True])),
        (*normal(ctx.rng(1), *[(2, 2, 5, 4)] * 3), _keep([True] * 5, [True, True, True, False, False])),
    ]
    for q, k, v, keep in cases:
        scenario = _scenario(q, keep, "cpu")
        got = _output(sub, q, k, v, keep, scenario)
        with explained(partial(_query0_hint, sub, got, q, k, v, keep)):
            assert_close(torch.as_tensor(got)[:, :, 0], v[:, :, 0], what="output at query 0 (must equal v at key 0)", scenario=scenario)


def _query0_hint(sub, got, q, k, v, keep):
    """From what query 0 returns, what the later queries return, a known mistake, or a control call with only v at
    keys 1.. changed (does query 0 take weight from them?)."""
    out = f64(got)
    first, later = out[:, :, 0], torch.where(_real(keep)[:, :, 1:], out[:, :, 1:], float("nan"))
    if bool(((first == 0) | first.isnan()).all()):
        if not bool((later.isfinite() & (later != 0)).any()):
            return ""  # every query returns zeros or NaN: nothing singles out query 0's own key
        what = "NaN" if bool(first.isnan().any()) else "zeros"
        return (f"Query 0 returns {what}, what a query that sees no key returns, while later queries do see keys: query 0 must see its own"
                " key, key 0 (keep the diagonal: tril, not tril(diagonal=-1)).")
    known = _diagnose(got, q, k, v, keep)
    if known:
        return known
    later_v = torch.cat([v[:, :, :1], v[:, :, 1:] + 10.0], dim=2)
    return v_alone_hint(sub, "causal_attention", (q, k, v, keep), (q, k, later_v, keep), lambda out: out[:, :, :1],
                        moved=("Changing only v at keys 1.. moves query 0's output, so query 0 gives later keys weight: mask the scores of keys"
                               " after the query with -inf before the softmax (tril keeps key 0 alone for query 0)."),
                        still=("Changing only v at keys 1.. leaves query 0's output unchanged, so it takes no weight from them; yet it is not v at"
                               " key 0, so its weight on key 0 is not 1: the weights must sum to 1 over the keys it sees (a softmax over the last"
                               " axis of the masked scores)."))


def _tiny_attention_cases():
    """Hypothesis strategy for shrinking: (shape (B, T, d), dtype, keep rows, (q, k, v)) with H = 1, small integers
    as values, keep shrinking toward all real."""
    from hypothesis import strategies as st

    def of_shape(B, T, d):
        return st.tuples(st.just((B, T, d)), st.sampled_from(["float32", "float64"]), keep_rows(B, T), small_values(*[B * T * d] * 3))

    return sized((1, 2), (1, 4), (1, 2), then=of_shape)


def _verify_tiny_case(sub, case):
    (B, T, d), dtype, rows, values = case
    q, k, v = (torch.tensor(x, dtype=getattr(torch, dtype)).reshape(B, 1, T, d) for x in values)
    keep = _keep(*rows)
    scenario = _scenario(q, keep, sub.device)
    _judge(_output(sub, q, k, v, keep, scenario), q, k, v, keep, scenario)


@check("matches F.scaled_dot_product_attention with the combined mask", devices=("cpu", "cuda"), uses=ATTENTION)
def matches_sdpa(sub, ctx):
    q, k, v = tensors(TINY_Q, TINY_K, TINY_V)
    scenario = _scenario(q, TINY_KEEP, ctx.device)
    _judge(_output(sub, q, k, v, TINY_KEEP, scenario), q, k, v, TINY_KEEP, scenario)
    rng = ctx.rng(2)
    cases = [
        (torch.float32, (4, 2, 6, 8), _keep(ALL_REAL, RIGHT_PADDED, LEFT_PADDED, WITH_HOLES),
         "all real, right-padded, left-padded, pads in the middle"),
        (torch.float64, (2, 3, 6, 5), _keep(WITH_HOLES, ALL_REAL), "pads in the middle, all real"),
    ]
    with shrink_on_failure(sub, _tiny_attention_cases, lambda case: _verify_tiny_case(sub, case)):
        for dtype, shape, keep, rows in cases:
            q, k, v = normal(rng, shape, shape, shape, dtype=dtype)
            scenario = f"{dtype_name(q.dtype)}, random q/k/v of shape {shape}, keep rows: {rows}, {ctx.device}"
            _judge(_output(sub, q, k, v, keep, scenario), q, k, v, keep, scenario)


@check("float64 inputs are computed in float64", devices=("cpu", "cuda"), uses=ATTENTION)
def float64_precision(sub, ctx):
    # q.k / sqrt(2) is about 7071 for every pair and the pairs differ by O(1): float32 spaces numbers of that size
    # 2^-11 = 4.9e-4 apart, so a float32 softmax moves the weights by ~1e-4; float64 (and SDPA in float64) is exact to ~1e-12.
    q, k, v = tensors([[[[100.0, 1.5], [100.0, -0.75], [100.0, 2.25]]]], [[[[100.0, 0.5], [100.0, -1.25], [100.0, 1.75]]]],
                      [[[[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]]]])
    keep = _keep([True, True, True])
    scenario = _scenario(q, keep, ctx.device, extra=", scaled scores q.k / sqrt(d) of about 7071 that differ by O(1)")
    _judge(_output(sub, q, k, v, keep, scenario), q, k, v, keep, scenario)


@check("every query's softmax is stable on its own: scores near +900 in some rows and -900 in others", devices=("cpu", "cuda"), uses=ATTENTION)
def far_apart_rows(sub, ctx):
    cases = [  # small to large: head 0 near +900, head 1 near -900; then queries, heads and rows of either sign, mixed
        (torch.float64, [[[1], [-1]]], _keep([True])),
        (torch.float32, [[[1, 1, 1], [-1, -1, -1]], [[1, -1, 1], [-1, 1, -1]]], _keep([True, True, True], [False, True, True])),
        (torch.float64, [[[1, 1, 1], [-1, -1, -1]], [[1, -1, 1], [-1, 1, -1]]], _keep([True, True, True], [True, False, True])),
    ]
    for dtype, signs, keep in cases:
        q, k, v = far_apart(signs, dtype=dtype)
        scenario = _scenario(q, keep, ctx.device, extra=", d = 1, scores q.k of about +900 in some query rows and -900 in others")
        _judge(_output(sub, q, k, v, keep, scenario), q, k, v, keep, scenario)


@check("causality: keys and values at position j change no earlier output", uses=ATTENTION)
def causality(sub, ctx):
    rng = ctx.rng(3)
    q, k, v = normal(rng, *[(2, 2, 6, 4)] * 3)
    tiny_q, tiny_k, tiny_v = tensors([[[[1.0], [2.0]]]], [[[[1.0], [-1.0]]]], [[[[0.5], [-1.5]]]])
    cases = [(tiny_q, tiny_k, tiny_v, _keep([True, True]), 1, torch.tensor(3.0), torch.tensor(4.0), "k and v at position 1 set to 3 and 4")]
    for j in (1, 3, 5):  # small to large
        dk, dv = (torch.from_numpy(10 * rng.standard_normal(x[:, :, j].shape)) for x in (k, v))
        cases.append((q, k, v, _keep(ALL_REAL, RIGHT_PADDED), j, k[:, :, j] + dk, v[:, :, j] + dv, f"k and v at position {j} changed by up to ~30"))
    for q, k, v, keep, j, new_k, new_v, change in cases:
        k2, v2 = k.clone(), v.clone()
        k2[:, :, j], v2[:, :, j] = new_k, new_v
        # Only real queries before j are compared (the pad queries of row 1 start at 4).
        causality_probe(sub, "causal_attention", (q, k, v, keep), (q, k2, v2, keep), j, shape=q.shape, what=f"outputs at queries 0..{j - 1}",
                        scenario=f"{dtype_name(q.dtype)}, q/k/v shape {tuple(q.shape)}, keep {keep.tolist()}, {change}",
                        graded=lambda out, j=j, keep=keep: _only(out, _real(keep))[:, :, :j])


PAD_PARTS = ("outputs at real queries", "outputs at pad queries that see no key (must be zeros)")


def _padding_hint(sub, part, q, k, v, keep, pads_v):
    """The hint for the part that moved (`part`, the failure's `what`), from what the unchanged input's output shows, or
    from a control with only the pads' values changed (`pads_v`: do the pads get weight, or only enter the normalisation?)."""
    base = sub.control("causal_attention", q, k, v, keep)
    if not (torch.is_tensor(base) and base.shape == q.shape):
        base = None  # the control did not run through: no evidence from it
    if PAD_PARTS[1] in part:
        lead = "They moved with the pad values, so they put weight on pad positions."
        if base is None:
            return f"{lead} {NO_KEY_RULE}"
        evidence, remedy = _no_key_evidence(base, q, k, v, keep)
        return " ".join(part for part in (lead, evidence, NO_KEY_RULE, remedy or ZERO_THEM) if part)
    return (_diagnose(base, q, k, v, keep) if base is not None else "") or v_alone_hint(
        sub, "causal_attention", (q, k, v, keep), (q, k, pads_v, keep), lambda out: _only(out, _real(keep)),
        moved=("Changing only the pads' values moves the real queries too, so pad keys still get weight: hide them on the KEY axis (the last"
               " axis of the scores) with -inf before the softmax."),
        still=("Changing only the pads' values leaves the real queries unchanged, but changing their keys moves them: pad keys get no weight,"
               " yet their scores still enter the softmax's normalisation, as when the weights are masked after the softmax. Mask the pads'"
               " scores with -inf before the softmax."))


@check("padding: pad keys and values, even huge ones, change no real query", uses=ATTENTION)
def padding_probe(sub, ctx):
    rng = ctx.rng(4)
    q, k, v = normal(rng, *[(3, 2, 6, 4)] * 3)
    keep = _keep(LEFT_PADDED, WITH_HOLES, RIGHT_PADDED)
    cases = [  # small to large
        (*tensors([[[[1.0], [2.0], [-1.0], [0.5]]]], [[[[1.0], [-0.5], [1.5], [2.0]]]], [[[[0.5], [-1.5], [2.5], [1.0]]]]),
         _keep([False, True, False, True]), torch.full((1, 1, 4, 1), 1e6), torch.full((1, 1, 4, 1), -1e6), "set to +-1e6"),
        (q, k, v, keep, torch.from_numpy(1e6 * rng.standard_normal(k.shape)), torch.from_numpy(1e6 * rng.standard_normal(v.shape)),
         "set to random values of size ~1e6"),
    ]
    for q, k, v, keep, huge_k, huge_v, change in cases:
        pads = ~keep[:, None, :, None]
        k2, v2 = torch.where(pads, huge_k, k), torch.where(pads, huge_v, v)
        scenario = f"{dtype_name(q.dtype)}, q/k/v shape {tuple(q.shape)}, keep {keep.tolist()}; k and v at pad positions {change}"
        try:
            unchanged_probe(sub, "causal_attention", (q, k, v, keep), (q, k2, v2, keep), shape=tuple(q.shape), scenario=scenario,
                            graded=lambda out, keep=keep: dict(zip(PAD_PARTS, (_only(out, _real(keep)), _only(out, _sees_no_key(keep))))),
                            what="after changing the pad keys and values")
        except CheckFailed as failure:
            if failure.explain is None and "mutated" not in failure.details:
                failure.explain = partial(_padding_hint, sub, failure.details.get("what", ""), q, k, v, keep, v2)
            raise


@check("left padding and a fully padded row: zeros, no NaN, finite gradients", devices=("cpu", "cuda"), uses=ATTENTION)
def no_key_rows(sub, ctx):
    cases = [  # small to large
        (*tensors(TINY_Q, TINY_K, TINY_V, dtype=torch.float32), _keep([False, True, True], [False, False, False])),
        (*normal(ctx.rng(5), *[(3, 2, 6, 4)] * 3, dtype=torch.float32), _keep(LEFT_PADDED, ALL_PAD, ALL_REAL)),
    ]
    names = ctx.interface.params("causal_attention")
    for q, k, v, keep in cases:
        scenario = _scenario(q, keep, ctx.device)
        got = _output(sub, q, k, v, keep, scenario)
        _judge(got, q, k, v, keep, scenario, no_key_first=True)
        _, got_grads = sub.run(value_and_grad, "causal_attention", [q, k, v, keep], [0, 1, 2])
        _, want_grads = ctx.run_reference(value_and_grad, "causal_attention", [q, k, v, keep], [0, 1, 2])
        for i, got_grad, want_grad in zip(range(3), got_grads, want_grads):
            what = f"d(output)/d({names[i] if i < len(names) else 'qkv'[i]}) of causal_attention()"
            if got_grad is None:
                fail(f"{what} ({scenario}): no gradient reached this input; compute the output from it with torch operations")
            # The outputs were right (judged above), so NaN here is made inside and masked afterwards.
            assert_finite(got_grad, what=what, scenario=scenario,
                          hint="The outputs are right, so the NaN is made inside and hidden afterwards: zeroing NaN outputs"
                          " (torch.where, nan_to_num) still lets NaN flow back through the softmax. Rows that see no key"
                          " must never be NaN in the first place.")
            assert_close(got_grad, want_grad, what=what, scenario=scenario, dtype=q.dtype)


def _float16_overflow_inputs(rng, keep, d=64, c=56.0):
    """q, k of +-c entries where each query copies one visible real key: q.k of that pair is
    c^2 d ~ 2e5 (over float16's max 65504), scaled by 1/sqrt(d) ~ 2.5e4 (fits); the other scores are
    about 1/4 of it or less, so the softmax is one-hot up to ~e^-15000."""
    B, T = keep.shape
    H = 2
    signs = torch.from_numpy(rng.choice([-1.0, 1.0], size=(B, H, T, d)))
    k = c * signs
    q = torch.empty_like(k)
    for b in range(B):
        for t in range(T):
            visible = [s for s in range(t + 1) if keep[b, s]] or [t]  # no key: any finite q will do
            for h in range(H):
                q[b, h, t] = c * signs[b, h, visible[int(rng.integers(len(visible)))]]
    v = torch.from_numpy(rng.standard_normal((B, H, T, d)))
    return q.half(), k.half(), v.half()


def _float16_hint(sub, q, k, v, keep):
    """Control: the same inputs in float32. Finite there means float16 overflow; not finite there means another cause."""
    control = sub.control("causal_attention", q.float(), k.float(), v.float(), keep)
    if not (torch.is_tensor(control) and control.shape == q.shape):
        return ""  # the control did not run through: no evidence from it
    control = control.double()
    if bool(control.isfinite().all()):
        return ("The same inputs in float32 give finite outputs, so this is float16 overflow: the raw q @ k^T is over 65504"
                " here while q.k / sqrt(d) fits; scale q (or q and k) before the product, or compute the scores in float32.")
    lead = "The same inputs in float32 give inf/NaN too, so it is not float16 overflow."
    if bool(torch.where(_sees_no_key(keep), control.isnan(), False).any()):
        return _no_key_hint(control, q.float(), k.float(), v.float(), keep, lead=lead + " In float32 the NaN are at queries that see no key.")
    return lead


@check("float16: q.k overflows float16, q.k / sqrt(d) does not", devices=("cpu", "cuda"), uses=ATTENTION)
def float16_scores(sub, ctx):
    keep = _keep(ALL_REAL, LEFT_PADDED, WITH_HOLES)
    q, k, v = _float16_overflow_inputs(ctx.rng(6), keep)
    # Tiny first: d = 4, entries +-160, so q.k reaches 102400 (over 65504) and q.k / 2 = 51200 fits. Row 0: query 1
    # copies key 0; row 1 is left-padded: query 0 sees no key, query 1 copies key 1.
    c = 160.0
    tiny_q, tiny_k, tiny_v = tensors([[[[c, c, c, c], [c, c, c, c]]], [[[c, -c, c, c], [c, c, -c, c]]]],
                                     [[[[c, c, c, c], [c, c, c, -c]]], [[[c, -c, c, c], [c, c, -c, c]]]],
                                     [[[[0.5, -1.0, 2.0, 0.25], [-1.5, 1.0, 0.75, -2.0]]], [[[1.0, 0.25, -0.5, 2.0], [-0.75, 1.5, 0.5, -1.0]]]],
                                     dtype=torch.float16)
    cases = [
        (tiny_q, tiny_k, tiny_v, _keep([True, True], [False, True]),
         "entries of q and k are +-160 so q.k reaches 102400 while q.k / sqrt(4) = 51200 fits"),
        (q, k, v, keep, "entries of q and k are +-56 so q.k reaches 200704 while q.k / sqrt(64) = 25088 fits"),
    ]
    for q, k, v, keep, numbers in cases:
        scenario = _scenario(q, keep, ctx.device, extra=f", {numbers} (float16 max is 65504); nearly one-hot softmax")
        got = _output(sub, q, k, v, keep, scenario)
        with on_input(Call("causal_attention", q, k, v, keep)), explained(partial(_float16_hint, sub, q, k, v, keep)):  # not the control call
            assert_finite(got, what="causal_attention output", scenario=scenario)
        # Against the float32 inputs computed in float64, within a float16-softmax tolerance.
        _judge(got, q.float(), k.float(), v.float(), keep, scenario, rtol=1e-3, atol=1e-3)


@check("gradients match autograd.gradcheck in float64", devices=("cpu", "cuda"), uses=ATTENTION)
def gradients_float64(sub, ctx):
    cases = [  # small to large
        (*tensors(TINY_Q, TINY_K, TINY_V), _keep([True, True, True], [False, True, True])),
        (*normal(ctx.rng(7), *[(3, 2, 6, 3)] * 3), _keep(ALL_REAL, LEFT_PADDED, ALL_PAD)),
    ]
    for q, k, v, keep in cases:
        scenario = _scenario(q, keep, ctx.device)
        # The values first: when they are wrong, so is every gradient, and the value says why.
        _judge(_output(sub, q, k, v, keep, scenario), q, k, v, keep, scenario)
        gradcheck_float64(sub, ctx, "causal_attention", [q, k, v, keep], [0, 1, 2], scenario=scenario)


# -- lm_loss: tiny causal models, built inside the sandbox -----------------------------------------
VOCAB = 7

# The oracle as learner code (the failing inputs show it): row a of the embedding is the logits at a position holding
# token a, 30 on the next token a % 6 + 1 (a pad, 0, is followed by 1) and 0 elsewhere. Causal (position t looks at x[:, t]
# only), its loss is ~1e-12 when logits[:, t] are scored against x[:, t+1], ~30 per token against x[:, t] or a pad.
ORACLE_CODE = "torch.nn.Embedding(7, 7, _weight=30.0 * torch.eye(7, dtype=torch.float64)[torch.arange(7) % 6 + 1])"

# Logits of +-1e4 (as learner code): a position holding an odd token a has logits 1e4, 3 more on the next token a % 6 + 1; one
# holding an even token has -1e4 (and 3 more on its next one). Each position's log-softmax is finite and O(1); one max over
# every position (1e4 + 3) leaves the even positions' exponentials at exp(-2e4) = 0.
FAR_APART_CODE = ("torch.nn.Embedding(7, 7, _weight=1e4 * (-1.0) ** (torch.arange(7, dtype=torch.float64) + 1)[:, None]"
                  " + 3.0 * torch.eye(7, dtype=torch.float64)[torch.arange(7) % 6 + 1])")
MODEL_CODE = {"oracle": ORACLE_CODE, "far_apart": FAR_APART_CODE}


class TinyCausalModel(nn.Module):
    """Embedding -> h_t = e_t + 0.5 e_{t-1} -> linear; causal, and fine with zero positions."""

    def __init__(self, seed):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.embed = nn.Embedding(VOCAB, 5, _weight=torch.randn(VOCAB, 5, generator=generator, dtype=torch.float64))
        self.out = nn.Linear(5, VOCAB, dtype=torch.float64)
        with torch.no_grad():
            self.out.weight.copy_(torch.randn(VOCAB, 5, generator=generator, dtype=torch.float64))
            self.out.bias.copy_(torch.randn(VOCAB, generator=generator, dtype=torch.float64))

    def forward(self, ids):
        e = self.embed(ids)  # (B, T, 5)
        previous = F.pad(e, (0, 0, 1, 0))[:, :-1]
        return self.out(e + 0.5 * previous)


@functools.cache
def tiny_model_code():
    """TinyCausalModel as a failing input defines it: its own source, read in the judge, once (the lock: inspect is not
    thread-safe on Python 3.11, and the self-check grades in threads)."""
    with _SOURCE_LOCK:
        return ("import torch.nn.functional as F\nfrom torch import nn\n\n" f"VOCAB = {VOCAB}\n\n\n"
                + inspect.getsource(TinyCausalModel).replace('"""Embedding', '"""A small random float64 causal model: embedding', 1) + "\n\n")


_SOURCE_LOCK = threading.Lock()


def _model(model_kind, seed):
    """The oracle and the model of +-1e4 logits are built from their code itself, the code their failing inputs show."""
    return eval(MODEL_CODE[model_kind], {"torch": torch}) if model_kind in MODEL_CODE else TinyCausalModel(seed)


def _lm_code(x, pad_id, model_kind, seed=0, gradients=False):
    """lm_loss on this input as learner code; with `gradients`, backward() too and the gradients last."""
    if model_kind in MODEL_CODE:
        model = f"model = {MODEL_CODE[model_kind]}  # {'logit 30 on the next token' if model_kind == 'oracle' else 'logits of +-1e4'}"
    else:
        model = f"{tiny_model_code()}model = TinyCausalModel({seed})"
    call = str(Call("lm_loss", x, pad_id)).replace("lm_loss(", "lm_loss(model, ", 1)
    if not gradients:
        return Call.code(f"{model}\n{call}")
    return Call.code(f"{model}\nloss = {call}\nloss.backward()\n{{name: p.grad for name, p in model.named_parameters()}}")


@scenario(repro=lambda interface, x, pad_id, model_kind, seed=0: _lm_code(x, pad_id, model_kind, seed))
def lm_loss_scenario(module, x, pad_id, model_kind, seed=0):
    """Observations only: the loss, whether backward() worked, and each parameter's gradient."""
    model = _model(model_kind, seed).to(x.device)
    before = Snapshot(x=x)
    loss = module.lm_loss(model, x, pad_id)
    seen = {"type": type(loss).__name__, "changed": before.changed()}
    if not isinstance(loss, torch.Tensor):
        seen["value"] = loss if isinstance(loss, (int, float)) else None
        return seen
    seen["value"] = loss.detach().clone()  # on its device: the judge checks where it lives
    seen["backward_error"] = None
    if loss.numel() == 1:
        try:
            loss.backward()
        except RuntimeError as exc:  # reported, not judged: the check decides
            seen["backward_error"] = str(exc).strip().splitlines()[0][:300]
    seen["grads"] = {name: None if p.grad is None else p.grad.detach().cpu().clone() for name, p in model.named_parameters()}
    return seen


def _loss_observed(seen, x, pad_id, scenario, device, gradients):
    """The loss as a value, after the contract's rules: a scalar tensor that backpropagates, on the model's device,
    float64 like the model. `gradients` is the failing input to show when backward() raised."""
    if seen["type"] != "Tensor":
        fail(f"lm_loss ({scenario}): expected a scalar torch tensor, got {seen['type']} {seen.get('value')!r}; return a"
             " tensor built from the model's logits so that loss.backward() reaches the parameters")
    if seen["value"].numel() != 1:
        fail(f"lm_loss ({scenario}): expected a scalar tensor, got shape {tuple(seen['value'].shape)}; average the"
             " per-token losses into one number")
    fail_if_changed(seen["changed"], who="lm_loss", where=scenario, fix="leave the caller's token ids unchanged")
    with on_input(gradients):  # shown with backward() and the gradients, where the failure is
        _backward_worked(seen, scenario, no_targets=not bool((x[:, 1:] != pad_id).any()))
    assert_returns_like(seen["value"], x, what="loss", scenario=scenario, device=device)
    assert_keeps_precision(seen["value"], torch.float64, what="loss of a float64 model", scenario=scenario)
    return seen["value"].reshape(())


def _backward_worked(seen, scenario, no_targets):
    """backward() on the loss worked; when it raised for a loss cut off from autograd, the hint says where that happens on this
    input: the 0.0 of a batch without targets (a fresh tensor), or the computation itself."""
    error = seen["backward_error"]
    if error is not None:
        why = ""
        if "does not require grad" in error:
            why = (" The loss must be part of the autograd graph, the 0.0 included (a fresh torch.tensor(0.0) is not): e.g. divide the summed"
                   " loss by the count of real targets clamped to at least 1." if no_targets else
                   " The loss must be part of the autograd graph: compute it from the model's logits with torch operations (no .item(),"
                   " .detach(), torch.tensor(...) of a value, or torch.no_grad() on the way).")
        fail(f"lm_loss ({scenario}): loss.backward() raised: {error}.{why}")


def _lm_variants(x, pad_id, model_kind, seed):
    """(hint, loss) for each known mistake of lm_loss, computed here with the same model."""
    model = _model(model_kind, seed)
    with torch.no_grad():
        logits = model(x)  # causal: logits[:, :-1] are what model(x[:, :-1]) gives
    inputs, targets = x[:, :-1], x[:, 1:]
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2), targets, reduction="none")
    real = targets != pad_id
    unshifted = F.cross_entropy(logits.transpose(1, 2), x, reduction="none")
    yield ("Your loss equals the one for scoring the logits at position t against x[:, t], the token the model has just"
           " seen: score them against the next token x[:, t+1] (targets x[:, 1:] for the logits of x[:, :-1]).",
           float((unshifted * (x != pad_id)).sum() / (x != pad_id).sum().clamp(min=1)))
    yield (f"Your loss equals the mean over every target, pads included: leave out the targets equal to pad_id ({pad_id}),"
           " in the sum and in the count.", float(per_token.mean()) if per_token.numel() else float("nan"))
    by_input = inputs != pad_id
    yield ("Your loss equals the one that leaves out the positions whose INPUT x[:, t] is pad_id: leave out those whose"
           " TARGET x[:, t+1] is pad_id (the first real token after left padding is a target, a pad after the last real"
           " token is not).", float((per_token * by_input).sum() / by_input.sum().clamp(min=1)))
    yield ("Your loss equals the mean of each row's mean: average over the real targets of all rows together, each"
           " target weighing the same whatever its row's length.",
           float(((per_token * real).sum(dim=1) / real.sum(dim=1).clamp(min=1)).mean()) if per_token.numel() else float("nan"))
    shifted = logits[:, :-1] - logits[:, :-1].amax() if per_token.numel() else logits[:, :-1]
    log_probs = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
    yield ("Your loss equals the one of a log-softmax written out with one max over every position (logits - logits.max()): a position"
           " whose logits all lie far below that max gets log(0) (here every position after an even token). Subtract each position's own max"
           " (amax(dim=-1, keepdim=True)), or use F.cross_entropy / torch.logsumexp.",
           float(-(log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * real).sum() / real.sum().clamp(min=1)))


def _loss_hint(got, want, x, pad_id, model_kind, seed=0):
    """A hint for a wrong loss, from the value only: NaN, a known mistake's value, or (for the oracle) what it implies."""
    got, want = float(got), float(want)
    if math.isnan(got):
        if not bool((x[:, 1:] != pad_id).any()):
            return ("Your loss is NaN: with no real target a mean over them is 0/0 (F.cross_entropy's default mean with"
                    " ignore_index does this). The contract asks for 0.0: divide the summed loss by the number of real"
                    " targets clamped to at least 1.")
        return ""
    known = mistake_hint(got, _lm_variants(x, pad_id, model_kind, seed), say="{}", join=JOIN,
                         same=lambda a, b: a == b or abs(a - b) <= 1e-6 * max(1.0, abs(b)), is_right=lambda value: not abs(value - want) > 1e-6 * max(1.0, abs(want)))
    if known:
        return known
    if model_kind == "oracle" and got > 1.0:
        return (f"The oracle puts logit 30 on the true next token, so each target costs ~1e-12 when it is x[:, t+1] and ~30"
                f" otherwise: your {got:.3g} means about {min(got / 30, 1):.0%} of what you average are not next tokens,"
                " or not real ones.")
    return ""


def _judge_loss(sub, ctx, x, pad_id, model_kind, scenario, seed=0):
    """The learner's loss against the reference's (with a hint from its value); returns both observations."""
    seen = sub.run(lm_loss_scenario, x, pad_id, model_kind, seed=seed)
    want = ctx.run_reference(lm_loss_scenario, x, pad_id, model_kind, seed=seed)
    got = _loss_observed(seen, x, pad_id, scenario, ctx.device, _lm_code(x, pad_id, model_kind, seed, gradients=True))
    tolerance = {"atol": 1e-6, "rtol": 0.0} if model_kind == "oracle" else {"atol": 1e-12, "rtol": 0.0} if float(want["value"]) == 0 else {"dtype": torch.float64}
    with explained(partial(_loss_hint, got, want["value"], x, pad_id, model_kind, seed)):
        assert_close(got, want["value"], what="loss", scenario=scenario, **tolerance)
    return seen, want


@check("lm_loss: an oracle model scores ~0 only under the one-step shift", devices=("cpu", "cuda"), uses=LOSS)
def lm_oracle(sub, ctx):
    # Rows follow the oracle's language; the second case is padded on the right with 0. Small to large.
    for x in (torch.tensor([[3, 4, 5]]), torch.tensor([[3, 4, 5, 6, 1, 2], [6, 1, 2, 0, 0, 0], [1, 2, 3, 4, 5, 0]])):
        scenario = (f"vocabulary {VOCAB}, pad_id 0, x = {x.tolist()}, a float64 model whose logits at position t are right"
                    f" for x[:, t+1]; {ctx.device}")
        _judge_loss(sub, ctx, x, 0, "oracle", scenario)


def _torch_cross_entropy(x, pad_id, seed):
    """Calibration: F.cross_entropy with ignore_index, the textbook form."""
    with torch.no_grad():
        logits = TinyCausalModel(seed)(x[:, :-1])
        return float(F.cross_entropy(logits.transpose(1, 2), x[:, 1:], ignore_index=pad_id))


@check("lm_loss: pad targets are left out of the mean", devices=("cpu", "cuda"), uses=LOSS)
def lm_pad_targets(sub, ctx):
    pad_id = 3
    # Small to large: right padding; left padding and rows of different lengths (a real first token after
    # left pads IS a target, the pads are not); then all of it, with a pad_id that is not 0.
    cases = [
        torch.tensor([[1, 5, 2, 3]]),
        torch.tensor([[3, 3, 4, 0], [2, 6, 1, 5]]),
        torch.tensor([[1, 5, 2, 6, 3, 3, 3], [3, 3, 4, 0, 1, 2, 5], [2, 2, 6, 0, 4, 1, 5], [0, 6, 3, 3, 3, 3, 3]]),
    ]
    for x in cases:
        scenario = f"vocabulary {VOCAB}, pad_id {pad_id}, x = {x.tolist()}, a small random causal float64 model; {ctx.device}"
        seen, want = _judge_loss(sub, ctx, x, pad_id, "tiny", scenario, seed=11)
        calibration = _torch_cross_entropy(x, pad_id, seed=11)
        if abs(float(want["value"]) - calibration) > 1e-9:
            raise GraderDefect(f"reference lm_loss {float(want['value'])} disagrees with F.cross_entropy {calibration}")
        with on_input(_lm_code(x, pad_id, "tiny", 11, gradients=True)):
            for name, want_grad in want["grads"].items():
                got_grad = seen["grads"].get(name)
                if got_grad is None:
                    fail(f"lm_loss ({scenario}): no gradient reached the model parameter {name!r} after loss.backward()")
                assert_close(got_grad, want_grad, what=f"gradient of the loss w.r.t. {name}", scenario=scenario, dtype=torch.float64)


@check("lm_loss: logits of +-1e4 give the exact loss (each position's log-softmax stable on its own)", devices=("cpu", "cuda"), uses=LOSS)
def lm_far_apart_logits(sub, ctx):
    # Odd and even tokens alternate, so the positions' largest logits alternate between 1e4 and -1e4; the second case pads with 2.
    for x, pad_id in ((torch.tensor([[1, 2, 3]]), 0), (torch.tensor([[1, 2, 3, 4, 5, 6], [4, 5, 6, 1, 2, 2]]), 2)):
        scenario = f"vocabulary {VOCAB}, pad_id {pad_id}, x = {x.tolist()}, a float64 model whose logits are +1e4 after odd tokens and -1e4 after even ones; {ctx.device}"
        _judge_loss(sub, ctx, x, pad_id, "far_apart", scenario)


@check("lm_loss: no targets (all pads, or T = 1) give a 0.0 that backpropagates", devices=("cpu", "cuda"), uses=LOSS,
       edge="T = 1 has no targets (0.0). Returns a scalar tensor that backpropagates to the model's parameters, the 0.0 included.")
def lm_no_targets(sub, ctx):
    cases = [  # small to large
        (torch.tensor([[4], [1], [6]]), 0, "T = 1, x shape (3, 1), pad_id 0, nothing to predict"),
        (torch.tensor([[2, 2, 2, 2], [2, 2, 2, 2]]), 2, "every token is the pad (pad_id 2), x shape (2, 4)"),
        (torch.tensor([[2, 2, 2, 2], [5, 2, 2, 2]]), 2, "every TARGET is the pad (pad_id 2), x shape (2, 4)"),
    ]
    for x, pad_id, what in cases:
        scenario = f"{what}, a small random causal float64 model; {ctx.device}"
        seen, _ = _judge_loss(sub, ctx, x, pad_id, "tiny", scenario, seed=12)
        with on_input(_lm_code(x, pad_id, "tiny", 12, gradients=True)):
            for name, grad in seen["grads"].items():
                if grad is not None:  # a parameter the graph never reached counts as a zero gradient
                    assert_close(grad, torch.zeros_like(grad), what=f"gradient w.r.t. {name}", scenario=scenario,
                                 atol=0.0, rtol=0.0, hint="A loss of 0.0 must give zero gradients.")
