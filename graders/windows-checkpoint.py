"""Checks for `windows-checkpoint`: time-series windows as views, a split with a gap, an exact and atomic checkpoint.

Windows are compared exactly with windows sliced here from np.arange series; "views" and "no leakage" are
graded by behaviour: new values written into the series must show in the windows, and changing one side of
the split must leave the other side's windows as they were.

Models and optimizers cannot cross the sandbox boundary, so each checkpoint case is a scenario run in the
sandbox with the grader's own small training setup (build_run, train, seed_all), shown as code in the failing
input; what a correct resume gives is computed by the same code without a checkpoint in the reference's
sandbox, so results compare bit for bit. Everything checkpoint runs on the CPU: the contract is about torch's
CPU generator.
"""

import contextlib
import copy
import inspect
import io
import os
import random
from functools import partial

import numpy as np
import torch
from torch import nn

from mlprep.grading import (IN_FOLDER, Call, CheckFailed, Snapshot, assert_equal, check, crash_points, expect_raises, expect_record, expect_sequence, fail,
                            fail_if_changed, folder_files, half_written, in_child, inputs_from_code, inputs_unchanged, listed, mistake_hint, on_input,
                            outcome, plural, restore_folder, scenario, scratch_folder, shrink_on_failure, state_of)

MAKE, SPLIT = ("make_windows",), ("split_windows",)
CHECKPOINT = ("save_checkpoint", "resume")
MUTATION = "series[...] = series * 10 + 7"
READ_ONLY = "windows only read the series"
SCRAMBLE = 12345  # every RNG is seeded with this between the save and resume
TOTAL, RESUME_AT = 10, 4  # the resumed run: 4 steps, a checkpoint, 6 more; StepLR halves the rate every 3 steps

# torch.optim imports torch._dynamo on first use (seconds), torch.save and torch.load warm up too:
# pay that while the sandbox starts, not inside the time limit of the first check.
_warm = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=0.0)
torch.optim.lr_scheduler.StepLR(_warm, step_size=1)
_buffer = io.BytesIO()
torch.save({"x": torch.zeros(1)}, _buffer)
torch.load(io.BytesIO(_buffer.getvalue()), weights_only=True)
REAL_SAVE = torch.save  # bound before any learner code runs in the sandbox


# ---------------------------------------------------------------------------------------------
# Windows: expected values and known mistakes (judge side)
# ---------------------------------------------------------------------------------------------
def starts_of(first, stop, size, stride):
    """Starts first, first + stride, ... of the windows of `size` steps that end at or before stop."""
    return list(range(first, stop - size + 1, stride))


def split_starts(T, split_at, gap, size, stride):
    """The starts of the training windows (all of series[:split_at]) and of the validation ones (from split_at + gap)."""
    return starts_of(0, split_at, size, stride), starts_of(split_at + gap, T, size, stride)


def windows_at(series, starts, input_len, horizon, lag=0):
    """X and Y of the windows at these starts; with `lag`, Y begins that many steps after X's last step."""
    series = np.asarray(series)
    rest = series.shape[1:]
    X = np.array([series[t:t + input_len] for t in starts], dtype=series.dtype).reshape((len(starts), input_len, *rest))
    Y = np.array([series[t + input_len + lag:t + input_len + lag + horizon] for t in starts], dtype=series.dtype).reshape((len(starts), horizon, *rest))
    return X, Y


def fmt_starts(starts):
    return f"{plural(len(starts), 'window')}, starting at {listed(starts, 8)}" if starts else "no window"


def make_mistakes(series, L, H, s):
    """{what the code does wrong: the (X, Y) it then gives} for make_windows on this series."""
    T, size = len(series), L + H
    found = {}
    starts = starts_of(0, T, size, s)
    if starts:
        found[f"the last window (starting at {starts[-1]}) is missing: with T = {T}, n = (T - input_len - horizon) // stride + 1 windows fit"] = (
            windows_at(series, starts[:-1], L, H))
    late = starts_of(0, T, size + 1, s)
    found["Y starts one step late: Y[i] begins right after X[i]'s last step, at i * stride + input_len"] = windows_at(series, late, L, H, lag=1)
    if s > 1:
        found["stride is ignored: windows start every step instead of every stride steps"] = windows_at(series, starts_of(0, T, size, 1), L, H)
    if np.ndim(series) == 2:
        X, Y = windows_at(series, starts, L, H)
        found["the window's time axis is last, (n, F, input_len): sliding_window_view appends it; move it next to the window index"
              " (np.moveaxis(w, -1, 1))"] = (X.transpose(0, 2, 1), Y.transpose(0, 2, 1))
    return found


def split_mistakes(series, split_at, gap, L, H, s):
    """{what: ((X_tr, Y_tr), (X_va, Y_va))} that known mistakes give for split_windows."""
    T, size = len(series), L + H
    train, valid = split_starts(T, split_at, gap, size, s)
    grid = -(-(split_at + gap) // s) * s
    options = {
        f"training windows only have their inputs end before split_at = {split_at}; their targets reach series[{split_at}:], the"
        " period validation scores: every training window, targets included, must end before split_at": (starts_of(0, min(split_at + H, T), size, s), valid),
        f"the gap is ignored: validation windows start at split_at = {split_at} instead of split_at + gap = {split_at + gap}": (train, starts_of(split_at, T, size, s)),
        f"validation windows are aligned to the stride grid of the whole series (multiples of {s}), starting at {grid}; they start at"
        f" split_at + gap = {split_at + gap} and then every stride steps": (train, starts_of(grid, T, size, s)),
        "the last window of each side is missing: n = (length - input_len - horizon) // stride + 1 windows fit": (train[:-1], valid[:-1]),
    }
    return {text: (windows_at(series, a, L, H), windows_at(series, b, L, H)) for text, (a, b) in options.items()}


def same_arrays(got, want):
    return isinstance(got, (tuple, list)) and all(isinstance(g, np.ndarray) and g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))


def matching(got, mistakes, want):
    """The sentence naming the one known mistake whose windows `got` are, or ""."""
    return mistake_hint(got, mistakes, say="Your windows are what you get when {}.", same=same_arrays, is_right=partial(same_arrays, want=want))


def judge_arrays(items, wants, *, what, names, starts=None, hint=""):
    """The learner's arrays against the expected ones: NumPy arrays of the series' dtype, then shapes, then values."""
    for name, g, w in zip(names, items, wants):
        if not isinstance(g, np.ndarray):
            fail(f"{what}: {name} should be a NumPy array (a view of the series), got {type(g).__name__}.")
        if g.dtype != w.dtype:
            fail(f"{what}: {name} has dtype {g.dtype}, the series' is {w.dtype}: windows are views of the series, in its dtype.",
                 expected=str(w.dtype), got=str(g.dtype))
    for name, g, w in zip(names, items, wants):
        if g.shape != w.shape:
            count = f" ({fmt_starts(starts)})" if starts is not None else ""
            fail(f"{what}: {name} should have shape {w.shape}{count}, got shape {g.shape}. {hint}".strip(),
                 expected_shape=list(w.shape), got_shape=list(g.shape))
    for name, g, w in zip(names, items, wants):
        assert_equal(g, w, what=f"{name} of {what}", hint=hint)


def judge_pair(got, want, *, what, names=("X", "Y"), starts=None, hint=""):
    judge_arrays(expect_sequence(got, 2, what=what), want, what=what, names=names, starts=starts, hint=hint)


def call_text(fn, args):
    return f"{fn}(series, {', '.join(map(repr, args))})"


