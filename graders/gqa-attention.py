"""Grader for `gqa-attention`: grouped-query attention, and the size of a KV cache.

Expected outputs come from F.scaled_dot_product_attention(enable_gqa=True) in float64 on the CPU (is_causal=True for the
causal cases, graded with T == S only); for Hkv = Hq it is checked against plain multi-head SDPA, for Hkv = 1 against SDPA
over one key-value head broadcast to every query head. kv_cache_bytes is compared exactly, as an int.
"""

from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from mlprep.grading import (GraderDefect, as_float, as_int, assert_close, check, dtype_name, expect_raises, explained, fail, gradcheck_float64,
                            mistake_hint, raised_by, shrink_on_failure, tolerance_for)
from mlprep.grading.attention import (JOIN, SHIFT_MISTAKES, attend, attention_output, causality_probe, f64, far_apart, float32_hint, known_mistake, normal,
                                      small_values, tensors)

DEVICES = ("cpu", "cuda")
ATTENTION, CACHE = ("gqa",), ("kv_cache_bytes",)


# -- Expectations and known mistakes (judge side, float64 on the CPU) ------------------------------
def _expected(q, k, v, causal=False):
    q, k, v = f64(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


def _attend(q, k, v, causal=False, *, grouping="interleave", mask=None, **mistake):
    """Attention as a mistaken implementation computes it: the kv heads tiled (grouping "tile": query head h uses kv head
    h % Hkv), another mask ("tril", "triu", "strict" = tril without the diagonal, "none"; by default "tril" when causal),
    or one of attend's mistakes (scale, dim, float32_softmax)."""
    group = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(group, dim=1) if grouping == "interleave" else t.repeat(1, group, 1, 1) for t in f64(k, v))
    ones = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool)
    mask = mask or ("tril" if causal else "none")
    return attend(q, k, v, None if mask == "none" else {"tril": ones.tril(), "triu": ones.triu(), "strict": ones.tril(-1)}[mask], **mistake)


def _mistakes(q, k, v, causal):
    """(hint, output) of each known mistake, computed lazily."""
    d, n_q, n_kv = q.shape[-1], q.shape[1], k.shape[1]
    variant = partial(_attend, q, k, v, causal)
    yield (f"Your output is what query head h attending with key-value head h % Hkv gives (k.repeat, or an expand and reshape"
           f" that tiles the {n_kv} kv heads {n_q // n_kv} times over): consecutive query heads share a kv head, h // (Hq // Hkv);"
           " use k.repeat_interleave(Hq // Hkv, dim=1) (as F.scaled_dot_product_attention(enable_gqa=True) does).",
           lambda: variant(grouping="tile"))
    yield ("Your output is what scores without the 1 / sqrt(d) scale give: use q k^T / sqrt(d).", lambda: variant(scale=1.0))
    yield (f"Your output is what scores divided by d = {d} instead of sqrt(d) give: use q k^T / sqrt(d).", lambda: variant(scale=1.0 / d))
    yield ("Your output is what a softmax over the query axis (dim=-2) gives: normalise each query's scores over the keys, the"
           " last axis (dim=-1).", lambda: variant(dim=-2))
    if causal:
        yield ("Your output is what a mask keeping the upper triangle (triu) gives, the future: query t sees keys 0..t (tril).",
               lambda: variant(mask="triu"))
        yield ("Your output is what a mask without the diagonal (tril(diagonal=-1)) gives: query t sees keys 0..t, itself included.",
               lambda: variant(mask="strict"))
        yield "Your output is what attention without any mask gives: with causal=True, query t sees keys 0..t only.", lambda: variant(mask="none")
    elif q.shape[-2] > 1:
        yield ("Your output is what a causal mask gives, but causal is False here (the default): every query sees every key.",
               lambda: variant(mask="tril"))
    for shift, hint in SHIFT_MISTAKES.items():
        yield hint, partial(variant, shift=shift)


def _diagnose(got, q, k, v, causal):
    """A hint from the evidence: the known mistake whose output `got` equals, or float32-sized errors on float64 inputs; else ""."""
    want = _expected(q, k, v, causal)
    rtol, atol = (10 * t for t in tolerance_for(q.dtype))
    return (known_mistake(got, _mistakes(q, k, v, causal), want, rtol=rtol, atol=atol)
            or float32_hint(got, want, lambda: _attend(q, k, v, causal, float32_softmax=True), q.dtype))


# -- Calling and judging gqa -----------------------------------------------------------------------
def _qkv(rng, B, n_q, n_kv, T, S, d, dtype=torch.float64):
    return normal(rng, (B, n_q, T, d), (B, n_kv, S, d), (B, n_kv, S, d), dtype=dtype, per=8)


