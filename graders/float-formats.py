"""Checks for `float-formats`: round_to_bf16 bit for bit against torch's cast, format_info against torch.finfo.

Results are compared as bit patterns (.view(np.uint32)), so -0.0 differs from +0.0; where torch gives a
NaN, any NaN passes. Each check's cases are float32 bit patterns of one class (ties, subnormals, NaN...).
A wrong element is tried again alone: if it fails alone, that one-element array, written from its bits,
is the failing input. A hint names what the wrong bits are (the truncated value, the neighbour away from
zero at a tie, inf for a NaN...), and for format_info the value a known mistake gives.
"""

import math
from functools import partial

import numpy as np
import torch

from mlprep.grading import (Call, CheckFailed, as_float, assert_dtype, assert_returns_like, assert_shape, check, control_value, expect_raises, expect_record, fail,
                            inputs_from_code, inputs_unchanged, matching_mistakes, mistake_hint, on_input, raised_by, scenario, shrink_on_failure)

FINFO_RTOL = 1e-5  # a constant typed from torch.finfo's 6-digit printout passes; a factor 2 is far outside
NAMES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
KEYS = ("max", "tiny", "eps", "exponent_bits", "mantissa_bits")
UNKNOWN_NAMES = ("float64", "fp16", "int8")
BF16_MAX = 0x7F7F0000
SHOWN_IN_FULL = 20  # elements written out, as hex bit patterns, in a failing input


# -- bits, values and how they read -----------------------------------------------------------------
def as_bits(values):
    """A uint32 array of bit patterns from Python ints."""
    return np.array([v & 0xFFFFFFFF for v in values], dtype=np.uint32)


def from_floats(values):
    """The bit patterns of float32 values."""
    return np.array(values, dtype=np.float32).view(np.uint32)


def torch_bf16(x):
    """torch's float32 -> bfloat16 -> float32 cast of x, as a float32 NumPy array of x's shape."""
    return torch.from_numpy(np.ascontiguousarray(x).reshape(x.shape).copy()).to(torch.bfloat16).float().numpy()


def hex32(b):
    return f"0x{int(b):08X}"


def value_text(b):
    """A float32 bit pattern as its value and bits: '1.0039062 (0x3F808000)'."""
    value = np.array([b], dtype=np.uint32).view(np.float32)[0]
    return f"{value!s} ({hex32(b)})" if not np.isnan(value) else f"NaN ({hex32(b)})"


def bits_call(bits, shape=None, how="round_to_bf16(x)"):
    """Python that builds the float32 array x with these bit patterns (exact, NaN payloads and -0.0 included), then `how`."""
    flat = np.asarray(bits, dtype=np.uint32).reshape(-1)
    text = f"np.array([{', '.join(hex32(b) for b in flat)}], dtype=np.uint32).view(np.float32)"
    if shape is not None and tuple(shape) != flat.shape:
        text += f".reshape({tuple(shape)})" if shape else ".reshape(())"
    values = ", ".join(str(v) for v in flat.view(np.float32)[:6]) + (", ..." if flat.size > 6 else "")
    return Call.code(f"x = {text}  # [{values}]\n{how}")


def kind_of(b):
    """What a float32 bit pattern is, in words, where its value alone does not say it ('' otherwise)."""
    b = int(b)
    mag = b & 0x7FFFFFFF
    low, lsb = b & 0xFFFF, (b >> 16) & 1
    if mag > 0x7F800000:
        return "a NaN whose payload sits only in the low 16 bits" if mag < 0x7F810000 else "a NaN"
    if mag in (0, 0x7F800000):
        return ""
    where = "a subnormal" if mag < 0x00800000 else ""
    if low == 0x8000:
        return f"{where or 'a value'} exactly halfway between two bfloat16 values, the lower one {'odd' if lsb else 'even'}"
    if mag >= 0x7F7F8000:
        return "past the halfway point above bfloat16's max"
    return where