# ---------------------------------------------------------------------------------------------
# Windows: scenarios (run in the sandbox) and their rendering
# ---------------------------------------------------------------------------------------------
def _arrays(result, fn):
    """[X, Y] (make_windows) or [X_tr, Y_tr, X_va, Y_va] (split_windows), or None if result is not so shaped."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return None
    if fn == "make_windows":
        return list(result)
    if not all(isinstance(part, (tuple, list)) and len(part) == 2 for part in result):
        return None
    return [*result[0], *result[1]]


def view_code(series_code, fn, args):
    names = "X, Y" if fn == "make_windows" else "(X_tr, Y_tr), (X_va, Y_va)"
    shown = "X, Y" if fn == "make_windows" else "X_tr, Y_tr, X_va, Y_va"
    return (f"{series_code}\n{names} = {call_text(fn, args)}\n{MUTATION}  # write new values into the series, after the call\n"
            f"{shown}  # views of the series show the new values")


# What the views probe reads, bound when the grader's scenarios are loaded, before the learner's file is
# imported: ndarray's own C methods and attributes, which a file that replaces np.array, np.copy,
# np.ndarray or builtins in its own process cannot change (an ndarray subclass is not taken at all).
_NDARRAY, _TYPE, _COPY = np.ndarray, type, np.ndarray.copy
_INTERFACE, _STRIDES = np.ndarray.__dict__["__array_interface__"].__get__, np.ndarray.__dict__["strides"].__get__


def _layout(a):
    """(address of the first element, strides, shape) of an ndarray: plain data the judge re-checks."""
    interface = _INTERFACE(a)
    return [interface["data"][0], list(_STRIDES(a)), list(interface["shape"])]


@scenario(repro=lambda interface, series_code, fn, args: Call.code(view_code(series_code, fn, args)))
def view_probe(module, series_code, fn, args):
    """Scenario: the arrays fn returns, copied, before and after new values are written into the series in
    place, and where each one's elements and the series' lie in memory."""
    series = inputs_from_code(series_code, "series")
    arrays = _arrays(getattr(module, fn)(series, *args), fn)
    if arrays is None:
        return {"shape": "not a pair"}
    plain = [_TYPE(a) is _NDARRAY for a in arrays]
    before = [_COPY(a) if ok else a for a, ok in zip(arrays, plain)]
    layouts = [_layout(a) if ok else None for a, ok in zip(arrays, plain)]
    series[...] = series * 10 + 7
    return {"before": before, "after": [_COPY(a) if ok else a for a, ok in zip(arrays, plain)], "layouts": layouts, "series": _layout(series)}


def element_addresses(layout):
    """The address of every element of an array of this (first address, strides, shape)."""
    first, strides, shape = layout
    return first + sum(i * s for i, s in zip(np.indices(shape, dtype=np.int64), strides)) if shape else np.array(first)


def window_addresses(series_layout, starts, offset, shape):
    """Where a view's element [i, j(, f)] must lie: at the series' element starts[i] + offset + j (column f)."""
    first, strides, _ = series_layout
    index = np.indices(shape, dtype=np.int64)
    rows = np.asarray(starts, dtype=np.int64)[index[0]] + offset + index[1]
    return first + rows * strides[0] + (index[2] * strides[1] if len(shape) == 3 else 0)


@scenario(repro=lambda interface, series_code, fn, args: Call.code(f"{series_code}\n{call_text(fn, args)}"))
def on_series(module, series_code, fn, args):
    """Scenario: fn on a series built in the sandbox (a strided view, which would not survive the trip there): its
    result, and whether it changed the series in place."""
    series = inputs_from_code(series_code, "series")
    before = Snapshot(series=series)
    return {"result": getattr(module, fn)(series, *args), "changed": before.changed()}


@scenario(repro=lambda interface, series_code, fn, args: Call.code(f"{series_code}\n{call_text(fn, args)}  # expected: ValueError"))
def raises(module, series_code, fn, args):
    """Scenario: what fn raised on a series built in the sandbox (its result, if any, stays there)."""
    return {**outcome(lambda: getattr(module, fn)(inputs_from_code(series_code, "series"), *args)), "result": None}


def arange_code(T, F=0, dtype="float"):
    if F:
        return f"series = np.arange({T * F}.0).reshape({T}, {F})" if dtype == "float" else f"series = np.arange({T * F}, dtype=np.{dtype}).reshape({T}, {F})"
    return f"series = np.arange({T}.0)" if dtype == "float" else f"series = np.arange({T}, dtype=np.{dtype})"


def arange(T, F=0, dtype="float"):
    return inputs_from_code(arange_code(T, F, dtype), "series")


def series_code(series):
    """The np.arange code of an arange series, as a failing input shows it."""
    return arange_code(*series.shape, dtype="float" if series.dtype == np.float64 else series.dtype.name)


def judge_make(sub, series, L, H, s, *, code=None):
    """make_windows on series (by value, or built in the sandbox from `code`) against the expected windows."""
    if code:
        record = sub.run(on_series, code, "make_windows", [L, H, s])
        fail_if_changed(record["changed"], who="make_windows()", where=f"make_windows(series, {L}, {H}, {s}) with a strided series", fix=READ_ONLY)
        got = record["result"]
    else:
        got = inputs_unchanged(sub, "make_windows", series, L, H, s, fix=READ_ONLY)
    starts = starts_of(0, len(series), L + H, s)
    want = windows_at(series, starts, L, H)
    what = f"make_windows(series, {L}, {H}, {s}) with series of shape {series.shape}" + (" (a strided view)" if code else "")
    hint = matching(got, make_mistakes(series, L, H, s), want)
    with on_input(Call.code(f"{series_code(series)}\n{call_text('make_windows', (L, H, s))}")) if series.size > 20 and not code else contextlib.nullcontext():
        judge_pair(got, want, what=what, starts=starts, hint=hint)


def verify_make(sub, case):
    T, L, H, s, F = case
    judge_make(sub, arange(T, F), L, H, s)


def make_cases():
    from hypothesis import strategies as st

    return st.tuples(st.integers(0, 30), st.integers(1, 5), st.integers(1, 4), st.integers(1, 6), st.sampled_from([0, 1, 2, 3]))


# ---------------------------------------------------------------------------------------------
# Windows: checks
# ---------------------------------------------------------------------------------------------
@check("make_windows: window i starts at i * stride, X holds input_len steps and Y the horizon after them; the remainder dropped", uses=MAKE)
def window_values(sub, ctx):
    for T, L, H, s in ((7, 2, 1, 1), (10, 3, 2, 2), (10, 3, 2, 5), (5, 3, 2, 4), (12, 4, 3, 3), (9, 1, 1, 2)):
        judge_make(sub, arange(T), L, H, s)
    rng = ctx.rng(0)
    cases = [(int(rng.integers(8, 60)), int(rng.integers(1, 9)), int(rng.integers(1, 6)), int(rng.integers(1, 7)), 0) for _ in range(20)]
    with shrink_on_failure(sub, make_cases, lambda case: verify_make(sub, case), worth_shrinking=lambda failure: True):
        for case in cases:
            verify_make(sub, case)


@check("make_windows on a (T, F) series: X of shape (n, input_len, F), Y of shape (n, horizon, F)", uses=MAKE)
def window_features(sub, ctx):
    for T, F, L, H, s in ((6, 2, 2, 1, 2), (4, 1, 2, 1, 1), (9, 3, 3, 2, 2), (20, 4, 5, 3, 3)):
        judge_make(sub, arange(T, F), L, H, s)


@check("make_windows on a series too short for one window: empty X and Y of shapes (0, input_len[, F]) and (0, horizon[, F])", uses=MAKE,
       edge="a series too short for one window (`T < input_len + horizon`, including `T = 0`) gives `n = 0`: `X` of shape `(0, input_len)` (or"
            " `(0, input_len, F)`) and `Y` of shape `(0, horizon)` (or `(0, horizon, F)`), in the series' dtype.")
def window_empty(sub, ctx):
    # float64 first; then integer and float32 series, whose empty windows keep their dtype too
    for T, F, L, H, s, dtype in ((4, 0, 3, 2, 1, "float"), (0, 0, 2, 1, 1, "float"), (2, 3, 2, 1, 1, "float"), (6, 0, 4, 3, 5, "float"),
                                 (4, 0, 3, 2, 1, "int64"), (0, 0, 2, 1, 1, "float32"), (2, 3, 2, 1, 1, "int64")):
        judge_make(sub, arange(T, F, dtype), L, H, s)


STRIDED = [  # (code building a strided series, its windows' arguments)
    ("table = np.arange(24.0).reshape(12, 2)\nseries = table[:, 1]  # a column: every other number in memory", (3, 2, 3)),
    ("series = np.arange(30.0)[::3]  # every third step", (2, 2, 1)),
    ("table = np.arange(48.0).reshape(12, 4)\nseries = table[:, ::2]  # two of four columns", (3, 1, 2)),
]


@check("make_windows on a strided series (a column of a table, every third step): the right values", uses=MAKE)
def window_strided(sub, ctx):
    for code, (L, H, s) in STRIDED:
        series = inputs_from_code(code, "series")
        with on_input(Call.code(f"{code}\n{call_text('make_windows', (L, H, s))}")):
            judge_make(sub, series, L, H, s, code=code)


VIEW_CASES = [
    (arange_code(12), (3, 2, 2)),
    (arange_code(10, dtype="float32"), (2, 3, 1)),
    (arange_code(10, dtype="int64"), (4, 1, 3)),
    (arange_code(8, 2), (2, 2, 2)),
    *[(code, args) for code, args in STRIDED[:2]],
]


def series_text(series_code):
    """How the series reads in a message: the right-hand side of the code's last line."""
    return series_code.splitlines()[-1].split("=", 1)[1].split("#")[0].strip()