def _describe(q, k, causal, device, extra=""):
    n_q, n_kv = q.shape[1], k.shape[1]
    kind = "multi-head" if n_q == n_kv else "multi-query" if n_kv == 1 else f"groups of {n_q // n_kv}"
    return f"{dtype_name(q.dtype)}, q {tuple(q.shape)}, k and v {tuple(k.shape)}: Hq = {n_q}, Hkv = {n_kv} ({kind}), causal={causal}{extra}, {device}"


def _judge(sub, q, k, v, causal, scenario, want=None):
    """gqa's output after the common rules (causal=False is passed by leaving it out), against SDPA or `want`."""
    got = attention_output(sub, "gqa", q, k, v, what="gqa output", shape=q.shape, layout="(B, Hq, T, d)", scenario=scenario,
                           **({"causal": True} if causal else {}))
    with explained(partial(_diagnose, got, q, k, v, causal)):
        assert_close(got, _expected(q, k, v, causal) if want is None else want, what="gqa output", scenario=scenario, dtype=q.dtype)


# B = 1, Hq = 4, Hkv = 2, T = 2, S = 3, d = 2: exact numbers, shown in full when a check fails. The two kv
# heads differ, so query heads 1 and 2 tell the grouping h // 2 from h % 2.
TINY = tensors([[[[1.0, 0.5], [-0.5, 1.5]], [[0.25, -1.0], [1.0, 1.0]], [[-1.5, 0.5], [0.5, -0.25]], [[2.0, -0.5], [0.0, 1.0]]]],
               [[[[1.0, -1.0], [0.5, 0.5], [-1.0, 2.0]], [[-0.5, 1.5], [2.0, 0.25], [0.75, -1.25]]]],
               [[[[1.0, 2.0], [-1.0, 0.5], [0.25, -1.5]], [[3.0, -2.0], [0.5, 1.0], [-0.75, 0.25]]]])
# B = 1, Hq = 2, Hkv = 1, T = S = 3, d = 2, for the causal mask.
TINY_CAUSAL = tensors([[[[1.0, 0.5], [-0.5, 1.5], [2.0, -1.0]], [[0.25, -1.0], [1.0, 1.0], [-1.5, 0.5]]]],
                      [[[[1.0, -1.0], [0.5, 0.5], [-1.0, 2.0]]]], [[[[1.0, 2.0], [-1.0, 0.5], [0.25, -1.5]]]])


def _small_cases():
    """Hypothesis strategy for shrinking: ((B, Hkv, G, T, S, d, causal), (q, k, v)) with small integer values."""
    from hypothesis import strategies as st

    def of_shape(shape):
        B, n_kv, group, T, S, d, causal = shape
        S = T if causal else S
        return st.tuples(st.just((B, n_kv, group, T, S, d, causal)), small_values(B * n_kv * group * T * d, B * n_kv * S * d, B * n_kv * S * d))

    return st.tuples(*(st.integers(1, hi) for hi in (2, 3, 3, 3, 3, 2)), st.booleans()).flatmap(of_shape)


def _verify_small(sub, case):
    (B, n_kv, group, T, S, d, causal), (q, k, v) = case
    q = torch.tensor(q, dtype=torch.float64).reshape(B, n_kv * group, T, d)
    k, v = (torch.tensor(x, dtype=torch.float64).reshape(B, n_kv, S, d) for x in (k, v))
    _judge(sub, q, k, v, causal, _describe(q, k, causal, sub.device))


# -- Checks ----------------------------------------------------------------------------------------
@check("matches F.scaled_dot_product_attention(enable_gqa=True)", devices=DEVICES, uses=ATTENTION)
def matches_sdpa(sub, ctx):
    rng = ctx.rng(1)
    cases = [TINY, _qkv(rng, 2, 8, 2, 5, 7, 4, torch.float32), _qkv(rng, 2, 6, 3, 4, 6, 8), _qkv(rng, 1, 12, 4, 3, 9, 16)]  # small to large
    with shrink_on_failure(sub, _small_cases, lambda case: _verify_small(sub, case)):
        for q, k, v in cases:
            _judge(sub, q, k, v, False, _describe(q, k, False, ctx.device))