def rule_at(xb, wb):
    """How the rounding goes at this input, in words (true whatever the mistake was)."""
    xb, wb = int(xb), int(wb)
    x_mag, w_mag = xb & 0x7FFFFFFF, wb & 0x7FFFFFFF
    low, lsb = xb & 0xFFFF, (xb >> 16) & 1
    if x_mag > 0x7F800000:
        return ("a NaN must come back as a NaN (any NaN), also one whose payload sits only in the low 16 bits, which rounding clears or"
                " carries into the exponent: test for NaN first (np.isnan(x))")
    if x_mag == 0x7F800000 or x_mag == 0:
        return "zeros and infinities are bfloat16 values already: they come back unchanged, sign included"
    if low == 0x8000:
        rule = (f"at an exact tie, ties-to-even takes the neighbour whose last kept bit is 0: here the {'upper' if lsb else 'lower'} one"
                + (", and the carry runs into the exponent: inf" if w_mag == 0x7F800000 else ""))
    elif low > 0x8000:
        rule = "its low 16 bits are above 0x8000, past halfway, so it rounds up in magnitude" + (
            ", and the carry runs into the exponent: inf" if w_mag == 0x7F800000 else "")
    else:
        rule = "its low 16 bits are below 0x8000, short of halfway, so it rounds down in magnitude (toward zero)"
    return rule + ("; a float32 subnormal rounds like any other value" if x_mag < 0x00800000 else "")


# What each known mistake gives for the float32 bits b (None where it gives the right answer or does not apply).
def _mistakes(b):
    mag, sign = b & 0x7FFFFFFF, b & 0x80000000
    nan = mag > 0x7F800000
    return {
        "truncation": b & 0xFFFF0000,  # a NaN too: with the payload in the low 16 bits only, it becomes inf
        "ties away from zero": None if nan else (b + 0x8000) & 0xFFFF0000,
        "ties toward zero": None if nan else (b + 0x7FFF) & 0xFFFF0000,
        "no NaN case": ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000) & 0xFFFFFFFF if nan else None,
        "inf as NaN": 0x7FC00000 if mag == 0x7F800000 else None,
        "saturated": sign | 0x7F7F0000 if 0x7F7F8000 <= mag < 0x7F800000 else None,
        "flushed": sign if 0 < mag < 0x00800000 else None,
    }


CAUSES = {
    "truncation": ("this is x with its low 16 bits cleared, i.e. rounded toward zero (truncation): round to nearest by adding 0x7FFF plus"
                   " the lowest kept bit before clearing them"),
    "ties away from zero": ("this tie was rounded away from zero, as adding 0x8000 before clearing does; add 0x7FFF plus the lowest kept bit"
                            " ((bits >> 16) & 1) instead, so that a tie carries only when the kept part is odd"),
    "ties toward zero": ("this tie was rounded toward zero, as adding 0x7FFF alone does; add the lowest kept bit ((bits >> 16) & 1) too, so"
                         " that a tie carries when the kept part is odd"),
    "no NaN case": ("here adding the rounding bias carried the payload into the exponent (or past the sign bit); give a NaN such as"
                    " 0x7FC00000 instead"),
    "inf as NaN": ("an all-ones exponent is a NaN only when the fraction is not zero; with a zero fraction it is inf (test for NaN with"
                   " np.isnan, not with the exponent alone)"),
    "saturated": ("the largest finite bfloat16 value is not the answer here: the carry into the exponent gives inf (0x7F800000), as a cast"
                  " does; do not clamp"),
    "flushed": ("this subnormal was flushed to zero: bfloat16 has subnormals too, and torch keeps them; the same add-and-clear rounding"
                " handles them with no special case"),
}


def is_nan_bits(b):
    return (b & 0x7FFFFFFF) > 0x7F800000


def mistakes_giving(xb, gb, wb):
    """The known mistakes that give exactly the wrong bits gb for input bits xb (any NaN for a NaN)."""
    return matching_mistakes(gb, _mistakes(xb), same=lambda got, predicted: predicted == got or (is_nan_bits(got) and is_nan_bits(predicted)),
                             is_right=lambda predicted: predicted == wb)