def judge_views(sub, fn, series_code, args):
    record = sub.run(view_probe, series_code, fn, list(args))
    series = inputs_from_code(series_code, "series")
    names = ("X", "Y") if fn == "make_windows" else ("X_tr", "Y_tr", "X_va", "Y_va")
    if fn == "make_windows":
        L, H, s = args
        parts = [starts_of(0, len(series), L + H, s)]
    else:
        split_at, gap, L, H, s = args
        parts = split_starts(len(series), split_at, gap, L + H, s)
    want = [array for starts in parts for array in windows_at(series, starts, L, H)]
    origins = [(starts, offset) for starts in parts for offset in (0, L)]  # where X's and Y's windows begin in the series
    what = f"{call_text(fn, args)} with series = {series_text(series_code)}"
    with on_input(Call.code(view_code(series_code, fn, args))):
        if "before" not in record:
            fail(f"{what}: expected " + ("a pair (X, Y)" if fn == "make_windows" else "a pair of pairs ((X_tr, Y_tr), (X_va, Y_va))"))
        judge_arrays(record["before"], want, what=what, names=names)
        if any(layout is None for layout in record["layouts"]):
            fail(f"{what}: the windows should be NumPy arrays themselves (np.ndarray, views of the series), not a subclass of it.")
        for name, before, after, w, layout, (starts, offset) in zip(names, record["before"], record["after"], want, record["layouts"], origins):
            if not w.size:
                continue  # an empty array shares nothing: any empty array of the right shape will do
            want_after = (w * 10 + 7).astype(w.dtype)  # every value v of the series became 10 v + 7
            if np.array_equal(after, before):
                fail(f"{what}: {name} kept its old values after the series changed ({MUTATION}), so it is a copy, not a view of the"
                     f" series: {name}[0] is still {_row(before)}, a view shows {_row(want_after)}. Build the windows with"
                     " np.lib.stride_tricks.sliding_window_view (or as_strided) and slice them; np.array, np.stack, np.copy or fancy"
                     " indexing copy.", what=name, got="a copy")
            assert_equal(after, want_after, what=f"{name} after {MUTATION}", scenario=what)
            # Re-checked here from plain data: a view's elements are the series' own, where the series keeps them.
            if not np.array_equal(element_addresses(layout), window_addresses(record["series"], starts, offset, w.shape)):
                fail(f"{what}: {name} holds the right values but not in the series' memory: it is a copy, however it reads inside your"
                     " process. Build the windows as views with np.lib.stride_tricks.sliding_window_view (or as_strided) and slice them.",
                     what=name, got="a copy in memory of its own")


def _row(a):
    return np.array2string(np.asarray(a)[0], separator=", ", threshold=8)


@check("make_windows returns views: X and Y show values written into the series after the call (also for a strided series)", uses=MAKE)
def window_views(sub, ctx):
    for code, args in VIEW_CASES:
        judge_views(sub, "make_windows", code, args)


def judge_split(sub, series, split_at, gap, L, H, s, side):
    """split_windows(series, ...) against the expected windows of one side ('train' or 'valid')."""
    args = (split_at, gap, L, H, s)
    got = inputs_unchanged(sub, "split_windows", series, *args, fix=READ_ONLY)
    starts = dict(zip(("train", "valid"), split_starts(len(series), split_at, gap, L + H, s)))
    parts = expect_sequence(got, 2, what=f"split_windows(series, {', '.join(map(str, args))})")
    index = 0 if side == "train" else 1
    where = {"train": f"Training windows are the windows of series[:{split_at}]: inputs and targets end before split_at = {split_at}.",
             "valid": f"Validation windows are the windows of series[{split_at + gap}:]: the first starts at split_at + gap = {split_at + gap},"
                      f" the next every stride = {s} steps."}[side]
    what = f"split_windows(series, {', '.join(map(str, args))}) with series of shape {series.shape}: {'(X_tr, Y_tr)' if side == 'train' else '(X_va, Y_va)'}"
    want = windows_at(series, starts[side], L, H)
    mistakes = {text: made[index] for text, made in split_mistakes(series, *args).items()}
    hint = f"{where} " + matching(parts[index], mistakes, want)
    with on_input(Call.code(f"{series_code(series)}\n{call_text('split_windows', args)}")) if series.size > 20 else contextlib.nullcontext():
        judge_pair(parts[index], want, what=what, names=("X_tr", "Y_tr") if side == "train" else ("X_va", "Y_va"), starts=starts[side], hint=hint.strip())


# (T, F, split_at, gap, input_len, horizon, stride[, dtype]): last, an empty side of an integer or float32 series, in its dtype
SPLIT_TRAIN = [(12, 0, 7, 1, 2, 2, 1), (20, 0, 11, 3, 3, 2, 2), (10, 0, 0, 2, 2, 1, 1), (10, 0, 10, 0, 2, 1, 3), (14, 2, 9, 2, 2, 2, 2), (30, 0, 17, 4, 5, 3, 4),
               (10, 0, 0, 2, 2, 1, 1, "int64")]
SPLIT_VALID = [(12, 0, 5, 2, 2, 1, 2), (15, 0, 6, 0, 2, 2, 1), (20, 0, 7, 3, 3, 1, 3), (10, 0, 6, 3, 2, 1, 1), (10, 0, 4, 1, 2, 3, 1), (14, 2, 5, 2, 2, 2, 2),
               (30, 0, 9, 4, 4, 2, 5), (10, 0, 6, 3, 2, 1, 1, "float32")]


@check("split_windows: the training windows are all windows of series[:split_at] (inputs and targets end before split_at)", uses=SPLIT)
def split_train(sub, ctx):
    for T, F, split_at, gap, L, H, s, *dtype in SPLIT_TRAIN:
        judge_split(sub, arange(T, F, *dtype), split_at, gap, L, H, s, "train")


@check("split_windows: validation windows start at split_at + gap, then every stride steps, the remainder dropped", uses=SPLIT)
def split_valid(sub, ctx):
    for T, F, split_at, gap, L, H, s, *dtype in SPLIT_VALID:
        judge_split(sub, arange(T, F, *dtype), split_at, gap, L, H, s, "valid")


LEAK_CASES = [(16, 0, 8, 2, 3, 2, 1), (24, 0, 13, 3, 2, 3, 2), (12, 2, 6, 1, 2, 2, 1)]