@check("Hkv = Hq is multi-head attention, Hkv = 1 is multi-query attention", devices=DEVICES, uses=ATTENTION)
def mha_and_mqa(sub, ctx):
    rng = ctx.rng(2)
    # Small (shown in full) then larger; Hq = Hkv = 2, 4 and Hq = 3, 4 over one kv head.
    for causal, (B, n_q, T, d) in ((False, (1, 2, 3, 2)), (True, (1, 2, 3, 2)), (False, (2, 4, 5, 8)), (True, (2, 4, 5, 8))):
        q, k, v = _qkv(rng, B, n_q, n_q, T, T, d)
        mha = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # plain multi-head attention
        q1, k1, v1 = _qkv(rng, B, n_q + 1, 1, T, T, d)
        mqa = F.scaled_dot_product_attention(q1, k1.expand(-1, n_q + 1, -1, -1), v1.expand(-1, n_q + 1, -1, -1), is_causal=causal)  # one kv head for all
        for inputs, want in (((q, k, v), mha), ((q1, k1, v1), mqa)):
            if not torch.allclose(want, _expected(*inputs, causal), rtol=1e-12, atol=1e-12):
                raise GraderDefect("SDPA with enable_gqa=True disagrees with plain SDPA on multi-head or multi-query inputs")
            _judge(sub, *inputs, causal, _describe(inputs[0], inputs[1], causal, ctx.device), want=want)


@check("causal=True (T == S): query t sees keys 0..t", devices=DEVICES, uses=ATTENTION)
def causal_mask(sub, ctx):
    rng = ctx.rng(3)
    for q, k, v in (TINY_CAUSAL, _qkv(rng, 2, 6, 2, 5, 5, 4), _qkv(rng, 1, 8, 4, 7, 7, 8, torch.float32)):  # small to large
        _judge(sub, q, k, v, True, _describe(q, k, True, ctx.device))


@check("causal=True: the keys and values at position j change no output before j", uses=ATTENTION)
def causality_probe_check(sub, ctx):
    rng = ctx.rng(4)
    for (q, k, v), j in ((TINY_CAUSAL, 1), (_qkv(rng, 2, 6, 3, 6, 6, 4), 3)):
        k2, v2 = k.clone(), v.clone()
        k2[:, :, j:] += 10.0
        v2[:, :, j:] -= 10.0
        causality_probe(sub, "gqa", (q, k, v), (q, k2, v2), j, kwargs={"causal": True}, shape=q.shape, what=f"outputs at queries 0..{j - 1}",
                        scenario=_describe(q, k, True, ctx.device, extra=f"; k and v at positions {j}.. moved by +-10"),
                        moved_by_v=("Changing only v at positions {j}.. moves them as well, so later keys get weight from earlier queries: mask the"
                                    " scores of keys after the query with -inf before the softmax (tril keeps keys 0..t)."),
                        moved_by_k=("Changing only v at positions {j}.. leaves them unchanged, but changing k moves them: later keys get no weight,"
                                    " yet their scores still enter the softmax's normalisation, as when the weights are masked after the softmax."
                                    " Mask the scores with -inf before the softmax."))


@check("every query's softmax is stable on its own: scores near +900 in some rows and -900 in others", devices=DEVICES, uses=ATTENTION)
def far_apart_rows(sub, ctx):
    cases = [  # small to large: query head 0 near +900, head 1 near -900; then queries, heads, groups and rows of either sign, mixed
        (torch.float64, [[[1], [-1]]], 1, False),
        (torch.float32, [[[1, 1, 1], [-1, -1, -1], [1, -1, 1], [-1, 1, -1]], [[-1, -1, -1], [1, 1, 1], [-1, 1, 1], [1, -1, -1]]], 2, True),
        (torch.float64, [[[1, 1, 1], [-1, -1, -1], [1, -1, 1], [-1, 1, -1]], [[-1, -1, -1], [1, 1, 1], [-1, 1, 1], [1, -1, -1]]], 2, False),
    ]
    for dtype, signs, n_kv, causal in cases:
        q, k, v = far_apart(signs, dtype=dtype, kv_heads=n_kv)
        _judge(sub, q, k, v, causal, _describe(q, k, causal, ctx.device, extra=", d = 1, scores q.k of about +900 in some query rows and -900 in others"))


@check("float64 inputs are computed in float64", devices=DEVICES, uses=ATTENTION)
def float64_precision(sub, ctx):
    # q.k / sqrt(2) is about 7071 for every pair and the pairs differ by O(1): float32 spaces numbers of that size
    # 2^-11 = 4.9e-4 apart, so a float32 softmax moves the weights by ~1e-4; float64 is exact to ~1e-12.
    q, k, v = tensors([[[[100.0, 1.5], [100.0, -0.75], [100.0, 2.25]], [[100.0, -1.0], [100.0, 0.5], [100.0, 1.25]]]],
                      [[[[100.0, 0.5], [100.0, -1.25], [100.0, 1.75]]]], [[[[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]]]])
    for causal in (False, True):
        _judge(sub, q, k, v, causal, _describe(q, k, causal, ctx.device, extra=", scaled scores of about 7071 that differ by O(1)"))