# A value past halfway, nowhere near a tie, an overflow or a subnormal: right unless the rounding truncates.
ABOVE_HALF = 0x3F80C001


def cause(xb, gb, wb, rounds_above_half=None):
    """What the wrong bits gb show: the rule at this input, then the mistake that gives exactly gb when only one known
    mistake does (a lost sign is seen directly). `rounds_above_half`: whether the learner's code rounded ABOVE_HALF
    right (a control, asked only when truncation is one of several candidates), or None."""
    xb, gb, wb = int(xb), int(gb), int(wb)
    rule = rule_at(xb, wb)
    if gb ^ wb == 0x80000000:
        return "the sign was lost: a negative input keeps its sign bit, -0.0 (0x80000000) included"
    matches = mistakes_giving(xb, gb, wb)
    seen = ""
    if len(matches) > 1 and "truncation" in matches and rounds_above_half:
        matches.remove("truncation")
        seen = f" (values past halfway do round up: {value_text(ABOVE_HALF)} comes back right)"
    return f"{rule}; {CAUSES[matches[0]]}{seen}" if len(matches) == 1 else rule


# -- judging one result -----------------------------------------------------------------------------
def first_wrong(got, x, scenario):
    """The flat index of the first element of got (checked to be float32 of x's shape) that differs from
    torch's cast of x, bit for bit (any NaN for a NaN); None when none does."""
    assert_returns_like(got, x, what="round_to_bf16(x)", scenario=scenario)
    dtype = str(getattr(got, "dtype", ""))
    hint = ("these are the bit patterns: view them as float32 (rounded.view(np.float32))" if dtype == "uint32" else
            "return float32, as x is: the rounded bits viewed as np.float32")
    assert_dtype(got, "float32", what="round_to_bf16(x)", scenario=scenario, hint=hint)
    with np.errstate(invalid="ignore"):  # a signalling NaN warns when widened
        assert_shape(got, x.shape, what="round_to_bf16(x)", scenario=scenario)
    got_arr = np.asarray(got).reshape(-1)
    want = torch_bf16(x).reshape(-1)
    bad = (got_arr.view(np.uint32) != want.view(np.uint32)) & ~(np.isnan(got_arr) & np.isnan(want))
    return int(np.flatnonzero(bad)[0]) if bad.any() else None


def element_message(x, got, i, scenario, alone=False, rounds_above_half=None):
    xb = np.asarray(x).reshape(-1).view(np.uint32)[i]
    gb = np.asarray(got).reshape(-1).view(np.uint32)[i]
    wb = torch_bf16(x).reshape(-1).view(np.uint32)[i]
    where = f" element {tuple(int(j) for j in np.unravel_index(i, x.shape)) if x.ndim > 1 else i}:" if x.size > 1 else ""
    want = "a NaN (any NaN)" if np.isnan(torch_bf16(x).reshape(-1)[i]) else value_text(wb)
    kind = kind_of(xb)
    message = (f"round_to_bf16(x) ({scenario}){where} x = {value_text(xb)}{', ' + kind + ',' if kind else ''} should round to {want}, as"
               f" torch's x.to(torch.bfloat16) gives; got {value_text(gb)}" + (" (also when passed alone, as below)." if alone else "."))
    details = {"x_bits": hex32(xb), "expected_bits": hex32(wb), "got_bits": hex32(gb)}
    hint = cause(xb, gb, wb, rounds_above_half)
    return f"{message} {hint[0].upper()}{hint[1:]}.", details