@check("no leakage across the split: changing series[split_at:] moves no training window, changing series[:split_at + gap] no validation window", uses=SPLIT)
def split_leakage(sub, ctx):
    for T, F, split_at, gap, L, H, s in LEAK_CASES:
        series, args = arange(T, F), (split_at, gap, L, H, s)
        base = inputs_unchanged(sub, "split_windows", series, *args, fix=READ_ONLY)
        base_call = Call("split_windows", series, *args)
        for side, changed_from, changed_to, names in (("train", split_at, T, ("X_tr", "Y_tr")), ("valid", 0, split_at + gap, ("X_va", "Y_va"))):
            changed = series.copy()
            changed[changed_from:changed_to] += 1000
            moved = inputs_unchanged(sub, "split_windows", changed, *args, fix=READ_ONLY)  # values up to 1000 + T
            index = 0 if side == "train" else 1
            what = f"split_windows(series, {', '.join(map(str, args))}), series of shape {series.shape}"
            with on_input(base_call):
                parts = [expect_sequence(expect_sequence(out, 2, what=what)[index], 2, what=f"{what}: {'/'.join(names)}") for out in (base, moved)]
            for name, a, b in zip(names, *parts):
                if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
                    fail(f"{what}: {name} is not an array of one shape for two series of the same length", failing_input=base_call)
                differ = np.argwhere(a != b)
                if len(differ):
                    i = int(differ[0][0])
                    seen = f"series[{changed_from}:{changed_to}]"
                    rule = (f"every training window, targets included, must end before split_at = {split_at}" if side == "train" else
                            f"every validation window must start at split_at + gap = {split_at + gap} or later")
                    fail(f"{what}: {name}[{i}] changed when only {seen} changed (+1000), so that window reads a value of {seen}: {name}[{i}] was"
                         f" {_row(a[i:i + 1])}, became {_row(b[i:i + 1])}; {rule}.", failing_input=Call.code(
                             f"series = {series_text(arange_code(*series.shape))}\nchanged = series.copy()\nchanged[{changed_from}:{changed_to}] += 1000\n"
                             f"a, b = split_windows(series, {', '.join(map(str, args))}), split_windows(changed, {', '.join(map(str, args))})\n"
                             f"a[{index}][{names.index(name)}][{i}], b[{index}][{names.index(name)}][{i}]  # the same window"), what=name, window=i)


@check("split_windows returns views of the series", uses=SPLIT)
def split_views(sub, ctx):
    for code, args in ((arange_code(16), (8, 2, 3, 2, 1)), (arange_code(12, 2), (6, 1, 2, 1, 2)), (STRIDED[0][0], (6, 1, 2, 1, 1))):
        judge_views(sub, "split_windows", code, args)


RAISE_CASES = [
    ("make_windows", arange_code(10), (0, 2, 1)), ("make_windows", arange_code(10), (3, 0, 1)), ("make_windows", arange_code(10), (3, 2, 0)),
    ("make_windows", arange_code(10), (3, 2, -1)), ("split_windows", arange_code(10), (5, -1, 2, 1, 1)),
    ("split_windows", arange_code(10), (-1, 0, 2, 1, 1)), ("split_windows", arange_code(10), (11, 0, 2, 1, 1)),
]


@check("input_len, horizon or stride below 1, a negative gap and split_at outside [0, T] raise ValueError", uses=MAKE + SPLIT,
       edge="`input_len`, `horizon` or `stride` below 1 raise `ValueError`. ... `0 <= split_at <= T` and `gap >= 0`; otherwise `ValueError`.")
def bad_arguments(sub, ctx):
    for fn, code, args in RAISE_CASES:
        expect_raises(sub.run(raises, code, fn, list(args)), what=f"{call_text(fn, args)} with series = {series_text(code)}", shown=lambda _: "normally")


