"""Checks for `conv-params`: nn.Conv2d's parameter count and output shape, by formula.

Expected values come from torch itself, here in the judge: sum(p.numel()) of an nn.Conv2d built on
the meta device (no memory, however many channels), and the shape of F.conv2d on meta tensors of
zeros (1 x 1 channel: the spatial size does not depend on the channels). Where torch refuses (groups
not dividing the channels: ValueError; a kernel larger than the padded input: RuntimeError), the
contract asks for ValueError. Results are compared exactly and must be ints (Python or NumPy
integers, not floats or bools); the shape may be a tuple or a list.

Many calls run in one sandbox round trip (`calls_in_sandbox`); the first wrong one is reported as
its own call. Random configurations are drawn from a fixed seed and sorted small to large; when one
fails, Hypothesis looks for a smaller failing configuration. A hint is given only when the wrong
value is exactly what one known mistake gives for that call (groups ignored, a bias per input
channel, dilation ignored, ceil for floor, ...), computed here.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from mlprep.grading import Call, GraderDefect, check, fail, mistake_hint, scenario, shrink_on_failure

RAISES = "ValueError"
SAY_MISTAKE = " That is what you get with {}."


# ---------------------------------------------------------------------------------------------
# Expected values (torch, meta device) and known mistakes
# ---------------------------------------------------------------------------------------------
def torch_params(c_in, c_out, kh, kw, bias=True, groups=1):
    try:
        layer = nn.Conv2d(c_in, c_out, (kh, kw), bias=bias, groups=groups, device="meta")
    except ValueError:
        return RAISES
    return sum(p.numel() for p in layer.parameters())


def torch_out_shape(h, w, kh, kw, stride=1, padding=0, dilation=1):
    x, weight = torch.zeros(1, 1, h, w, device="meta"), torch.zeros(1, 1, kh, kw, device="meta")
    try:
        out = F.conv2d(x, weight, stride=stride, padding=padding, dilation=dilation)
    except RuntimeError:
        return RAISES
    return (int(out.shape[2]), int(out.shape[3]))


TORCH = {"conv2d_params": torch_params, "conv2d_out_shape": torch_out_shape}  # the expected value of a call, by function


def params_mistakes(c_in, c_out, kh, kw, bias=True, groups=1):
    """{hint: what that mistake gives for this call}."""
    weights = c_out * (c_in // groups) * kh * kw
    biases = c_out if bias else 0
    return {
        "groups ignored: with groups = g each filter sees only the c_in / g input channels of its group, so the weights are"
        " c_out * (c_in // g) * kh * kw": c_out * c_in * kh * kw + biases,
        "a bias per input channel: nn.Conv2d has one bias per output channel (per filter), c_out of them": weights + (c_in if bias else 0),
        "one group's weights only: each of the g groups holds (c_out / g) filters of (c_in / g) * kh * kw weights, so the total is"
        " c_out * (c_in // g) * kh * kw": weights // groups + biases,
        "the bias counted although bias=False": weights + c_out,
    }


def size_mistakes(size, kernel, stride, padding, dilation):
    """{hint: what that mistake gives for one dimension}; None where the mistake gives no size."""
    span, padded = dilation * (kernel - 1) + 1, size + 2 * padding
    return {
        "dilation ignored: a kernel of k taps with dilation d spans d * (k - 1) + 1 input positions": (padded - kernel) // stride + 1,
        "the dilated span taken as d * k: k taps with gaps of d - 1 between them span d * (k - 1) + 1": (padded - dilation * kernel) // stride + 1,
        "ceil instead of floor: nn.Conv2d drops a last window that would run past the padded input,"
        " floor((size + 2 p - d (k - 1) - 1) / s) + 1": math.ceil((padded - span) / stride) + 1,
        "padding counted once: it is added on both sides, size + 2 * padding": (size + padding - span) // stride + 1,
        "the number of window positions floor-divided by the stride: the first window always counts, then one more every s steps,"
        " floor((size + 2 p - span) / s) + 1": (padded - span + 1) // stride,
        "stride ignored: the window moves s positions at a time, floor((size + 2 p - span) / s) + 1": padded - span + 1,
    }


def shape_hint(got, args, kwargs, right):
    """A hint for a wrong (h_out, w_out): a mistake that explains both dimensions (or the one that is wrong)."""
    h, w, kh, kw = args
    knobs = (kwargs.get("stride", 1), kwargs.get("padding", 0), kwargs.get("dilation", 1))
    in_h, in_w = size_mistakes(h, kh, *knobs), size_mistakes(w, kw, *knobs)
    hint = mistake_hint(got, {mistake: (in_h[mistake], in_w[mistake]) for mistake in in_h}, want=right, say=SAY_MISTAKE)
    if hint:
        return hint
    if got == (right[1], right[0]) and right[0] != right[1]:
        return " These are the right sizes the other way round: h_out comes from h and kh, w_out from w and kw."
    return ""


# ---------------------------------------------------------------------------------------------
# Running the learner's code: many calls in one round trip
# ---------------------------------------------------------------------------------------------
def _calls_repro(interface, fn, calls):
    return Call(fn, *calls[0][0], **calls[0][1]) if len(calls) == 1 else Call.code(
        "\n".join(f"{fn}({', '.join([*map(repr, a), *(f'{k}={v!r}' for k, v in kw.items())])})" for a, kw in calls[:3])
        + ("\n...  # and more" if len(calls) > 3 else ""))


@scenario(repro=_calls_repro)
def calls_in_sandbox(module, fn, calls):
    """Scenario: fn(*args, **kwargs) for each (args, kwargs): {"value": ...} or {"raised": type name, "message": ...}."""
    results = []
    for args, kwargs in calls:
        try:
            results.append({"value": getattr(module, fn)(*args, **kwargs)})
        except Exception as exc:  # the judge says which call raised what, ValueError or not
            results.append({"raised": "ValueError" if isinstance(exc, ValueError) else type(exc).__name__, "message": str(exc)[:200]})
    return results


def is_int(x):
    """A Python int (not a bool) or a NumPy integer scalar."""
    if isinstance(x, int):
        return not isinstance(x, bool)
    return type(x).__module__ == "numpy" and getattr(getattr(x, "dtype", None), "kind", "") in ("i", "u")


def judge(fn, args, kwargs, outcome, want):
    """Fails for one call whose outcome (from calls_in_sandbox) is not `want` (a value, or RAISES)."""
    here = Call(fn, *args, **kwargs)
    text = str(here)
    raised = outcome.get("raised") if isinstance(outcome, dict) else None
    got = outcome.get("value") if isinstance(outcome, dict) else outcome
    if want == RAISES:
        if raised == "ValueError":
            return
        if raised:
            fail(f"{text}: expected ValueError, but it raised {raised}: {outcome.get('message')}; check the arguments first and raise"
                 " ValueError with a clear message.", failing_input=here, raised=raised)
        fail(f"{text}: expected ValueError, got {got!r}.{invalid_hint(fn, args, kwargs)}", failing_input=here, got=repr(got))
    if raised:
        fail(f"{text}: expected {want!r}, but it raised {raised}: {outcome.get('message')}.", failing_input=here, raised=raised)
    if fn == "conv2d_params":
        if not is_int(got):
            fail(f"{text}: expected the int {want}, got {type(got).__name__} {got!r}. A parameter count is an int: use // (floor division),"
                 " not /, which returns a float.", failing_input=here, got=repr(got))
        if got != want:
            hint = mistake_hint(got, params_mistakes(*args, **kwargs), want=want, say=SAY_MISTAKE)
            fail(f"{text}: expected {want}, got {got}.{hint}", failing_input=here, expected=want, got=got)
        return
    if not isinstance(got, (tuple, list)) or len(got) != 2 or not all(is_int(x) for x in got):
        floats = " Use // (floor division) rather than / and math.floor/ceil, which give floats or need care." if isinstance(got, (tuple, list)) and any(
            isinstance(x, float) for x in got) else ""
        fail(f"{text}: expected a tuple of two ints {want}, got {got!r}.{floats}", failing_input=here, got=repr(got))
    got = (int(got[0]), int(got[1]))
    if got != want:
        fail(f"{text}: expected (h_out, w_out) = {want}, got {got}.{shape_hint(got, args, kwargs, want)}", failing_input=here,
             expected=list(want), got=list(got))


def invalid_hint(fn, args, kwargs):
    if fn == "conv2d_params":
        groups = kwargs.get("groups", 1)
        undivided = [f"{name} = {n}" for name, n in (("c_in", args[0]), ("c_out", args[1])) if n % groups]
        return (f" groups = {groups} does not divide {' or '.join(undivided)}:"
                " both channel counts must split into groups.")
    h, w, kh, kw = args
    d, p = kwargs.get("dilation", 1), kwargs.get("padding", 0)
    for name, size, k in (("h", h, kh), ("w", w, kw)):
        if d * (k - 1) + 1 > size + 2 * p:
            span = f"dilation * (k - 1) + 1 = {d * (k - 1) + 1}" if d > 1 else f"{k}"
            return (f" In {name} the kernel spans {span} but the padded input has only {name} + 2 * padding = {size + 2 * p}: no window"
                    " fits, so there is no output size to give.")
    return ""


def run_calls(sub, fn, calls, want=None):
    """Every call's outcome against torch's (or `want`, a list, checked against torch first); the first wrong one fails."""
    truth = [TORCH[fn](*args, **kwargs) for args, kwargs in calls]
    if want is not None and list(want) != truth:
        raise GraderDefect(f"hand-computed {fn} values {want} disagree with torch's {truth}")
    outcomes = sub.run(calls_in_sandbox, fn, calls)
    if not isinstance(outcomes, list) or len(outcomes) != len(calls):
        raise GraderDefect("calls_in_sandbox returned no list of outcomes")
    for (args, kwargs), outcome, right in zip(calls, outcomes, truth):
        judge(fn, args, kwargs, outcome, right)


def one(*args, **kwargs):
    return (args, kwargs)


# ---------------------------------------------------------------------------------------------
# Random configurations (fixed seed, sorted small to large) and their Hypothesis shrinkers
# ---------------------------------------------------------------------------------------------
def random_params_calls(rng, n):
    calls = []
    for _ in range(n):
        groups = int(rng.choice([1, 1, 1, 2, 3, 4, 8, 16, 32]))
        c_in, c_out = groups * int(rng.integers(1, 33)), groups * int(rng.integers(1, 33))
        kh, kw = int(rng.integers(1, 12)), int(rng.integers(1, 12))
        calls.append(one(c_in, c_out, kh, kw, bias=bool(rng.integers(2)), groups=groups))
    return sorted(calls, key=lambda call: (call[0][0] * call[0][1] * call[0][2] * call[0][3], call[1]["groups"]))


def random_shape_calls(rng, n):
    calls = []
    while len(calls) < n:
        h, w = int(rng.integers(1, 513)), int(rng.integers(1, 513))
        kh, kw = int(rng.integers(1, 12)), int(rng.integers(1, 12))
        knobs = dict(stride=int(rng.integers(1, 5)), padding=int(rng.integers(0, 6)), dilation=int(rng.integers(1, 5)))
        if torch_out_shape(h, w, kh, kw, **knobs) != RAISES:
            calls.append(one(h, w, kh, kw, **knobs))
    return sorted(calls, key=lambda call: (call[0][0] * call[0][1], call[0][2] * call[0][3]))


def small_params_calls():
    from hypothesis import strategies as st

    return st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 6), st.integers(1, 5), st.integers(1, 5), st.booleans()).map(
        lambda t: one(t[0] * t[1], t[0] * t[2], t[3], t[4], bias=t[5], groups=t[0]))


def small_shape_calls():
    from hypothesis import strategies as st

    calls = st.tuples(st.integers(1, 20), st.integers(1, 20), st.integers(1, 5), st.integers(1, 5), st.integers(1, 4), st.integers(0, 3),
                      st.integers(1, 3)).map(lambda t: one(*t[:4], stride=t[4], padding=t[5], dilation=t[6]))
    return calls.filter(lambda call: torch_out_shape(*call[0], **call[1]) != RAISES)


def random_calls_check(sub, fn, calls, strategy):
    with shrink_on_failure(sub, strategy, lambda call: run_calls(sub, fn, [call]), worth_shrinking=lambda failure: True):
        run_calls(sub, fn, calls)


# ---------------------------------------------------------------------------------------------
# Checks: conv2d_params
# ---------------------------------------------------------------------------------------------
@check("conv2d_params: the source's example (3 -> 64, 3 x 3: 1,728 weights, 1,792 with bias), one bias per output channel",
       uses=("conv2d_params",))
def params_example(sub, ctx):
    run_calls(sub, "conv2d_params", [one(3, 64, 3, 3), one(3, 64, 3, 3, bias=False), one(16, 4, 1, 1), one(1, 1, 1, 1, bias=False),
                                     one(8, 2, 3, 5, bias=True)], want=[1792, 1728, 68, 1, 242])


@check("conv2d_params: grouped and depthwise convolutions (groups divide the weights)", uses=("conv2d_params",))
def params_groups(sub, ctx):
    run_calls(sub, "conv2d_params", [one(4, 8, 3, 3, groups=2), one(32, 32, 3, 3, groups=32), one(6, 12, 1, 1, bias=False, groups=3),
                                     one(8, 4, 5, 3, groups=4), one(64, 128, 3, 3, bias=False, groups=64)], want=[152, 320, 24, 124, 1152])


@check("conv2d_params: ValueError when groups does not divide c_in or c_out", uses=("conv2d_params",),
       edge="It raises `ValueError` when `c_in % groups != 0` or `c_out % groups != 0`.")
def params_bad_groups(sub, ctx):
    run_calls(sub, "conv2d_params", [one(4, 6, 3, 3, groups=4), one(6, 4, 3, 3, groups=4), one(3, 64, 3, 3, groups=2), one(5, 5, 1, 1, groups=2),
                                     one(2, 8, 3, 3, groups=8)], want=[RAISES] * 5)


@check("conv2d_params: equals nn.Conv2d over 300 random configurations", uses=("conv2d_params",))
def params_random(sub, ctx):
    random_calls_check(sub, "conv2d_params", random_params_calls(ctx.rng(1), 300), small_params_calls)


# ---------------------------------------------------------------------------------------------
# Checks: conv2d_out_shape
# ---------------------------------------------------------------------------------------------
@check("conv2d_out_shape: stride 1, no padding (size - k + 1)", uses=("conv2d_out_shape",))
def shape_plain(sub, ctx):
    run_calls(sub, "conv2d_out_shape", [one(5, 5, 3, 3), one(3, 3, 3, 3), one(4, 6, 1, 1), one(28, 28, 5, 5), one(10, 7, 3, 2)],
              want=[(3, 3), (1, 1), (4, 6), (24, 24), (8, 6)])


@check("conv2d_out_shape: stride (floor division; the first window always counts)", uses=("conv2d_out_shape",))
def shape_stride(sub, ctx):
    run_calls(sub, "conv2d_out_shape", [one(7, 7, 3, 3, stride=2), one(8, 8, 3, 3, stride=2), one(10, 9, 3, 2, stride=3), one(3, 5, 3, 3, stride=4),
                                        one(32, 31, 1, 1, stride=2)], want=[(3, 3), (3, 3), (3, 3), (1, 1), (16, 16)])


@check("conv2d_out_shape: padding on both sides", uses=("conv2d_out_shape",))
def shape_padding(sub, ctx):
    run_calls(sub, "conv2d_out_shape", [one(5, 5, 3, 3, padding=1), one(4, 6, 3, 5, padding=2), one(1, 1, 3, 3, padding=1),
                                        one(224, 224, 7, 7, stride=2, padding=3), one(6, 6, 1, 1, padding=2)],
              want=[(5, 5), (6, 6), (1, 1), (112, 112), (10, 10)])


@check("conv2d_out_shape: dilation (the kernel spans d * (k - 1) + 1)", uses=("conv2d_out_shape",))
def shape_dilation(sub, ctx):
    run_calls(sub, "conv2d_out_shape", [one(7, 7, 3, 3, dilation=2), one(10, 12, 3, 2, dilation=3), one(5, 5, 3, 3, dilation=2),
                                        one(9, 9, 1, 1, dilation=4), one(16, 16, 3, 3, stride=2, padding=2, dilation=2)],
              want=[(3, 3), (4, 9), (1, 1), (9, 9), (8, 8)])


@check("conv2d_out_shape: equals nn.Conv2d over 300 random configurations", uses=("conv2d_out_shape",))
def shape_random(sub, ctx):
    random_calls_check(sub, "conv2d_out_shape", random_shape_calls(ctx.rng(2), 300), small_shape_calls)


@check("conv2d_out_shape: ValueError when the (dilated) kernel is larger than the padded input; an exact fit gives 1", uses=("conv2d_out_shape",),
       edge="It raises `ValueError` when `dilation * (kh - 1) + 1 > h + 2 * padding` or `dilation * (kw - 1) + 1 > w + 2 * padding`"
            " (a span exactly as large as the padded input fits once: the size is 1).")
def shape_too_big(sub, ctx):
    run_calls(sub, "conv2d_out_shape", [one(2, 2, 3, 3), one(3, 10, 5, 3), one(10, 3, 3, 5), one(5, 5, 3, 3, dilation=3),
                                        one(4, 4, 3, 3, dilation=2), one(1, 1, 4, 4, padding=1)], want=[RAISES] * 6)
    run_calls(sub, "conv2d_out_shape", [one(3, 3, 3, 3), one(5, 5, 3, 3, dilation=2), one(1, 1, 3, 3, padding=1),
                                        one(4, 4, 3, 3, padding=1, dilation=2)], want=[(1, 1), (1, 1), (1, 1), (2, 2)])