def rounds_like_torch(sub, bits, scenario, shape=None, code=None):
    """The learner's round_to_bf16 on the float32 values with these bit patterns equals torch's cast.
    On a wrong element, that element alone is tried: if it fails on its own, it is the failing input."""
    shape = bits.shape if shape is None else tuple(shape)
    x = bits.view(np.float32).reshape(shape)
    full_input = bits_call(bits, shape) if bits.size <= SHOWN_IN_FULL or code is None else Call.code(f"{code}\nround_to_bf16(x)")
    got = sub.call("round_to_bf16", x)
    i = first_wrong(got, x, scenario)
    if i is None:
        return
    xb, gb = int(bits.reshape(-1)[i]), int(np.asarray(got).reshape(-1).view(np.uint32)[i])
    wb = int(torch_bf16(x).reshape(-1).view(np.uint32)[i])
    above_half = None
    if len(mistakes_giving(xb, gb, wb)) > 1 and "truncation" in mistakes_giving(xb, gb, wb):
        control = as_bits([ABOVE_HALF]).view(np.float32)
        above_half = control_value(sub, "round_to_bf16", control, read=lambda got: first_wrong(got, control, "") is None)
    if x.size > 1:
        alone = bits.reshape(-1)[i:i + 1]
        if control_value(sub, "round_to_bf16", alone.view(np.float32), read=lambda got: first_wrong(got, alone.view(np.float32), "")) == 0:
            message, details = element_message(x, got, i, scenario, alone=True, rounds_above_half=above_half)
            fail(message, failing_input=bits_call(alone), **details)
    message, details = element_message(x, got, i, scenario, rounds_above_half=above_half)
    if x.size > 1:
        message += " The same value alone, in a 1-element array, comes back right: the result depends on the rest of x."
    fail(message, failing_input=full_input, **details)


# -- inputs of each class ---------------------------------------------------------------------------
def both_signs(bits):
    bits = np.asarray(bits, dtype=np.uint32)
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


# Ties: the low 16 bits are exactly 0x8000. "even": the kept bit 16 is 0, the tie stays down;
# "odd": it is 1, the tie goes up. 1.00390625 = 1 + 2**-8 (even), 1.01171875 = 1 + 3 * 2**-8 (odd).
TIES = as_bits([0x3F808000, 0x3F818000, 0xBF808000, 0xBF818000, 0x40490000 | 0x8000, 0x40480000 | 0x8000, 0x7F7E8000, 0x00808000,
                0x00818000, 0x3F7F8000, 0x4B7F8000, 0xC2C98000])
NEAR_TIES = as_bits([0x3F808001, 0x3F807FFF, 0x3F818001, 0x3F817FFF, 0xBF808001, 0xBF817FFF])
# The largest first: truncation (0x007F0000) and flushing (0) give it different wrong answers.
SUBNORMALS = as_bits([0x007FFFFF, 0x807FFFFF, 0x00018000, 0x00000001, 0x80000001, 0x00008000, 0x00008001, 0x00010000, 0x007F0000,
                      0x007F8000, 0x00400000, 0x80018000, 0x0000FFFF, 0x80010001])
ZEROS = as_bits([0x00000000, 0x80000000, 0x80000001, 0x80007FFF, 0x00007FFF])
INFINITIES = as_bits([0x7F800000, 0xFF800000])
NANS = as_bits([0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0xFFC00000, 0xFF800001, 0xFFFFFFFF, 0x7F807FFF, 0x7FA00000, 0x7F808000, 0x7FFF8000])
NEAR_MAX = both_signs([BF16_MAX, 0x7F7E8000, 0x7F7EC000, 0x7F7F7FFF, 0x7F7F4000, 0x7F7E0000, 0x7F7E7FFF])
OVERFLOW = both_signs([0x7F7FFFFF, 0x7F7F8000, 0x7F7F8001, 0x7F7FC000, 0x7F7FFFFE])