# ---------------------------------------------------------------------------------------------
# Checkpoint: the training setup (runs in the sandbox, in the reference's sandbox, and as the failing input's code)
# ---------------------------------------------------------------------------------------------
def build_run(init_seed):
    """A small regressor with batch norm and dropout, Adam and StepLR; its weights drawn from init_seed."""
    torch.manual_seed(init_seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    return model, optimizer, scheduler


def train(model, optimizer, scheduler, steps):
    """steps training steps that draw from all three RNGs: NumPy's picks the batch, random's the noise level, torch's the noise and dropout."""
    data = torch.linspace(-2.0, 2.0, 320).reshape(64, 5).sin()  # fixed data, no RNG: x = data[:, :4], y = data[:, 4:]
    model.train()
    for _ in range(steps):
        rows = torch.from_numpy(np.random.randint(0, 64, size=8))
        noise = random.uniform(0.0, 0.1) * torch.randn(8, 4)
        loss = ((model(data[rows, :4] + noise) - data[rows, 4:]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()


def seed_all(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def trained_run(steps, seed=0):
    """The run of the scenarios: every RNG seeded with `seed`, build_run(0), then `steps` training steps."""
    seed_all(seed)
    run = build_run(0)
    train(*run, steps)
    return run


def training_code():
    return "import os, random, tempfile\nfrom torch import nn\n\n" + "\n\n".join(inspect.getsource(f).rstrip() for f in (build_run, train, seed_all)) + "\n\n"


SCRATCH_CODE = 'path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")\n'


@contextlib.contextmanager
def scratch_path():
    """A checkpoint path in a fresh folder of the sandbox's scratch space (tempfile draws from no global RNG)."""
    with scratch_folder("checkpoint-") as folder:
        yield os.path.join(folder, "checkpoint.pt")


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _first_checkpoint(module, path):
    """A checkpoint at step 3, then two more training steps: the run, the bytes at path, the model's state at step 3."""
    run = trained_run(3)
    module.save_checkpoint(path, *run, 3)
    first, at_3 = _read(path), state_of(run[0])["model"]
    train(*run, 2)
    return run, first, at_3


def saved_and_resumed(module, path, steps, step):
    """`steps` training steps, save_checkpoint(path, ..., step), then resume into fresh objects with every RNG scrambled:
    what resume returned, and the fresh model, optimizer and scheduler."""
    module.save_checkpoint(path, *trained_run(steps), step)
    fresh = build_run(7)
    seed_all(SCRAMBLE)
    return module.resume(path, *fresh), fresh


def _resumed_from(module, path):
    """resume(path, ...) into fresh objects (every RNG scrambled): the step it returned or what it raised, and the model's state."""
    fresh = build_run(7)
    seed_all(SCRAMBLE)
    try:
        step, error = module.resume(path, *fresh), None
    except Exception as exc:  # a checkpoint that does not load: the verdict, not a crash of the check
        step, error = None, f"{type(exc).__name__}: {exc}"[:300]
    return {"step": step, "resume_error": error, "model": state_of(fresh[0])["model"]}


def snapshot(model, optimizer, scheduler):
    """state_of the three, the optimizer's state keyed by parameter index as in optimizer.state_dict()["state"]."""
    state = state_of(model, optimizer, scheduler)
    return {**state, "optimizer": {i: entry for i, entry in enumerate(state["optimizer"]) if entry}}


def rng_draws():
    """The next draws of torch's CPU generator, NumPy's global one and Python's random."""
    return {"torch": torch.rand(3, dtype=torch.float64), "numpy": np.random.random_sample(3), "random": [random.random() for _ in range(3)]}


def rng_states():
    _, key, pos, has_gauss, gauss = np.random.get_state()
    return {"torch": torch.get_rng_state(), "numpy": [np.asarray(key), pos, has_gauss, gauss], "random": list(random.getstate()[1])}


def resume_code(steps, step, then=""):
    return (training_code() + SCRATCH_CODE + f"seed_all(0)\nmodel, optimizer, scheduler = build_run(0)\ntrain(model, optimizer, scheduler, {steps})\n"
            f"save_checkpoint(path, model, optimizer, scheduler, {step})\nmodel2, optimizer2, scheduler2 = build_run(7)  # fresh objects, other weights\n"
            f"seed_all({SCRAMBLE})  # scramble every RNG\nstep = resume(path, model2, optimizer2, scheduler2)\n{then}")


@scenario(repro=lambda interface, steps, step, show: Call.code(resume_code(steps, step) + show))
def resumed_state(module, steps, step, show=""):
    """Scenario: `steps` training steps, save_checkpoint(path, ..., step), fresh objects, every RNG scrambled, resume:
    what resume returned, the fresh objects' state and the RNGs' next draws."""
    with scratch_path() as path:
        got, fresh = saved_and_resumed(module, path, steps, step)
        return {"step": got, "state": snapshot(*fresh), "draws": rng_draws()}


def trained_state(module, steps):
    """Reference's sandbox, no checkpoint: the state after `steps` steps, the RNGs' next draws, and a fresh build_run(7)'s state."""
    run = trained_run(steps)
    return {"state": snapshot(*run), "draws": rng_draws(), "fresh": snapshot(*build_run(7))}


def judge_tensors(got, want, *, what, scenario_text, fresh=None, fix=""):
    """Dicts of tensors (name -> tensor) equal, bit for bit."""
    if not isinstance(got, dict) or set(got) != set(want):
        fail(f"{what} ({scenario_text}): expected entries {sorted(want)}, got {sorted(got) if isinstance(got, dict) else got!r}")
    for name in want:
        if not torch.equal(torch.as_tensor(got[name]), want[name]):
            unchanged = fresh is not None and name in fresh and torch.equal(torch.as_tensor(got[name]), fresh[name])
            hint = f"It still holds the fresh object's value: {fix}" if unchanged else ""
            assert_equal(got[name], want[name], what=f"{what}: {name}", scenario=scenario_text, hint=hint)
            g = torch.as_tensor(got[name])
            fail(f"{what}: {name} ({scenario_text}): the values are equal but the tensors are not: expected dtype {want[name].dtype},"
                 f" got {g.dtype}", expected=str(want[name].dtype), got=str(g.dtype))


def resumed(sub, ctx, show):
    got = sub.run(resumed_state, RESUME_AT, RESUME_AT, show)
    want = ctx.run_reference_sandboxed(trained_state, RESUME_AT)
    return got, want, f"saved after {RESUME_AT} steps, resumed into fresh objects with every RNG scrambled"


def as_step(value, what, scenario_text):
    if isinstance(value, bool) or not (isinstance(value, (int, float, np.integer, np.floating)) or (torch.is_tensor(value) and value.numel() == 1)):
        fail(f"{what} ({scenario_text}): expected the step saved, an int, got {type(value).__name__} {value!r}"[:300])
    return float(value.item() if torch.is_tensor(value) else value)


# ---------------------------------------------------------------------------------------------
# Checkpoint: checks of what resume restores
# ---------------------------------------------------------------------------------------------
LATEST_CODE = (training_code() + SCRATCH_CODE + "seed_all(0)\nmodel, optimizer, scheduler = build_run(0)\ntrain(model, optimizer, scheduler, 3)\n"
               "save_checkpoint(path, model, optimizer, scheduler, 3)\ntrain(model, optimizer, scheduler, 2)\n"
               "save_checkpoint(path, model, optimizer, scheduler, 5)  # replaces the first\nresume(path, *build_run(7))")


@scenario(repro=lambda interface: Call.code(LATEST_CODE))
def latest_step(module):
    """Scenario: two saves to the same path, then resume: what it returned, and whether the second save rewrote the file."""
    with scratch_path() as path:
        run, first, _ = _first_checkpoint(module, path)
        module.save_checkpoint(path, *run, 5)
        return {"step": module.resume(path, *build_run(7)), "rewritten": _read(path) != first}


@check("resume returns the step of the latest save_checkpoint at path (a second save replaces the first)", uses=CHECKPOINT)
def resume_step(sub, ctx):
    got = expect_record(sub.run(latest_step), ("step", "rewritten"), what="resume(path, model, optimizer, scheduler)")
    scenario_text = "saved at step 3, then at step 5 to the same path"
    value = as_step(got["step"], "resume(path, model, optimizer, scheduler)", scenario_text)
    if value != 5:
        hint = ("" if value != 3 else " That is the first save's step: the second save_checkpoint did not replace the file at path."
                if not got["rewritten"] else " That is the first save's step, although the second save_checkpoint rewrote the file at path:"
                " does the checkpoint hold the step it was given?")
        fail(f"resume(path, model, optimizer, scheduler) ({scenario_text}): expected 5, got {got['step']!r}.{hint}", expected="5", got=repr(got["step"]))


@check("resume loads the model's parameters and buffers (batch norm's running statistics) into the model passed to it", uses=CHECKPOINT)
def resume_model(sub, ctx):
    got, want, text = resumed(sub, ctx, show="model2.state_dict()")
    judge_tensors(got["state"]["model"], want["state"]["model"], what="model2.state_dict() after resume", scenario_text=text,
                  fresh=want["fresh"]["model"], fix="resume must load the checkpoint into the model it is given (model.load_state_dict(...)).")


@check("resume loads the optimizer's state (Adam's moments and step counts, the learning rate) into the optimizer passed to it", uses=CHECKPOINT)
def resume_optimizer(sub, ctx):
    got, want, text = resumed(sub, ctx, show="optimizer2.state_dict()")
    state, expected = got["state"]["optimizer"], want["state"]["optimizer"]
    if not state:
        fail(f"optimizer2.state_dict()['state'] after resume ({text}): empty, as a fresh Adam's; expected the moments (exp_avg, exp_avg_sq)"
             f" and step counts of its {len(expected)} parameters after {RESUME_AT} steps. Save optimizer.state_dict() and load it into the"
             " optimizer given to resume (optimizer.load_state_dict(...)): without it Adam restarts its averages and bias correction.",
             what="optimizer state", got="empty")
    if set(state) != set(expected):
        fail(f"optimizer2.state_dict()['state'] after resume ({text}): expected the state of parameters {sorted(expected)}, got {sorted(state)}")
    for i in sorted(expected):
        judge_tensors({k: torch.as_tensor(v) for k, v in state[i].items()}, {k: torch.as_tensor(v) for k, v in expected[i].items()},
                      what=f"optimizer2.state_dict()['state'][{i}]", scenario_text=text)
    assert_equal(got["state"]["lr"], want["state"]["lr"], what="the learning rate of each of optimizer2.param_groups", scenario=text)


@check("resume loads the scheduler's state (its epoch count, the last learning rate) into the scheduler passed to it", uses=CHECKPOINT)
def resume_scheduler(sub, ctx):
    got, want, text = resumed(sub, ctx, show="scheduler2.state_dict()")
    sched, expected = got["state"]["scheduler"], want["state"]["scheduler"]
    fresh = want["fresh"]["scheduler"]
    if sched["last_epoch"] != expected["last_epoch"]:
        hint = (f" {sched['last_epoch']} is a fresh scheduler's: save scheduler.state_dict() and load it into the scheduler given to resume"
                " (scheduler.load_state_dict(...)); otherwise StepLR decays at the wrong steps.") if sched["last_epoch"] == fresh["last_epoch"] else ""
        fail(f"scheduler2.last_epoch after resume ({text}): expected {expected['last_epoch']}, got {sched['last_epoch']}.{hint}",
             expected=str(expected["last_epoch"]), got=str(sched["last_epoch"]))
    assert_equal(sched["last_lr"], expected["last_lr"], what="scheduler2.get_last_lr() after resume", scenario=text)


RNG_NAMES = {"torch": "torch's CPU generator (torch.get_rng_state)", "numpy": "NumPy's global generator (np.random.get_state)",
             "random": "Python's random (random.getstate)"}


@check("resume restores the RNG states: torch's CPU generator, NumPy's global one and Python's random draw what they would have drawn after the save", uses=CHECKPOINT)
def resume_rng(sub, ctx):
    draws = "torch.rand(3, dtype=torch.float64), np.random.random_sample(3), [random.random() for _ in range(3)]  # the next draws"
    got, want, text = resumed(sub, ctx, show=draws)
    scrambled = scrambled_draws(SCRAMBLE)
    for name in ("torch", "numpy", "random"):
        values = np.asarray(got["draws"][name], dtype=np.float64)
        if not np.array_equal(values, np.asarray(want["draws"][name], dtype=np.float64)):
            hint = (f"These are the draws of a generator seeded with {SCRAMBLE}, the grader's scramble just before resume: resume left this"
                    " generator as it found it. Save its state in save_checkpoint and set it in resume." if np.array_equal(values, scrambled[name]) else
                    "Save its state in save_checkpoint and set it in resume, after anything in resume that draws from it.")
            fail(f"{RNG_NAMES[name]} after resume ({text}): its next draws are {np.round(values, 6).tolist()},"
                 f" not {np.round(np.asarray(want['draws'][name], dtype=float), 6).tolist()}, what it would have drawn right after the save. {hint}",
                 what=name, got=str(values.tolist()))


def scrambled_draws(seed):
    """What rng_draws gives right after seed_all(seed), computed with generators of their own (the judge's global ones stay put)."""
    return {"torch": torch.rand(3, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).numpy(),
            "numpy": np.random.RandomState(seed).random_sample(3), "random": np.array([r.random() for r in [random.Random(seed)] for _ in range(3)])}


# ---------------------------------------------------------------------------------------------
# Checkpoint: save draws nothing; resumed training is bit for bit
# ---------------------------------------------------------------------------------------------
SAVE_RNG_CODE = (training_code() + SCRATCH_CODE + "seed_all(1)\nmodel, optimizer, scheduler = build_run(0)\ntrain(model, optimizer, scheduler, 2)\n"
                 "before = torch.get_rng_state(), np.random.get_state()[1], random.getstate()\nsave_checkpoint(path, model, optimizer, scheduler, 2)\n"
                 "after = torch.get_rng_state(), np.random.get_state()[1], random.getstate()\n"
                 "torch.equal(before[0], after[0]), np.array_equal(before[1], after[1]), before[2] == after[2]")


@scenario(repro=lambda interface: Call.code(SAVE_RNG_CODE))
def save_rng(module):
    with scratch_path() as path:
        run = trained_run(2, seed=1)
        before, objects, training = rng_states(), snapshot(*run), run[0].training
        module.save_checkpoint(path, *run, 2)
        return {"before": before, "after": rng_states(), "objects_before": flat(objects), "objects_after": flat(snapshot(*run)),
                "training": [training, run[0].training]}


def _same_state(name, before, after):
    if name == "torch":
        return torch.equal(before, after)
    return np.array_equal(before[0], after[0]) and list(before[1:]) == list(after[1:]) if name == "numpy" else before == after


def _draws_between(name, before, after, limit=2000):
    """How many single draws (of 32 bits) lead a generator from the state `before` to `after`; None when none up to
    `limit` does (it was reseeded or set, or drew in another way)."""
    if name == "torch":
        generator = torch.Generator()
        generator.set_state(before)
        draw, state = lambda: torch.randint(0, 2, (1,), generator=generator), generator.get_state
    elif name == "numpy":
        generator = np.random.RandomState()
        generator.set_state(("MT19937", np.asarray(before[0], dtype=np.uint32), *before[1:]))
        draw, state = lambda: generator.randint(0, 2**32, dtype=np.uint32), lambda: [generator.get_state()[1], *generator.get_state()[2:]]
    else:
        generator = random.Random()
        generator.setstate((3, tuple(before), None))
        draw, state = lambda: generator.getrandbits(32), lambda: list(generator.getstate()[1])
    for n in range(1, limit + 1):
        draw()
        if _same_state(name, state(), after):
            return n
    return None


def flat(snap):
    """A snapshot as one dict of tensors: model entries, optimizer state, learning rates, the scheduler's counters."""
    out = {f"model.state_dict()['{k}']": v for k, v in snap["model"].items()}
    out.update({f"optimizer.state_dict()['state'][{i}]['{k}']": torch.as_tensor(v) for i, s in snap["optimizer"].items() for k, v in s.items()})
    out["optimizer.param_groups[...]['lr']"] = torch.tensor(snap["lr"], dtype=torch.float64)
    out["scheduler.last_epoch"] = torch.tensor(snap["scheduler"]["last_epoch"])
    return out


@check("save_checkpoint changes nothing: the three RNGs keep their states (it draws no random number), the model, optimizer and scheduler"
       " theirs", uses=CHECKPOINT)
def save_changes_nothing(sub, ctx):
    got = sub.run(save_rng)
    for name in ("torch", "numpy", "random"):
        before, after = got["before"][name], got["after"][name]
        if not _same_state(name, before, after):
            drawn = _draws_between(name, before, after)
            how = (f"saving drew {plural(drawn, 'random number')} from it (a random temporary name, say)" if drawn else
                   "saving drew from it or set it anew (no run of single draws leads from its state before to its state after)")
            fail(f"the state of {RNG_NAMES[name]} changed during save_checkpoint (after 2 training steps): {how}, so a run that saves a checkpoint"
                 " goes on with another random stream than one that does not. Name the temporary file from path (path + '.tmp') or with tempfile,"
                 " which has its own generator, and only read the states (get_state).", what=name, got="changed")
    if got["training"][0] != got["training"][1]:
        fail(f"model.training was {got['training'][0]} before save_checkpoint and {got['training'][1]} after: saving must leave the model in"
             " the mode it found it in (state_dict() needs neither eval() nor train()).", what="model.training", got=str(got["training"][1]))
    judge_tensors(got["objects_after"], got["objects_before"], what="after save_checkpoint", scenario_text="saved after 2 training steps;"
                  " expected every entry as it was before the call")


@scenario(repro=lambda interface, total, k: Call.code(resume_code(k, k, f"train(model2, optimizer2, scheduler2, {total - k})\n") + (
    f"seed_all(0)\nreference = build_run(0)\ntrain(*reference, {total})  # the uninterrupted run\n"
    "step, [torch.equal(a, b) for a, b in zip(model2.state_dict().values(), reference[0].state_dict().values())]")))
def resumed_training(module, total, k):
    """Scenario: k steps, a checkpoint, fresh objects and scrambled RNGs, resume, total - k more steps: the final model."""
    with scratch_path() as path:
        step, fresh = saved_and_resumed(module, path, k, k)
        train(*fresh, total - k)
        return {"step": step, "model": snapshot(*fresh)["model"]}


LEFT_OUT = {  # part of the state a resume leaves out: what a run resumed that way looks like
    ("torch", "numpy", "random"): "the RNG states were not restored (torch's, NumPy's and random's): dropout masks, batches and noise differ",
    ("numpy", "random"): "only torch's RNG state was restored: NumPy's global generator (the batches) and Python's random (the noise level) were not",
    ("optimizer",): "Adam's state (exp_avg, exp_avg_sq, step) was not restored: its averages and bias correction restart",
    ("scheduler",): "the scheduler was not restored: StepLR counts its steps from 0 again and halves the rate at the wrong steps",
    ("model", "optimizer", "scheduler"): "the model, optimizer and scheduler passed to resume kept their fresh state: the states went somewhere else",
}


def resumed_without(module, total, k, parts_list):
    """Reference's sandbox: runs resumed by the grader itself, restoring everything but each of `parts_list`: their final models."""
    out = []
    for parts in parts_list:
        run = trained_run(k)
        saved = {"model": copy.deepcopy(run[0].state_dict()), "optimizer": copy.deepcopy(run[1].state_dict()), "scheduler": copy.deepcopy(run[2].state_dict()),
                 "torch": torch.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate()}
        fresh = build_run(7)
        seed_all(SCRAMBLE)
        for name, obj in zip(("model", "optimizer", "scheduler"), fresh):
            if name not in parts:
                obj.load_state_dict(saved[name])
        for name, restore in (("torch", torch.set_rng_state), ("numpy", np.random.set_state), ("random", random.setstate)):
            if name not in parts:
                restore(saved[name])
        train(*fresh, total - k)
        out.append(snapshot(*fresh)["model"])
    return out


def resumed_like(ctx, got_model, total, k):
    parts_list = [list(parts) for parts in LEFT_OUT]
    for parts, model in zip(LEFT_OUT, ctx.run_reference_sandboxed(resumed_without, total, k, parts_list)):
        if set(model) == set(got_model) and all(torch.equal(torch.as_tensor(got_model[n]), model[n]) for n in model):
            return f"Your run ends exactly where a run ends whose resume got everything right but one thing: {LEFT_OUT[parts]}."
    return ""


@check(f"training resumed from a checkpoint matches the uninterrupted run bit for bit ({RESUME_AT} + {TOTAL - RESUME_AT} steps:"
       " dropout, batch norm, Adam, StepLR, all three RNGs)", uses=CHECKPOINT)
def bit_for_bit(sub, ctx):
    got = sub.run(resumed_training, TOTAL, RESUME_AT)
    want = ctx.run_reference_sandboxed(trained_state, TOTAL)["state"]["model"]
    text = f"{RESUME_AT} steps, save_checkpoint, fresh objects and scrambled RNGs, resume, {TOTAL - RESUME_AT} more steps, against {TOTAL} uninterrupted steps"
    if as_step(got["step"], "resume's result", text) != RESUME_AT:
        fail(f"resume's result ({text}): expected the step saved, {RESUME_AT}, got {got['step']!r}", expected=str(RESUME_AT), got=repr(got["step"]))
    model = got["model"]
    for name in want:
        if not torch.equal(torch.as_tensor(model[name]), want[name]):
            try:
                assert_equal(model[name], want[name], what=f"model2.state_dict()['{name}'] after the resumed run", scenario=text)
            except CheckFailed as failure:
                failure.explain = lambda: resumed_like(ctx, model, TOTAL, RESUME_AT)
                raise


# ---------------------------------------------------------------------------------------------
# Checkpoint: crashes during a save (mlprep.grading.crashes: torch.save half written, kills after any file call)
# ---------------------------------------------------------------------------------------------
SAVES = [(torch, "save"), (torch.serialization, "save")]  # torch.save as learner code calls it
TORCH_SAVE = [(torch, "save", (1,))]  # torch.save(obj, f) writes from C++: one file call of its own
AFTER_FIRST_SAVE = ["seed_all(0)", "model, optimizer, scheduler = build_run(0)", "train(model, optimizer, scheduler, 3)",
                    "save_checkpoint(path, model, optimizer, scheduler, 3)", "train(model, optimizer, scheduler, 2)"]
RESUME_FIRST = ["model2, optimizer2, scheduler2 = build_run(7)", f"seed_all({SCRAMBLE})",
                "resume(path, model2, optimizer2, scheduler2), model2.state_dict()  # a whole checkpoint: the step and its weights"]
CRASHING_SAVE = """real_save = torch.save
def crashing_save(obj, f, *args, **kwargs):  # the grader's torch.save: it writes half of the real bytes, then crashes
    buffer = io.BytesIO()
    real_save(obj, buffer, *args, **kwargs)
    part = buffer.getvalue()[: len(buffer.getvalue()) // 2]
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "wb") as out:
            out.write(part)
    else:  # a file or any object with a write method
        f.write(part)
        getattr(f, "flush", lambda: None)()
    {crash}"""


def crash_code(mode):
    crash = 'raise OSError(errno.ENOSPC, "No space left on device")' if mode == "raise" else "os.kill(os.getpid(), signal.SIGKILL)"
    lines = [training_code() + "import errno, io, signal\n", CRASHING_SAVE.replace("{crash}", crash), "", SCRATCH_CODE.rstrip(), *AFTER_FIRST_SAVE]
    if mode == "raise":
        lines += ["torch.save = crashing_save", "try:", "    save_checkpoint(path, model, optimizer, scheduler, 5)  # must raise",
                  "except OSError:", "    pass  # as it should", "finally:", "    torch.save = real_save"]
    else:
        lines += ["pid = os.fork()", "if pid == 0:  # a child process, killed in the middle of torch.save",
                  "    torch.cuda.is_available, torch.cuda.device_count = (lambda: False), (lambda: 0)  # no CUDA in a forked child",
                  "    torch.save = crashing_save", "    save_checkpoint(path, model, optimizer, scheduler, 5)", "    os._exit(3)", "os.waitpid(pid, 0)"]
    return "\n".join(lines + RESUME_FIRST)


def in_child_code(then):
    """Code running the save at step 5 in a child process as crash_points does (mlprep.grading.crashes.in_child), then `then`."""
    return "\n".join([training_code() + "from mlprep.grading.crashes import in_child  # mlprep's crash points\n", SCRATCH_CODE.rstrip(), *AFTER_FIRST_SAVE,
                      "ended = in_child(lambda: save_checkpoint(path, model, optimizer, scheduler, 5), target=path, also=[(torch, 'save', (1,))])",
                      *then])


def _killed_in_torch_save(save, at=1):
    """In a forked child: the save, its torch.save call number `at` writing half of its bytes and then killed."""
    with half_written(SAVES, REAL_SAVE, crash="kill", at=at):
        save()


@scenario(repro=lambda interface, mode: Call.code(crash_code(mode)))
def crash_during_save(module, mode):
    """Scenario: a checkpoint at step 3, two more steps, then a save at step 5 whose torch.save writes half of the file
    and fails (mode "raise") or is killed (mode "kill", in a forked child); then resume into fresh objects."""
    with scratch_path() as path:
        run, first, _ = _first_checkpoint(module, path)
        record = {"first_size": None if first is None else len(first)}
        save = partial(module.save_checkpoint, path, *run, 5)
        if mode == "raise":
            with half_written(SAVES, REAL_SAVE, crash="raise") as crash:
                try:
                    save()
                    record["raised"] = None
                except Exception as exc:  # what the learner's save let through: named for the judge
                    record["raised"] = f"{type(exc).__name__}: {exc}"[:300]
            record["files"] = crash["calls"]
        else:
            ended = in_child(partial(_killed_in_torch_save, save), target=path)
            record["files"] = int(ended["ended"] == "killed")
            record["child"] = {"killed": "killed", "returned": "returned", "raised": f"raised {ended['message']}"}.get(ended["ended"], "ended")
        now = _read(path)
        record.update(unchanged=now is not None and now == first, size=None if now is None else len(now))
        return {**record, **_resumed_from(module, path)}


def judge_resumed(record, want, text, *, at=None):
    """The checkpoint at path after a crash resumes into the fresh objects: the previous one (step 3), or, with `at` (the
    states saved at each step), the new one (step 5) too."""
    if record["resume_error"] is not None:
        if record["size"] is None:
            where = "path no longer exists: the previous checkpoint was removed before the new one was complete"
        elif not record.get("unchanged", False):
            where = (f"the file at path holds {record['size']} bytes" + (f" instead of the first checkpoint's {record['first_size']}" if record.get("first_size") else "")
                     + ": save_checkpoint wrote into path itself, so the crash left a truncated file there")
        else:
            where = "path still holds the first checkpoint, byte for byte, but resume cannot read it"
        fix = " Write to a temporary file in the same directory and move it onto path with os.replace once it is complete." if not record.get("unchanged") else ""
        fail(f"resume(path, ...) after the crashed save ({text}): {where}; resume raised {record['resume_error']}.{fix}",
             what="resume", got=record["resume_error"].split(":")[0])
    step = as_step(record["step"], "resume's result", text)
    if step != 3 and not (at and step == 5):
        fail(f"resume's result after the crashed save ({text}): expected 3, the step of the checkpoint at path{' (or 5, the new one)' if at else ''}, got"
             f" {record['step']!r}", expected="3", got=repr(record["step"]))
    judge_tensors(record["model"], at[int(step)] if at else want["state"]["model"], what="model2.state_dict() after resume", scenario_text=text,
                  fresh=want["fresh"]["model"], fix="resume must load the checkpoint into the model it is given.")


def judge_crash(sub, ctx, mode):
    record = sub.run(crash_during_save, mode)
    crash = {"raise": "whose torch.save writes half of the file and raises OSError",
             "kill": "in a child process whose torch.save writes half of the file and is killed (SIGKILL)"}[mode]
    text = f"a checkpoint saved at step 3, then a save at step 5 {crash}"
    if record["first_size"] is None:
        fail(f"save_checkpoint(path, model, optimizer, scheduler, 3) left no file at path ({text}): the checkpoint must be at path itself.")
    if not record["files"]:
        done = {"raise": "returned" if record.get("raised") is None else f"raised {record['raised']}", "kill": record.get("child")}[mode]
        if done.startswith("raised"):
            fail(f"save_checkpoint(path, ..., 5) ({text}): it {done} before torch.save wrote anything, though the save at step 3 worked.")
        fail(f"save_checkpoint(path, ..., 5) ({text}): it {done} without calling torch.save, so no crash could be simulated. Write the checkpoint"
             " with torch.save(obj, f), called as torch.save, with f a path or a file-like object, as the prompt asks.")
    if mode == "raise" and record["raised"] is None:
        fail(f"save_checkpoint(path, ..., 5) ({text}): it returned normally, as if the checkpoint had been written. Let the error"
             " reach the caller (re-raise it after cleaning up), who must know that the save failed.", what="save_checkpoint", got="returned")
    judge_resumed(record, ctx.run_reference_sandboxed(trained_state, 3), text)


@check("a save that fails part-way (torch.save writes half of the file, then raises OSError) raises, and the previous checkpoint still resumes", uses=CHECKPOINT)
def crash_raising(sub, ctx):
    judge_crash(sub, ctx, "raise")


@check("a process killed part-way through a save (SIGKILL inside torch.save) leaves the previous checkpoint resumable", uses=CHECKPOINT)
def crash_killed(sub, ctx):
    judge_crash(sub, ctx, "kill")


@scenario(repro=lambda interface: Call.code(in_child_code(["ended['calls']  # the save's file-system calls, in order"])))
def save_calls(module):
    """Scenario: the save at step 5 run whole in a forked child: how it ended and its file-system calls."""
    with scratch_path() as path:
        run, _, _ = _first_checkpoint(module, path)
        return in_child(partial(module.save_checkpoint, path, *run, 5), target=path, also=TORCH_SAVE)


@check("the temporary file that save_checkpoint moves onto path is in path's own folder (os.replace is atomic only within one file system)",
       uses=CHECKPOINT)
def temporary_in_path_folder(sub, ctx):
    record = expect_record(sub.run(save_calls), ("ended", "calls"), what="save_checkpoint(path, ..., 5) in a child process")
    moved = [c for c in record["calls"] if c["call"] in ("os.replace", "os.rename", "os.link") and c["files"][1:] == ["path"] and c["files"][0] != IN_FOLDER]
    if moved:
        fail(f"save_checkpoint(path, ..., 5) (a checkpoint saved at step 3 at the same path) moved {moved[0]['files'][0]} onto path"
             f" ({moved[0]['text']}): the temporary file must be in path's own folder. os.replace is atomic only within one file system, and"
             " another folder (tempfile.gettempdir(), say) may be on another one: there the move fails, or shutil.move falls back to a copy"
             " that a crash can cut short. Name it after path (path + '.tmp') or create it with tempfile.mkstemp(dir=os.path.dirname(path)).",
             what="the file moved onto path", got=moved[0]["files"][0], first_index="")


@scenario(repro=lambda interface: Call.code(in_child_code(["# ... and once more per crash point, killed right after file call k (kill_after=k) or in",
                                                          "# the middle of a torch.save (half of its bytes written), then:", *RESUME_FIRST])))
def killed_saves(module):
    """Scenario: the save at step 5 run whole in a forked child (its file calls), then once per crash point in a child
    killed there: right after a file call, or in the middle of a torch.save (which writes from C++: its own writes are
    out of sight, so half of its bytes are written and the child killed). After each, resume into fresh objects, and
    the folder put back as it was before the save."""
    with scratch_path() as path:
        run, first, at_3 = _first_checkpoint(module, path)
        save, folder = partial(module.save_checkpoint, path, *run, 5), os.path.dirname(path)
        before = folder_files(folder)
        whole = in_child(save, target=path, also=TORCH_SAVE)
        restore_folder(folder, before)
        saves = [k for k, call in enumerate(whole["calls"], 1) if call["call"] == "torch.save"]
        points = []
        for k in sorted({*crash_points(whole["calls"]), *(-k for k in saves)}, key=lambda k: (abs(k), k > 0)):
            inside = k < 0  # in the middle of the torch.save that is file call -k
            run_it = partial(_killed_in_torch_save, save, saves.index(-k) + 1) if inside else save
            in_child(run_it, target=path, kill_after=None if inside else k, also=TORCH_SAVE)
            now = _read(path)
            call = whole["calls"][abs(k) - 1]["text"]
            points.append({"k": abs(k), "after": f"in the middle of {call}" if inside else f"right after {call}", "size": None if now is None else len(now),
                           "unchanged": now == first, **_resumed_from(module, path)})
            restore_folder(folder, before)
        return {"ended": whole["ended"], "message": whole["message"], "calls": whole["calls"], "points": points, "at": {3: at_3, 5: state_of(run[0])["model"]}}


@check("a process killed at any step of a save (SIGKILL right after any file-system call, or inside torch.save) leaves at path a checkpoint that"
       " resumes: the previous one or the new one, whole", uses=CHECKPOINT)
def crash_at_any_step(sub, ctx):
    record = expect_record(sub.run(killed_saves), ("ended", "calls", "points", "at"), what="save_checkpoint(path, ..., 5) killed in child processes")
    if record["ended"] != "returned":
        fail(f"save_checkpoint(path, ..., 5) in a child process (a checkpoint saved at step 3 at the same path) {record['ended']}"
             f" {record['message']}".rstrip() + ": a save must work in a forked process (where CUDA is not available) too.")
    want = ctx.run_reference_sandboxed(trained_state, 3)
    for point in record["points"]:
        text = f"a checkpoint saved at step 3, then a save at step 5 killed {point['after']} (file call {point['k']} of {len(record['calls'])})"
        # What a crash there left, as the diagnosis compares it: the same whatever call it came after.
        left = "the checkpoint at path after a kill during the save"
        if point["resume_error"] is not None and point["size"] is None:
            fail(f"resume(path, ...) after a crash ({text}): path no longer exists: the previous checkpoint was removed before the new one was in place."
                 f" os.replace(tmp, path) replaces path in one step: remove nothing first. resume raised {point['resume_error']}.", what=left,
                 got="no file at path", first_index="")
        if point["resume_error"] is not None and not point["unchanged"]:
            fail(f"resume(path, ...) after a crash ({text}): path holds {point['size']} bytes that do not resume: the save writes into path itself,"
                 " and a kill before that write ends leaves a partial checkpoint. Write the whole checkpoint to a temporary file in path's folder"
                 f" and move it onto path with os.replace: a copy onto path can be cut short, a rename cannot. resume raised {point['resume_error']}.",
                 what=left, got="a file that does not resume", first_index="")
        judge_resumed(point, want, text, at=record["at"])