# What raising something else shows: an assert (the right check, the wrong exception), a shape error further on (no check at all), or
# another exception raised on purpose.
RAISED_HINTS = {"AssertionError": "an assert is the right check with the wrong exception (and python -O skips it): raise ValueError instead",
                "RuntimeError": ("check q.shape[1] % k.shape[1] first and raise ValueError with a clear message (Hq // Hkv silently rounds down, and"
                                 " the shapes clash further on)")}
RAISED_HINTS["IndexError"] = RAISED_HINTS["RuntimeError"]


@check("Hq not a multiple of Hkv raises ValueError", uses=ATTENTION,
       edge="If Hq is not a multiple of Hkv (Hq % Hkv != 0, e.g. 6 query heads over 4 key-value heads, or 2 over 4), raise ValueError.")
def indivisible_heads(sub, ctx):
    rng = ctx.rng(6)
    for n_q, n_kv in ((3, 2), (6, 4), (2, 4)):
        record = sub.run(raised_by, "gqa", *_qkv(rng, 1, n_q, n_kv, 2, 2, 4))
        raised = record.get("raised") if isinstance(record, dict) else None
        expect_raises(record, "ValueError", what=f"gqa with Hq = {n_q} query heads, Hkv = {n_kv} key-value heads ({n_q} % {n_kv} = {n_q % n_kv})",
                      raised_hint=RAISED_HINTS.get(raised, "the check is there but raises another type: raise ValueError (or a subclass of it)"),
                      returned_hint="the heads cannot be split into equal groups")


@check("gradients match autograd.gradcheck in float64", devices=DEVICES, uses=ATTENTION)
def gradients(sub, ctx):
    rng = ctx.rng(5)
    for (q, k, v), causal in ((TINY, False), (_qkv(rng, 2, 4, 2, 3, 3, 2), True)):
        scenario = _describe(q, k, causal, ctx.device)
        _judge(sub, q, k, v, causal, scenario)  # the values first: when they are wrong, so is every gradient
        gradcheck_float64(sub, ctx, "gqa", [q, k, v], [0, 1, 2], scenario=scenario, kwargs={"causal": True} if causal else None)


# -- kv_cache_bytes --------------------------------------------------------------------------------
CACHE_CASES = [  # (what, batch, seq_len, n_layers, n_kv_heads, head_dim, bytes_per_elem), small to large
    ("one token, one layer, one kv head of size 1, 1 byte per number", 1, 1, 1, 1, 1, 1),
    ("distinct primes, so that a missing or repeated factor shows", 3, 5, 7, 11, 13, 17),
    ("Llama-2-7B shape (multi-head: 32 kv heads), 4096 tokens, float16", 1, 4096, 32, 32, 128, 2),
    ("Llama-2-70B shape (GQA: 8 kv heads), 4096 tokens, float16", 1, 4096, 80, 8, 128, 2),
    ("126 layers, 8 kv heads, 128k tokens, batch 64, float32: 8.7 TB", 64, 131072, 126, 8, 128, 4),
]
CACHE_ARGS = ("batch", "seq_len", "n_layers", "n_kv_heads", "head_dim", "bytes_per_elem")


@check("kv_cache_bytes = 2 (K and V) x batch x seq_len x n_layers x n_kv_heads x head_dim x bytes_per_elem", uses=CACHE)
def cache_size(sub, ctx):
    for what, *args in CACHE_CASES:
        want = 2 * int(np.prod(args, dtype=object))
        got = sub.call("kv_cache_bytes", *args)
        got = got if isinstance(got, int) and not isinstance(got, bool) else as_float(got, what=f"kv_cache_bytes ({what})")  # the type: cache_is_an_int
        if got != want:
            known = {"Yours is exactly half: the cache holds both K and V for every token, layer and kv head (a factor 2).": want // 2,
                     "Yours is the number of cached elements, not bytes: multiply by bytes_per_elem.": want // args[5]}
            setting = ", ".join(f"{name}={value}" for name, value in zip(CACHE_ARGS, args))
            fail(f"kv_cache_bytes ({what}; {setting}): expected {want:,} bytes, got {got:,}. {mistake_hint(got, known, want=want, rtol=0, atol=0, say='{}', join=JOIN)}"
                 .strip(), expected=want, got=got)


@check("kv_cache_bytes returns an int", uses=CACHE,
       edge="It must be an int (a Python int; a NumPy integer or an integer 0-d tensor is accepted too), exact: no float arithmetic on the way"
            " (settled here: a float such as 1.34e9 is rejected).")
def cache_is_an_int(sub, ctx):
    for what, *args in CACHE_CASES:
        as_int(sub.call("kv_cache_bytes", *args), what=f"kv_cache_bytes ({what})",
               hint="A size in bytes is a whole number: keep the arithmetic in ints (no /, no float constants such as 2.0).")