def random_code(seed, n, how):
    """Lines that build x (n float32 values), and the array they build, here."""
    lines = {
        "normal": f"x = (rng.standard_normal({n}) * 10.0 ** rng.uniform(-3, 3, {n})).astype(np.float32)",
        "wide": f"x = (rng.choice([-1.0, 1.0], {n}) * 10.0 ** rng.uniform(-37, 38, {n})).astype(np.float32)",
        "subnormal": f"x = (rng.integers(1, 2**23, {n}, dtype=np.uint32) | (rng.integers(0, 2, {n}, dtype=np.uint32) << 31)).view(np.float32)",
        "bits": f"bits = rng.integers(0, 2**32, {n}, dtype=np.uint32)\nx = bits[np.isfinite(bits.view(np.float32))].view(np.float32)",
    }
    code = f"rng = np.random.default_rng({seed})\n{lines[how]}"
    return code, inputs_from_code(code, "x")


# -- scenarios (run in the sandbox) -----------------------------------------------------------------
@scenario(repro=lambda interface, bits, shape: bits_call(bits, shape, how="round_to_bf16(x.T)  # a transposed view of x"))
def round_transposed(module, bits, shape):
    """Scenario: round_to_bf16 of a transposed (non-contiguous) view, built here from bit patterns."""
    return module.round_to_bf16(bits.view(np.float32).reshape(shape).T)


@scenario(repro=lambda interface, bits: bits_call(bits, how="round_to_bf16(x)\nx.view(np.uint32)  # x after the call"))
def x_after_call(module, bits):
    """Scenario: x's bit patterns after round_to_bf16(x) (for the hint of a failed inputs-unchanged check)."""
    x = bits.view(np.float32).copy()
    module.round_to_bf16(x)
    return x.view(np.uint32)


# -- checks: round_to_bf16 --------------------------------------------------------------------------
@check("round_to_bf16: float32 result of x's shape (0-d to 3-D, transposed)", uses=("round_to_bf16",))
def result_shapes(sub, ctx):
    values = from_floats([1.0, -2.5, 3.140625, 1.00390625, 0.1, -1e-3, 65504.0, 7.0e20])
    for shape in ((), (1,), (2, 3), (2, 2, 2)):
        n = int(np.prod(shape))
        rounds_like_torch(sub, values[:n].copy(), f"float32, shape {shape}", shape=shape)
    shape = (2, 4)
    x = values.view(np.float32).reshape(shape)
    scenario_text = f"a transposed view of a float32 {shape} array, shape {shape[::-1]}"
    got = sub.run(round_transposed, values, shape)
    i = first_wrong(got, x.T, scenario_text)
    if i is not None:
        message, details = element_message(np.ascontiguousarray(x.T), got, i, scenario_text)
        fail(message, **details)


@check("round_to_bf16: random values equal torch's cast, bit for bit", uses=("round_to_bf16",))
def random_values(sub, ctx):
    def cases():
        from hypothesis import strategies as st
        return st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4).map(as_bits)

    with shrink_on_failure(sub, cases, lambda bits: rounds_like_torch(sub, bits, f"float32 bit patterns, shape {bits.shape}")):
        rounds_like_torch(sub, from_floats([0.1, -0.2, 0.3, 1.7, -12.34, 1000.1, 3.14159, -2.71828]), "8 short decimals")
        for seed, n, how in ((1, 1000, "normal"), (2, 1000, "wide"), (3, 20_000, "bits")):
            code, x = random_code(seed, n, how)
            rounds_like_torch(sub, x.view(np.uint32), f"{x.size} random float32 values ({how})", code=code)


@check("round_to_bf16: exact ties go to the even neighbour", uses=("round_to_bf16",))
def ties_to_even(sub, ctx):
    rounds_like_torch(sub, TIES[:4].copy(), "exact ties at 1 and -1: 1 + 2**-8 (even below) and 1 + 3 * 2**-8 (odd below)")
    rounds_like_torch(sub, TIES, "exact ties at several exponents, subnormal and near bfloat16's max included")
    rounds_like_torch(sub, NEAR_TIES, "one float32 step either side of a tie")


@check("round_to_bf16: subnormals are rounded, not flushed", uses=("round_to_bf16",))
def subnormals(sub, ctx):
    rounds_like_torch(sub, SUBNORMALS, "float32 subnormals, the smallest and largest included")
    code, x = random_code(4, 5000, "subnormal")
    rounds_like_torch(sub, x.view(np.uint32), "5000 random subnormals of both signs", code=code)


@check("round_to_bf16: +0.0 and -0.0 keep their sign", uses=("round_to_bf16",))
def signed_zeros(sub, ctx):
    rounds_like_torch(sub, ZEROS[:2].copy(), "+0.0 and -0.0")
    rounds_like_torch(sub, ZEROS, "zeros and tiny values that round to a zero of their own sign")


@check("round_to_bf16: +inf and -inf stay infinite", uses=("round_to_bf16",))
def infinities(sub, ctx):
    rounds_like_torch(sub, INFINITIES, "+inf and -inf")


@check("round_to_bf16: NaN stays NaN (any payload)", uses=("round_to_bf16",))
def nans(sub, ctx):
    rounds_like_torch(sub, NANS[:1].copy(), "the quiet NaN 0x7FC00000")
    rounds_like_torch(sub, NANS, "NaNs: quiet, signalling, negative, payloads in the low 16 bits")


@check("round_to_bf16: values near bfloat16's max stay finite", uses=("round_to_bf16",))
def near_max(sub, ctx):
    rounds_like_torch(sub, NEAR_MAX, "bfloat16's max (0x7F7F0000) and values at or below the halfway point above it")


@check("round_to_bf16: values past bfloat16's max round to inf", uses=("round_to_bf16",))
def round_up_to_inf(sub, ctx):
    rounds_like_torch(sub, OVERFLOW[[0, 5]].copy(), "float32's max and -max")
    rounds_like_torch(sub, OVERFLOW, "the overflow band: from halfway above bfloat16's max (0x7F7F8000) to float32's max")


def holds_rounded(bits, after):
    """Whether x's bits after the call, `after`, are the rounded values of the input bits."""
    return isinstance(after, np.ndarray) and after.shape == bits.shape and first_wrong(after.view(np.float32), bits.view(np.float32), "") is None


CHANGED = "before = x.copy()\nround_to_bf16(x)\nnp.array_equal(x.view(np.uint32), before.view(np.uint32))  # False: round_to_bf16 changed x"


@check("round_to_bf16: x unchanged", uses=("round_to_bf16",))
def input_unchanged(sub, ctx):
    every_class = np.concatenate([TIES, NEAR_TIES, SUBNORMALS, ZEROS, INFINITIES, NANS, NEAR_MAX, OVERFLOW])
    randoms = [random_code(*case) for case in ((1, 1000, "normal"), (2, 1000, "wide"), (3, 20_000, "bits"), (4, 5000, "subnormal"))]
    cases = [(bits, bits_call(bits, how=CHANGED)) for bits in (from_floats([1.00390625, -3.3, 0.1]), np.concatenate([TIES, NANS, SUBNORMALS, OVERFLOW]),
                                                               every_class)]
    for bits, shown in cases + [(x.view(np.uint32), Call.code(f"{code}\n{CHANGED}")) for code, x in randoms]:  # every check's inputs
        with on_input(shown):
            try:
                inputs_unchanged(sub, "round_to_bf16", bits.view(np.float32), scenario=f"float32, shape {bits.shape}")
            except CheckFailed as failure:
                if control_value(sub, x_after_call, bits, read=partial(holds_rounded, bits)):
                    failure.notes.append("(x now holds the rounded values: the rounding wrote into x through x.view(np.uint32), which shares"
                                         " x's memory; compute new arrays (bits + ..., np.where) instead of +=, &= or item assignment.)")
                raise


# -- checks: format_info ----------------------------------------------------------------------------
def with_power(v):
    """The number, and '= 2**-10' after it for a power of two: '0.0009765625 = 2**-10'."""
    if v > 0 and math.isfinite(v) and math.frexp(v)[0] == 0.5:
        return f"{v!r} = 2**{math.frexp(v)[1] - 1}"
    return f"{v!r}"


def finfo(name):
    f = torch.finfo(NAMES[name])
    mantissa = -int(math.log2(f.eps))
    return {"max": f.max, "tiny": f.tiny, "eps": f.eps, "exponent_bits": f.bits - 1 - mantissa, "mantissa_bits": mantissa}


def finfo_cause(key, got, want, name):
    """What a wrong format_info value is, when it is what a known mistake gives."""
    mantissa, bias = want["mantissa_bits"], 2 ** (want["exponent_bits"] - 1) - 1
    eps = f"eps is the gap between 1.0 and the next larger value, 2**-mantissa_bits = 2**-{mantissa}"
    mistakes = {
        "eps": {f"that is half of eps (the unit roundoff, the largest relative error of rounding); {eps}": want["eps"] / 2,
                f"that is twice eps; {eps}": want["eps"] * 2},
        "max": {(f"that is 2**{bias}, the largest exponent with a zero fraction; the largest finite value has every fraction bit set too:"
                 f" (2 - 2**-{mantissa}) * 2**{bias}"): 2.0**bias,
                f"that is 2**{bias + 1}, which is already inf in {name}; the largest finite value is (2 - 2**-{mantissa}) * 2**{bias}": 2.0 ** (bias + 1)},
        "tiny": {(f"that is the smallest subnormal; tiny (torch.finfo's tiny, also called smallest_normal) is the smallest positive"
                  f" normal value: exponent field 1, fraction 0, 2**(1 - {bias}) = 2**{1 - bias}"): 2.0 ** (1 - bias - mantissa)},
        "mantissa_bits": {"that counts the implicit leading 1 of normal numbers; mantissa_bits counts the stored fraction bits only": mantissa + 1},
    }
    return mistake_hint(got, mistakes.get(key, {}), say="{}", first=True, rtol=0.0, atol=0.0)


@check("format_info equals torch.finfo for float16, bfloat16, float32", uses=("format_info",))
def format_info_values(sub, ctx):
    for name in NAMES:
        want = finfo(name)
        what = f"format_info({name!r})"
        got = expect_record(sub.call("format_info", name), KEYS, what=what)
        for key in KEYS:
            value = as_float(got[key], what=f"{what}[{key!r}]")
            if key.endswith("_bits"):
                ok = value == want[key]
                source = "the stored fraction bits" if key == "mantissa_bits" else "the exponent field's width"
                expected = f"{want[key]} ({source})"
                got_text = f"{value:g}"
            else:
                ok = abs(value - want[key]) <= FINFO_RTOL * want[key]
                expected = f"{with_power(want[key])} (torch.finfo(torch.{name}).{key})"
                got_text = with_power(value)
            if not ok:
                hint = finfo_cause(key, value, want, name)
                tolerance = "" if key.endswith("_bits") else f" (allowed: within {FINFO_RTOL:g} relative)"
                message = f"{what}[{key!r}]: expected {expected}, got {got_text}{tolerance}."
                fail(f"{message} {hint[0].upper()}{hint[1:]}." if hint else message, name=name, key=key, expected=want[key], got=value)


@check("format_info: an unknown name raises ValueError", uses=("format_info",),
       edge='`name` is exactly one of the strings `"float16"`, `"bfloat16"`, `"float32"`; every other string (for example `"float64"`, `"fp16"`, `"int8"`)'
            ' raises `ValueError`.')
def format_info_unknown(sub, ctx):
    known = ", ".join(repr(n) for n in NAMES)
    for name in UNKNOWN_NAMES:
        got = sub.run(raised_by, "format_info", name)
        keyerror = "a missing dict key raises KeyError, which is not a ValueError; " if isinstance(got, dict) and got.get("raised") == "KeyError" else ""
        expect_raises(got, what=f"format_info({name!r}), a name other than {known}", raised_hint=f"{keyerror}check the name and raise ValueError")
