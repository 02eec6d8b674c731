"""The grader toolkit: every grader in graders/ is written with these pieces and nothing else.

A grader is a module of checks:

    @check("matches torch.optim.AdamW over 200 float64 steps")
    def lockstep_float64(sub, ctx):
        got = sub.call("adamw", w, g, m, v, 1)          # the learner's code, in the sandbox
        want = ctx.reference.adamw(w, g, m, v, 1)        # the reference, here
        assert_close(got[0], want[0], what="w", scenario="float64, shape (3, 4)")

Checks run in the judge process, which never runs learner code; the learner's code runs in a sandbox
process (see _runner and _sandbox) that only ever hands back plain data. So whatever the learner's
code does to NumPy, torch or this module inside its own process, the comparisons here are untouched.

The smallest failing input comes with every failed check without any work in the grader: the
Submission remembers each call it makes, and a check that fails reports the call whose result it was
judging (the last one, unless the grader names another with `on_input`), written as Python the
learner can paste (see _repro). So a check should try its cases from small to large; where random
cases are drawn, `shrink_on_failure` asks Hypothesis for a smaller failing case once one fails.

This module imports NumPy but not torch: NumPy-only graders stay fast. Torch is imported lazily by
the helpers that need it, and Hypothesis only once a check has failed and shrinks.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import gc
import inspect
import os
import threading
import time
import tracemalloc
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NoReturn, Sequence

import numpy as np

from mlprep.grading._repro import Call, Described, complete, literal
from mlprep.grading._wire import Opaque, decode, encode, origin_device
from mlprep.results import MAX_DETAIL_ITEMS, jsonable

__all__ = [
    "check", "scenario", "CheckFailed", "fail", "reported_message", "Opaque", "Submission", "Context", "Call", "literal", "on_input", "shrink_on_failure",
    "assert_close", "assert_equal", "assert_finite", "assert_shape", "assert_dtype", "assert_returns_like", "assert_keeps_precision",
    "tolerance_for", "expect_sequence", "as_float", "inputs_unchanged", "invariance_probe", "gradcheck_float64", "value_and_grad",
    "peak_traced_memory", "time_ratio", "growth_check", "Growth", "measure_peak_memory", "PeakMemory", "origin_device", "GraderDefect",
    "logsumexp", "log_softmax", "inputs_from_code", "Series", "series_on_failure",
]

# torch.testing.assert_close's defaults, per dtype: (rtol, atol).
_TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "complex128": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
}


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckSpec:
    name: str
    fn: Callable
    devices: tuple[str, ...] | None  # None: device-independent, runs once
    uses: tuple[str, ...] | None = None  # the interface names it calls; None: all of them


def check(name: str, *, devices: Sequence[str] | None = None, uses: Sequence[str] | None = None) -> Callable:
    """Mark `fn(sub, ctx)` as a check. devices=("cpu", "cuda") runs it once per device. `uses` names
    the functions (or classes) of the interface it calls, when not all of them: after one of them
    hits its time limit, the checks that use it again are not run (a hang costs one time limit)."""

    def mark(fn: Callable) -> Callable:
        fn.__mlprep_check__ = CheckSpec(name, fn, tuple(devices) if devices else None, tuple(uses) if uses else None)
        return fn

    return mark


def scenario(*, repro: Callable[..., Call | str]) -> Callable:
    """Mark a grader's scenario function with how its input reads as learner code:
    `repro(interface, *args, **kwargs)` returns a Call (or code text) for the same arguments as the
    scenario; `interface.params(fn_name)` gives the interface's parameter names. Without one, a
    scenario's input is shown as the scenario's own call."""

    def mark(fn: Callable) -> Callable:
        fn.repro = repro
        return fn

    return mark


class CheckFailed(Exception):
    """A wrong answer: the message is for the learner, details are numbers for --json, and
    failing_input the call that gave it (None: the submission's last call).

    `explain()` is a hint that costs more work (a control call in the sandbox, known mistakes
    recomputed): it runs once, for the failure the check finally reports, after shrinking has chosen
    it, and its sentence follows the message (see `reported_message`). `notes` follow that.
    `series`, a Series, is a picture of what went wrong, kept in details["series"] as plain data."""

    def __init__(self, message: str, details: dict[str, Any] | None = None, failing_input: Call | None = None,
                 explain: Callable[[], str] | None = None, series: Series | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if series is not None:
            self.details = {**self.details, "series": series.as_details()}
        self.failing_input = failing_input
        self.explain = explain
        self.notes: list[str] = []


class GraderDefect(Exception):
    """The grader or the reference is wrong: reported as mlprep's fault, never the learner's."""


def fail(message: str, *, failing_input: Call | None = None, explain: Callable[[], str] | None = None, series: Series | None = None,
         **details: Any) -> NoReturn:
    raise CheckFailed(message, details, failing_input, explain, series)


def reported_message(failure: CheckFailed) -> str:
    """The message a failed check reports: its own, then its deferred explanation, then its notes.
    An explanation whose control call the learner's code breaks (raises, crashes, hangs) gives none."""
    from mlprep.grading._runner import SubmissionProblem

    hint = ""
    if failure.explain is not None:
        try:
            hint = failure.explain() or ""
        except SubmissionProblem:
            hint = ""
    return " ".join(part.strip() for part in (failure.message, hint, *failure.notes) if part and part.strip())


@contextlib.contextmanager
def on_input(call: Call) -> Iterator[None]:
    """A check that fails inside this block reports `call` as its failing input (unless a failure
    inside named a more precise one): for checks that judge one call out of several made together,
    such as a step of a trajectory run in one scenario."""
    try:
        yield
    except CheckFailed as failure:
        if failure.failing_input is None:
            failure.failing_input = call
        raise


MAX_SERIES_POINTS = MAX_DETAIL_ITEMS  # longer lists in details are cut: a series is downsampled to fit instead


@dataclass(frozen=True)
class Series:
    """A small series a failure carries, which the terminal draws as one sparkline per line on a
    shared scale (mlprep.charts), the first point where the lines differ marked:

        fail(message, series=Series("loss scale per step", {"yours": got, "expected": want}, log_scale=True))

    `lines` maps names to sequences of numbers (floats, NumPy or 0-d torch values; None, or anything
    that is not a number, where a line has no point), the learner's line first; the lines may differ
    in length. `x` holds the points' x values (default 0, 1, 2, ...), named by `x_label`. In the
    check's details (key "series") it is plain JSON data: title, x_label, log_scale, x, lines (inf and
    NaN as "inf", "-inf", "NaN"), and at most MAX_SERIES_POINTS points: a longer series is downsampled
    evenly, keeping its last point and the first point where the lines differ, and says so in "note"."""

    title: str
    lines: dict[str, Sequence[Any]]
    x_label: str = "step"
    x: Sequence[Any] | None = None
    log_scale: bool = False

    def as_details(self) -> dict[str, Any]:
        n = max((len(values) for values in self.lines.values()), default=0)
        lines = {str(name): [_series_point(v) for v in values] + [None] * (n - len(values)) for name, values in self.lines.items()}
        x = list(range(n)) if self.x is None else [_series_point(v) for v in self.x]
        if len(x) < n:
            raise GraderDefect(f"series {self.title!r}: {len(x)} x values for {n} points")
        x = x[:n]
        keep, note = list(range(n)), ""
        if n > MAX_SERIES_POINTS:
            picks = {round(i * (n - 1) / (MAX_SERIES_POINTS - 1)) for i in range(MAX_SERIES_POINTS)}
            first = next((i for i, points in enumerate(zip(*lines.values())) if len(set(points)) > 1), None)
            if first is not None and first not in picks:
                picks.remove(min(picks - {0, n - 1}, key=lambda i: abs(i - first)))
                picks.add(first)
            keep = sorted(picks)
            note = f"downsampled from {n} to {len(keep)} points" + (f", the first difference ({self.x_label} {x[first]}) kept" if first is not None else "")
        details = {"title": str(self.title), "x_label": str(self.x_label), "log_scale": bool(self.log_scale), "x": [x[i] for i in keep],
                   "lines": {name: [values[i] for i in keep] for name, values in lines.items()}}
        return {**details, "note": note} if note else details


def _series_point(value: Any) -> Any:
    """One point as JSON data: a number (inf and NaN as strings), or None where there is none."""
    if value is None:
        return None
    if isinstance(value, (bool, int, np.integer)):
        return int(value)
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError):  # RuntimeError: a tensor of more than one element
        return None
    return jsonable(number)


@contextlib.contextmanager
def series_on_failure(make: Callable[[], Series | None]) -> Iterator[None]:
    """A check that fails inside this block carries the series `make()` returns, unless the failure
    already carries one: the way to picture failures raised by the toolkit's assertions (assert_close,
    as_float...) while a check walks a trajectory. `make` runs only on a failure; it returns None when
    it has nothing to show (a record too malformed to draw), and must not raise."""
    try:
        yield
    except CheckFailed as failure:
        if "series" not in failure.details:
            series = make()
            if series is not None:
                failure.details = {**failure.details, "series": series.as_details()}
        raise


def _join(*parts: str) -> str:
    return " ".join(p.strip() for p in parts if p and p.strip())


def _scenario(scenario: str) -> str:
    return f" ({scenario})" if scenario else ""


# ---------------------------------------------------------------------------------------------
# The two handles a check gets
# ---------------------------------------------------------------------------------------------
@dataclass
class _Request:
    """One request as sent: what it ran, and the message as encoded for the sandbox (decoded again
    only to show its arguments)."""

    op: str  # "call" or "run"
    name: str  # the learner function, or the scenario's name
    scenario: Callable | None
    encoded: bytes
    device: str = "cpu"  # where the sandbox put the tensors of the arguments


class Submission:
    """The learner's code, reachable only through the sandbox.

    All its calls share one deadline: the check's time limit (see the engine), which `grant`
    extends for extra work the reference never does (shrinking a failure), within the grade's
    budget. It remembers its last request, the failing input a check reports by default."""

    def __init__(self, sandbox: Any, device: str, limit_s: float, grant_budget: Callable[[float], float] | None = None):
        self._sandbox = sandbox
        self.device = device
        self.limit_s = limit_s
        self._deadline = time.monotonic() + limit_s
        self._grant_budget = grant_budget or (lambda seconds: seconds)
        self.last_mutated: list[str] = []
        self.last_elapsed_s = 0.0
        self.last_request: _Request | None = None
        self.in_flight: _Request | None = None  # set while a request is running, kept if it never came back
        self._errstate: dict[str, str] = {}

    @contextlib.contextmanager
    def errstate(self, **settings: str) -> Iterator[None]:
        """Requests made inside run under `np.errstate(**settings)` in the sandbox, for contracts that
        allow no floating-point warning (`over="raise", divide="raise", invalid="raise"`): a warning
        then fails the check as a FloatingPointError that names the setting, and the failing input
        shows the `with np.errstate(...)` it ran under."""
        outer = self._errstate
        self._errstate = {**outer, **settings}
        try:
            yield
        finally:
            self._errstate = outer

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """Call the learner's `fn(*args, **kwargs)`; tensors in the arguments move to this check's device."""
        return self._request({"op": "call", "fn": fn, "args": list(args), "kwargs": kwargs}, f"running {fn}()", None)

    def run(self, scenario: Callable, *args: Any, **kwargs: Any) -> Any:
        """Run `scenario(learner_module, *args, **kwargs)` in the sandbox; scenario is a module-level function."""
        return self._run(scenario, args, kwargs)

    def remaining_s(self) -> float:
        return max(self._deadline - time.monotonic(), 0.0)

    def grant(self, seconds: float) -> float:
        """Extend this check's time by up to `seconds` (what the grade's budget allows), from its deadline
        or from now if that has passed; returns the extension."""
        granted = max(0.0, self._grant_budget(seconds))
        self._deadline = max(self._deadline, time.monotonic()) + granted
        return granted

    def control(self, fn: str | Callable, *args: Any, **kwargs: Any) -> Any:
        """A call made only to choose a hint: a control case that differs from the failing one in one
        respect (the same data near the origin, the same input in float32...). It never becomes the
        check's failing input, and it answers None when the learner's code raises, crashes or hangs
        on it (then the sandbox may be gone: report the failure right after). `fn` is a learner
        function's name or a scenario."""
        from mlprep.grading._runner import SubmissionProblem

        last = self.last_request
        try:
            return self.run(fn, *args, **kwargs) if callable(fn) else self.call(fn, *args, **kwargs)
        except SubmissionProblem:
            return None
        finally:
            self.last_request, self.in_flight = last, None

    def _run(self, scenario: Callable, args: Sequence[Any], kwargs: dict, cutoff_s: float | None = None) -> Any:
        message = {"op": "run", "module": scenario.__module__, "scenario": scenario.__name__, "args": list(args), "kwargs": kwargs}
        return self._request(message, f"running the scenario {scenario.__name__}", scenario, cutoff_s=cutoff_s)

    def _request(self, message: dict[str, Any], during: str, scenario: Callable | None, cutoff_s: float | None = None) -> Any:
        message["device"] = self.device
        if self._errstate:
            message["errstate"] = dict(self._errstate)
        request = _Request(message["op"], message.get("fn") or message["scenario"], scenario, encode(message), self.device)
        self.in_flight = self.last_request = request
        start = time.perf_counter()
        remaining = self.remaining_s()
        if cutoff_s is not None and cutoff_s < remaining:
            reply = self._sandbox.request(request.encoded, cutoff_s, during, limit_s=cutoff_s)
        else:
            reply = self._sandbox.request(request.encoded, remaining, during, limit_s=self.limit_s)
        self.in_flight = None
        self.last_elapsed_s = time.perf_counter() - start
        self.last_mutated = list(reply.get("mutated") or [])
        return reply["value"]


class Interface:
    """The exercise's interface as the reference defines it: parameter names, for messages and inputs."""

    def __init__(self, reference: Any):
        self._reference = reference

    def params(self, fn_name: str) -> list[str]:
        try:
            return list(inspect.signature(getattr(self._reference, fn_name)).parameters)
        except (AttributeError, TypeError, ValueError):
            return []

    def param(self, fn_name: str, index: int) -> str:
        names = self.params(fn_name)
        return names[index] if index < len(names) else f"argument {index + 1}"


def request_as_call(request: _Request, interface: Interface) -> Call:
    """A request as the learner's code it ran: a learner call as written, a scenario through its
    `repro` (see `scenario`), or else as the scenario's own call on the learner's module."""
    data = decode(request.encoded)
    if request.device != "cpu":
        _mark_device(data, request.device)
    args, kwargs = data["args"], data["kwargs"]
    if request.op == "call":
        call = Call(request.name, *args, **kwargs)
    elif getattr(request.scenario, "repro", None) is not None:
        made = request.scenario.repro(interface, *args, **kwargs)
        call = made if isinstance(made, Call) else Call.code(str(made))
    else:
        where = (request.scenario.__module__ if request.scenario else "").removeprefix("mlprep_grader_")
        call = Call(request.name, Described("<your module>"), *args, **kwargs, note=f"the grader's scenario {request.name} ({where})")
    return _under_errstate(call, data.get("errstate"))


def _under_errstate(call: Call, settings: dict[str, str] | None) -> Call:
    """The input as it ran: inside `with np.errstate(...)`, the value of its expression kept as `result`."""
    if not settings:
        return call
    lines = str(call).split("\n")
    if call.is_code:  # statements ending in an expression
        lines[-1] = f"result = {lines[-1]}"
    else:  # one expression, maybe over several lines
        lines[0] = f"result = {lines[0]}"
    setting = ", ".join(f'{k}="{v}"' for k, v in settings.items())
    return Call.code(f"with np.errstate({setting}):\n" + "".join(f"    {line}\n" for line in lines) + "result")


def _mark_device(value: Any, device: str) -> None:
    """The sandbox moved every tensor of a request to its device: say so where the input is shown."""
    if _is_tensor(value):
        value.origin_device = device
    elif isinstance(value, (list, tuple)):
        for item in value:
            _mark_device(item, device)
    elif isinstance(value, dict):
        for item in value.values():
            _mark_device(item, device)


class Context:
    """What a check knows besides the submission: the device, the reference, seeded randomness."""

    def __init__(self, device: str, reference: Any, reference_sandbox: Callable[[], Submission] | None = None):
        self.device = device
        self.reference = reference
        self.interface = Interface(reference)
        self._reference_sandbox = reference_sandbox
        self._reference_submission: Submission | None = None

    def reference_submission(self) -> Submission:
        """The reference in a sandbox of its own, started on first use: timed the same way as the
        learner's code (a process of the same kind, the same round trip), so timings compare fairly."""
        if self._reference_submission is None:
            if self._reference_sandbox is None:
                raise GraderDefect("this context has no reference sandbox")
            self._reference_submission = self._reference_sandbox()
        return self._reference_submission

    def run_reference_sandboxed(self, scenario: Callable, *args: Any, **kwargs: Any) -> Any:
        """The scenario on the reference in its own sandbox, a process like the learner's: what needs
        the same process state (RNG streams, bit-for-bit training runs) compares fairly. A failure
        there is the grader's defect, never the learner's."""
        from mlprep.grading._runner import SubmissionProblem

        try:
            return self.reference_submission().run(scenario, *args, **kwargs)
        except SubmissionProblem as problem:
            raise GraderDefect(f"the reference failed the scenario {scenario.__name__} in its sandbox: {problem.message}") from None

    def rng(self, seed: int) -> np.random.Generator:
        return np.random.default_rng(seed)

    def run_reference(self, scenario: Callable, *args: Any, **kwargs: Any) -> Any:
        """The same scenario on the reference, here, on the CPU, with the same plain-data round trip."""
        result = scenario(self.reference, *copy.deepcopy(args), **copy.deepcopy(kwargs))
        return decode(encode(result))


# ---------------------------------------------------------------------------------------------
# Reading what came back
# ---------------------------------------------------------------------------------------------
def _describe(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, Opaque):
        return f"a {value.type_name} object"
    if _is_tensor(value):
        return f"a tensor of shape {tuple(value.shape)} and dtype {_dtype_name(value.dtype)}"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype.name}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of length {len(value)}"
    return f"{type(value).__name__} {value!r}"[:120]


def _is_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "dtype") and hasattr(value, "detach")


def _dtype_name(dtype: Any) -> str:
    if dtype is None:
        return "float64"
    text = str(dtype)
    if text.startswith("torch."):
        return text.removeprefix("torch.")
    if isinstance(dtype, str):
        return dtype
    return np.dtype(dtype).name


def _value_dtype(value: Any) -> str:
    if _is_tensor(value) or isinstance(value, (np.ndarray, np.generic)):
        return _dtype_name(value.dtype)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    return "float64"


def _is_numeric(value: Any) -> bool:
    if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
        return True
    return _is_tensor(value)


def _to_array(value: Any) -> np.ndarray:
    """A NumPy view of a numeric value; tensors of any dtype become float64/int64/bool arrays."""
    if _is_tensor(value):
        t = value.detach().cpu()
        if t.is_floating_point():
            t = t.double()
        elif t.is_complex():
            t = t.to(dtype=__import__("torch").complex128)
        return t.numpy()
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    return arr


def expect_sequence(got: Any, n: int, *, what: str, scenario: str = "") -> list:
    """`got` as a list of n items (a tuple or a list), or a clean fail."""
    if not isinstance(got, (list, tuple)) or len(got) != n:
        fail(f"{what}{_scenario(scenario)}: expected a tuple of {n} values, got {_describe(got)}", expected_length=n)
    return list(got)


def as_float(got: Any, *, what: str, scenario: str = "") -> float:
    """A scalar result (Python or NumPy number, 0-d array or tensor) as a float, or a clean fail."""
    if isinstance(got, (list, tuple)) or not _is_numeric(got) or np.shape(_to_array(got)) not in ((), (1,)):
        fail(f"{what}{_scenario(scenario)}: expected a scalar, got {_describe(got)}")
    return float(_to_array(got).reshape(()))


def _index(flat_index: int, shape: tuple[int, ...]) -> str:
    if not shape:
        return "(scalar)"
    return str(tuple(int(i) for i in np.unravel_index(flat_index, shape)))


def _fmt(x: Any, digits: int = 8) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.{digits}g}"
    return repr(x.item() if hasattr(x, "item") else x)


def _fmt_pair(expected: Any, got: Any) -> tuple[str, str]:
    """Short numbers, unless they would print the same: then all the digits that tell them apart."""
    short = _fmt(expected), _fmt(got)
    return short if short[0] != short[1] else (_fmt(expected, 17), _fmt(got, 17))


# ---------------------------------------------------------------------------------------------
# Expected values, judge side (NumPy, float64; SciPy is not a dependency of grading)
# ---------------------------------------------------------------------------------------------
def inputs_from_code(code: str, *names: str) -> Any:
    """Run `code`, the lines that build a check's inputs (shown as they are when the check fails, via
    Call.code), with `np` in scope, and return the values it defines: those of `names` (one name: the
    value itself, several: a tuple), or, with no names, a dict of the arrays it defines."""
    namespace: dict[str, Any] = {"np": np}
    exec(code, namespace)
    if not names:
        return {k: v for k, v in namespace.items() if isinstance(v, np.ndarray)}
    values = tuple(namespace[name] for name in names)
    return values[0] if len(values) == 1 else values


def logsumexp(a: Any, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """log(sum(exp(a))) along `axis`, stable at any magnitude (rows of -inf give -inf)."""
    a = np.asarray(a, dtype=np.float64)
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def log_softmax(a: Any, axis: int = -1) -> np.ndarray:
    """a - logsumexp(a) along `axis`, in float64."""
    a = np.asarray(a, dtype=np.float64)
    return a - logsumexp(a, axis=axis, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------------
def tolerance_for(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) of torch.testing.assert_close for this dtype; exact for integers and bools."""
    return _TOLERANCES.get(_dtype_name(dtype), (0.0, 0.0))


def _check_numeric_pair(got: Any, want: Any, what: str, scenario: str, hint: str = "") -> tuple[np.ndarray, np.ndarray]:
    if not _is_numeric(got):
        fail(_join(f"{what}{_scenario(scenario)}: expected {_describe(want)}, got {_describe(got)}.", hint))
    got_arr, want_arr = _to_array(got), _to_array(want)
    if got_arr.shape != want_arr.shape:
        fail(_join(f"{what}{_scenario(scenario)}: expected shape {want_arr.shape}, got shape {got_arr.shape}.", hint),
             expected_shape=list(want_arr.shape), got_shape=list(got_arr.shape))
    if got_arr.dtype.kind not in "biufc":
        fail(_join(f"{what}{_scenario(scenario)}: expected numbers, got values of dtype {got_arr.dtype}.", hint))
    return got_arr, want_arr


def assert_close(got: Any, want: Any, *, what: str, scenario: str = "", rtol: float | None = None, atol: float | None = None,
                 dtype: Any = None, equal_nan: bool = False, hint: str = "") -> None:
    """Values within the dtype's tolerance (of `dtype`, else of `want`); containers are not compared."""
    if isinstance(want, (list, tuple)):
        items = expect_sequence(got, len(want), what=what, scenario=scenario)
        for i, (g, w) in enumerate(zip(items, want)):
            assert_close(g, w, what=f"{what}[{i}]", scenario=scenario, rtol=rtol, atol=atol, dtype=dtype, equal_nan=equal_nan, hint=hint)
        return
    got_arr, want_arr = _check_numeric_pair(got, want, what, scenario, hint)
    default_rtol, default_atol = tolerance_for(dtype if dtype is not None else _value_dtype(want))
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    g = got_arr.astype(np.complex128 if got_arr.dtype.kind == "c" or want_arr.dtype.kind == "c" else np.float64)
    w = want_arr.astype(g.dtype)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid="ignore", over="ignore"):
        abs_err = np.abs(g - w)
        ok = (np.isfinite(w) & (abs_err <= atol + rtol * np.abs(w))) | (g == w)  # an infinity only matches itself
    ok = ok | (both_nan if equal_nan else False)
    if ok.all():
        return
    bad = ~ok
    first = int(np.flatnonzero(bad.ravel())[0])
    shape = want_arr.shape
    details = {
        "what": what, "scenario": scenario, "shape": list(shape), "mismatches": int(bad.sum()), "size": int(bad.size),
        "first_index": _index(first, shape), **dict(zip(("expected", "got"), _fmt_pair(w.ravel()[first], g.ravel()[first]))),
        "rtol": rtol, "atol": atol,
    }
    finite_want = np.isfinite(w)
    nonfinite_got = ~np.isfinite(g) & finite_want
    if nonfinite_got.any():
        at = int(np.flatnonzero(nonfinite_got.ravel())[0])
        message = (f"{what}{_scenario(scenario)}: expected finite values, got {_fmt(g.ravel()[at])} at index {_index(at, shape)}"
                   f" ({int(nonfinite_got.sum())} of {nonfinite_got.size} values are inf/NaN; expected {_fmt(w.ravel()[at])} there)")
        raise CheckFailed(_join(message + ".", hint), details)
    # Relative error only where it means something: at expected values that are not zero.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rel_err = np.where(finite_want & bad & (w != 0), abs_err / np.where(w != 0, np.abs(w), 1.0), 0.0)
    masked_abs = np.where(bad & np.isfinite(abs_err), abs_err, 0.0)
    details.update(max_abs_err=float(np.max(masked_abs)), max_rel_err=float(np.max(rel_err)))
    message = (f"{what}{_scenario(scenario)}: {int(bad.sum())} of {bad.size} values differ; first at index {_index(first, shape)}:"
               f" expected {details['expected']}, got {details['got']}. Max abs error {details['max_abs_err']:.3g},"
               f" max rel error {details['max_rel_err']:.3g}; allowed |got - expected| <= {atol:g} + {rtol:g} * |expected|.")
    raise CheckFailed(_join(message, hint), details)


def assert_equal(got: Any, want: Any, *, what: str, scenario: str = "", hint: str = "") -> None:
    """Exactly equal values (indices, counts, flags), element by element, containers not compared."""
    if isinstance(want, (list, tuple)):
        items = expect_sequence(got, len(want), what=what, scenario=scenario)
        for i, (g, w) in enumerate(zip(items, want)):
            assert_equal(g, w, what=f"{what}[{i}]", scenario=scenario, hint=hint)
        return
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            fail(_join(f"{what}{_scenario(scenario)}: expected a dict with keys {sorted(map(str, want))}, got {_describe(got)}", hint))
        for key in want:
            assert_equal(got[key], want[key], what=f"{what}[{key!r}]", scenario=scenario, hint=hint)
        return
    if not _is_numeric(want):
        if got != want:
            fail(_join(f"{what}{_scenario(scenario)}: expected {want!r}, got {_describe(got)}", hint), expected=repr(want), got=repr(got)[:200])
        return
    got_arr, want_arr = _check_numeric_pair(got, want, what, scenario, hint)
    bad = ~((got_arr == want_arr) | (np.isnan(got_arr) & np.isnan(want_arr) if want_arr.dtype.kind in "fc" and got_arr.dtype.kind in "fc" else False))
    if not np.any(bad):
        return
    first = int(np.flatnonzero(np.asarray(bad).ravel())[0])
    expected, got_value = _fmt(want_arr.ravel()[first]), _fmt(got_arr.ravel()[first])
    message = (f"{what}{_scenario(scenario)}: {int(np.sum(bad))} of {want_arr.size} values differ; first at index"
               f" {_index(first, want_arr.shape)}: expected {expected}, got {got_value}.")
    raise CheckFailed(_join(message, hint), {"what": what, "scenario": scenario, "first_index": _index(first, want_arr.shape), "expected": expected, "got": got_value})


def assert_finite(got: Any, *, what: str, scenario: str = "", hint: str = "") -> None:
    if isinstance(got, (list, tuple)):
        for i, item in enumerate(got):
            assert_finite(item, what=f"{what}[{i}]", scenario=scenario, hint=hint)
        return
    if not _is_numeric(got):
        fail(f"{what}{_scenario(scenario)}: expected numbers, got {_describe(got)}")
    arr = _to_array(got)
    if arr.dtype.kind not in "fc":
        return
    bad = ~np.isfinite(arr)
    if bad.any():
        first = int(np.flatnonzero(bad.ravel())[0])
        message = (f"{what}{_scenario(scenario)}: expected finite values, got {_fmt(arr.ravel()[first])} at index"
                   f" {_index(first, arr.shape)} ({int(bad.sum())} of {arr.size} values are inf/NaN).")
        raise CheckFailed(_join(message, hint), {"what": what, "scenario": scenario, "first_index": _index(first, arr.shape), "nonfinite": int(bad.sum())})


def assert_shape(got: Any, shape: Sequence[int], *, what: str, scenario: str = "") -> None:
    if not _is_numeric(got):
        fail(f"{what}{_scenario(scenario)}: expected an array of shape {tuple(shape)}, got {_describe(got)}")
    actual = tuple(np.shape(_to_array(got)))
    if actual != tuple(shape):
        fail(f"{what}{_scenario(scenario)}: expected shape {tuple(shape)}, got shape {actual}", expected_shape=list(shape), got_shape=list(actual))


def assert_dtype(got: Any, dtype: Any, *, what: str, scenario: str = "", hint: str = "") -> None:
    expected = _dtype_name(dtype)
    if not (_is_tensor(got) or isinstance(got, (np.ndarray, np.generic))):
        fail(f"{what}{_scenario(scenario)}: expected a {expected} array or tensor, got {_describe(got)}")
    actual = _dtype_name(got.dtype)
    if actual != expected:
        fail(_join(f"{what}{_scenario(scenario)}: expected dtype {expected}, got {actual}.", hint), expected=expected, got=actual)


def _kind_of(value: Any) -> str:
    if _is_tensor(value):
        return "torch"
    if isinstance(value, (np.ndarray, np.generic)):
        return "numpy"
    return type(value).__name__


def assert_returns_like(got: Any, like: Any, *, what: str, scenario: str = "", device: str | None = None) -> None:
    """An array-agnostic result comes back as its input came in: a torch tensor on the input's device
    for a torch input, a NumPy array (or NumPy scalar, for a 0-d input) for a NumPy input. `device`
    is where the input lived in the sandbox (the check's device, `sub.device`); default: like's."""
    want, actual = _kind_of(like), _kind_of(got)
    if want == "torch":
        if actual != "torch":
            fail(f"{what}{_scenario(scenario)}: expected a torch tensor for torch inputs, got {_describe(got)}; keep torch inputs"
                 " in torch (torch in, torch out) instead of converting them with np.asarray or .numpy()", expected="torch.Tensor", got=actual)
        expected_device = device or origin_device(like)
        if origin_device(got).split(":")[0] != expected_device.split(":")[0]:
            fail(f"{what}{_scenario(scenario)}: expected a tensor on {expected_device}, the input's device, got one on"
                 f" {origin_device(got)}; create new tensors on the input's device (torch.zeros_like(x), .to(x.device))",
                 expected=expected_device, got=origin_device(got))
    elif want == "numpy" and actual != "numpy":
        fail(f"{what}{_scenario(scenario)}: expected a NumPy array for NumPy inputs, got {_describe(got)}", expected="numpy.ndarray", got=actual)


_FLOAT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


def assert_keeps_precision(got: Any, input_dtype: Any, *, what: str, scenario: str = "", hint: str = "") -> None:
    """A result computed from float64 inputs carries float64 precision: a Python float or a float64
    array, tensor or scalar, never float32 or lower (a hidden .float() or float32 constant). Results
    of float16/bfloat16 inputs may be float32 (the usual mixed-precision practice) or wider."""
    expected = _dtype_name(input_dtype)
    if expected not in _FLOAT_BITS or isinstance(got, (float, int)) or not _is_numeric(got):
        return
    actual = _dtype_name(got.dtype)
    if actual in _FLOAT_BITS and _FLOAT_BITS[actual] < _FLOAT_BITS[expected]:
        fail(_join(f"{what}{_scenario(scenario)}: the inputs are {expected} but the result is {actual}, so it was computed with"
                   f" less precision than the inputs carry; keep the whole computation in {expected} (look for .float(), a"
                   f" {actual} constant or dtype=... on the way).", hint), expected=expected, got=actual)


# ---------------------------------------------------------------------------------------------
# Probes and budgets
# ---------------------------------------------------------------------------------------------
def inputs_unchanged(sub: Submission, fn_name: str, *args: Any, scenario: str = "", **kwargs: Any) -> Any:
    """Call fn and fail if it modified any argument in place; returns the result."""
    result = sub.call(fn_name, *args, **kwargs)
    if sub.last_mutated:
        fail(f"{fn_name}() modified its input {', '.join(sub.last_mutated)} in place{_scenario(scenario)}; the caller's data"
             " must be left unchanged: compute new arrays/lists instead of writing into the arguments", mutated=sub.last_mutated)
    return result


def invariance_probe(sub: Submission, fn_name: str | Callable, args: Sequence[Any], changed_args: Sequence[Any], *, what: str, scenario: str,
                     shape: Sequence[int] | None = None, graded: Callable[[Any], Any] | None = None, hint: str | dict[str, str] = "",
                     kwargs: dict | None = None) -> None:
    """The output must not move when `args` become `changed_args` in a way the contract makes invisible.

    One mechanism for the probes: causality (perturb the inputs at position j; graded = the outputs
    before j), padding (perturb the pads, even to huge values; graded = the real positions), permutation
    (permute a set; graded = the output with the permutation undone, or a pooled output). `graded(out)`
    gets each output (already checked to be numeric, of `shape` when given) and returns the part that
    must stay put, or a dict of named parts ({"outputs at real queries": ..., ...}): the message then
    names the part that moved, and `what` heads it; `hint` may then be a dict of a hint per part. The
    learner's two outputs are compared with each other, NaN equal to NaN; the failing input is the
    unchanged call. `fn_name` may be a scenario instead of a learner function (a model built, seeded
    and called inside the sandbox: `scenario(module, *args)` returns the output)."""
    hints = hint if isinstance(hint, dict) else {}
    hint = "" if isinstance(hint, dict) else hint
    run = (lambda a: sub.run(fn_name, *a, **(kwargs or {}))) if callable(fn_name) else (lambda a: sub.call(fn_name, *a, **(kwargs or {})))
    called = f"{fn_name.__name__}(...)" if callable(fn_name) else f"{fn_name}()"
    base = run(args)
    base_call = sub.last_request
    changed = run(changed_args)
    try:
        for output in (base, changed):
            if not _is_numeric(output):
                fail(_join(f"{what}{_scenario(scenario)}: expected an array or tensor from {called}, got {_describe(output)}.", hint))
            if shape is not None:
                assert_shape(output, shape, what=f"{called} output", scenario=scenario)
        pick = graded or (lambda output: output)
        parts_changed, parts_base = pick(changed), pick(base)
        if not isinstance(parts_base, dict):
            parts_changed, parts_base = {what: parts_changed}, {what: parts_base}
        for part, base_part in parts_base.items():
            label = part if part == what else f"{what}: {part}"
            assert_close(parts_changed[part], base_part, what=label, scenario=scenario, equal_nan=True, hint=hints.get(part, hint))
    except CheckFailed as failure:
        if failure.failing_input is None and base_call is not None:
            failure.failing_input = request_as_call(base_call, Interface(None))
        raise


def value_and_grad(module: Any, fn_name: str, args: Sequence[Any], wrt: Sequence[int], kwargs: dict | None = None,
                   output_index: int | None = None, seed: int = 0, output_mask: Any = None) -> tuple[Any, list]:
    """Scenario: fn's output and the gradients of sum(output * fixed random weights) w.r.t. args[i], i in wrt.
    `output_mask` (bool, broadcastable to the output) zeroes the weights of positions the contract leaves ungraded."""
    import torch

    args = list(args)
    for i in wrt:
        args[i] = args[i].detach().clone().requires_grad_(True)
    out = getattr(module, fn_name)(*args, **(kwargs or {}))
    if output_index is not None:
        out = out[output_index]
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{fn_name}() returned {type(out).__name__}, expected a tensor (gradients need a tensor output)")
    if not out.requires_grad:
        raise TypeError(f"{fn_name}()'s output is not connected to its inputs in autograd (a .detach(), .item(), .numpy() round trip or torch.no_grad() somewhere?)")
    generator = torch.Generator().manual_seed(seed)
    weights = torch.randn(out.shape, generator=generator, dtype=torch.float64).to(device=out.device, dtype=out.dtype)
    if output_mask is not None:
        weights = weights * output_mask.to(device=out.device, dtype=out.dtype)
    (out * weights).sum().backward()
    return out.detach(), [args[i].grad for i in wrt]


_gradchecked: set[tuple[str, str]] = set()


def _value_and_grad_repro(interface: "Interface", fn_name: str, args: Sequence[Any], wrt: Sequence[int], kwargs: dict | None = None,
                          output_index: int | None = None, seed: int = 0, output_mask: Any = None) -> Call:
    """Code that computes the gradients value_and_grad compares: its last line evaluates to them."""
    names = [interface.param(fn_name, i).replace(" ", "_") if interface.params(fn_name) else f"x{i + 1}" for i in wrt]
    lines = [f"{name} = {literal(args[i])}.requires_grad_()" for name, i in zip(names, wrt)]
    call_args = [names[list(wrt).index(i)] if i in wrt else literal(a) for i, a in enumerate(args)]
    call_args += [f"{key}={literal(value)}" for key, value in (kwargs or {}).items()]
    lines.append(f"out = {fn_name}({', '.join(call_args)})" + (f"[{output_index}]" if output_index is not None else ""))
    weights = f"torch.randn(out.shape, generator=torch.Generator().manual_seed({seed}), dtype=torch.float64).to(out.device, out.dtype)"
    lines.append(f"w = {weights}" + (f" * {literal(output_mask)}.to(out.device, out.dtype)" if output_mask is not None else "")
                 + "  # fixed random weights")
    lines.append(f"torch.autograd.grad((out * w).sum(), [{', '.join(names)}], allow_unused=True)  # d(sum(out * w))/d({', '.join(names)})")
    return Call.code("\n".join(lines))


value_and_grad.repro = _value_and_grad_repro


def gradcheck_float64(sub: Submission, ctx: Context, fn_name: str, args: Sequence[Any], wrt: Sequence[int], *,
                      scenario: str, kwargs: dict | None = None, output_index: int | None = None, output_mask: Any = None,
                      hint: str = "") -> None:
    """The learner's float64 autograd gradients equal the true ones (the reference's, itself verified by
    torch.autograd.gradcheck against central differences). Inputs are named as the interface names them."""
    import torch

    got = sub.run(value_and_grad, fn_name, list(args), list(wrt), kwargs, output_index, 0, output_mask)
    want_value, want_grads = ctx.run_reference(value_and_grad, fn_name, list(args), list(wrt), kwargs, output_index, 0, output_mask)
    _verify_reference_gradient(ctx, fn_name, args, wrt, kwargs, output_index, scenario, output_mask)
    got_value, got_grads = expect_sequence(got, 2, what=f"gradient of {fn_name}()", scenario=scenario)
    got_grads = expect_sequence(got_grads, len(want_grads), what=f"gradients of {fn_name}()", scenario=scenario)
    for i, got_grad, want_grad in zip(wrt, got_grads, want_grads):
        what = f"d(output)/d({ctx.interface.param(fn_name, i)}) of {fn_name}()"
        if got_grad is None:
            fail(_join(f"{what}{_scenario(scenario)}: no gradient reached this input; the output must be computed from it with torch operations.", hint))
        assert_finite(got_grad, what=what, scenario=scenario, hint=hint or "gradients must stay finite: avoid log(0), 0/0 and inf - inf, also in masked branches")
        assert_close(got_grad, want_grad, what=what, scenario=scenario + ", float64", dtype=torch.float64, hint=hint)


def _verify_reference_gradient(ctx: Context, fn_name: str, args: Sequence[Any], wrt: Sequence[int], kwargs: dict | None,
                               output_index: int | None, scenario: str, output_mask: Any = None) -> None:
    import torch

    key = (fn_name, scenario)
    if key in _gradchecked:
        return
    fn = getattr(ctx.reference, fn_name)
    inputs = [args[i].detach().clone().requires_grad_(True) for i in wrt]

    def partial(*xs: Any) -> Any:
        full = list(args)
        for i, x in zip(wrt, xs):
            full[i] = x
        out = fn(*full, **(kwargs or {}))
        out = out[output_index] if output_index is not None else out
        return out * output_mask.to(out.dtype) if output_mask is not None else out

    # fast_mode checks random projections of the Jacobian: enough to catch a broken reference, and it
    # costs a fraction of the full check, which would run in every judge process on every grade.
    if not torch.autograd.gradcheck(partial, inputs, raise_exception=False, fast_mode=True):
        raise GraderDefect(f"the reference's gradient of {fn_name}() fails torch.autograd.gradcheck ({scenario})")
    _gradchecked.add(key)


def peak_traced_memory(module: Any, fn_name: str, args: Sequence[Any], kwargs: dict | None = None) -> tuple[Any, int]:
    """Scenario: (result, peak bytes traced by tracemalloc during the call)."""
    _tm_start()
    try:
        result = getattr(module, fn_name)(*args, **(kwargs or {}))
        if not _tm_is_tracing():
            raise RuntimeError("your code stopped tracemalloc, which this exercise uses to measure memory")
        _, peak = _tm_get_traced_memory()
    finally:
        _tm_stop()
    return result, peak


peak_traced_memory.repro = lambda interface, fn_name, args, kwargs=None: Call(
    fn_name, *args, **(kwargs or {}), note="its peak memory traced with tracemalloc")

# Bound at import, before any learner code runs in the sandbox.
_tm_start, _tm_stop, _tm_is_tracing, _tm_get_traced_memory = tracemalloc.start, tracemalloc.stop, tracemalloc.is_tracing, tracemalloc.get_traced_memory


def time_ratio(sub: Submission, ctx: Context, scenario: Callable, *args: Any, repeats: int = 3, max_ratio: float | None = None,
               what: str = "", hint: str = "", **kwargs: Any) -> tuple[float, float, float]:
    """(learner seconds, reference seconds, ratio), best of `repeats`, measured in this same run.

    Both run in sandboxes (the reference in one of its own, see Context.reference_submission) and are
    timed from the judge around the round trip, alternately, so machine load hits both alike and the
    learner cannot fake its time. With `max_ratio`, a learner run still going at max_ratio times the
    reference's best time (plus a second for the round trip) is stopped and the check fails: a slow
    submission costs the bound, not the whole time limit."""
    from mlprep.grading._runner import SubmissionProblem, SubmissionTimeout

    reference_sub = ctx.reference_submission()
    reference: list[float] = []
    learner: list[float] = []
    for _ in range(repeats):
        try:
            reference_sub._run(scenario, args, kwargs)
        except SubmissionProblem as problem:
            raise GraderDefect(f"the reference failed the timed scenario {scenario.__name__}: {problem.message}") from None
        reference.append(reference_sub.last_elapsed_s)
        best_reference = max(min(reference), 1e-9)
        cutoff = max_ratio * best_reference + 1.0 if max_ratio is not None else None
        try:
            sub._run(scenario, args, kwargs, cutoff_s=cutoff)
        except SubmissionTimeout:
            if cutoff is None or sub.remaining_s() <= 0:
                raise
            fail(_join(f"{what or scenario.__name__}: stopped after {cutoff:.2f} s, more than {max_ratio:g}x the reference's"
                       f" {best_reference:.2f} s measured in the same run.", hint), reference_s=best_reference, cutoff_s=cutoff, max_ratio=max_ratio,
                 # what was compared, for the diagnosis: the seconds themselves change from run to run
                 what=what or scenario.__name__, got=f"more than {max_ratio:g}x the reference's time", first_index="")
        learner.append(sub.last_elapsed_s)
    best_learner, best_reference = min(learner), max(min(reference), 1e-9)
    return best_learner, best_reference, best_learner / best_reference


# ---------------------------------------------------------------------------------------------
# Growth: how a cost grows with the input's size, against the reference's growth in the same run
# ---------------------------------------------------------------------------------------------
GROWTH_SLACK_S = 1.0  # on top of what the bound allows a timed run at the large size, for the round trip and a busy machine
GROWTH_VERDICT_S = 0.5  # of the check's time kept for the verdict when a run at the large size is stopped at the check's limit
_GROWTH_FLOOR = {"time": 1e-6, "memory": 2**20}  # costs below this count as this (no growth from nothing)
_GROWTH_REPEATS = {"time": (7, 3), "memory": (2, 1)}  # default runs (at the small size, at the large size) per side


@dataclass(frozen=True)
class Growth:
    """What growth_check measured: the learner's and the reference's cost (seconds or bytes) at the small and
    at the large size, best of the runs, and their growths (large / small)."""

    measure: str
    sizes: tuple[float, float]
    learner: tuple[float, float]
    reference: tuple[float, float]

    @property
    def learner_growth(self) -> float:
        return self.learner[1] / max(self.learner[0], _GROWTH_FLOOR[self.measure])

    @property
    def reference_growth(self) -> float:
        return self.reference[1] / max(self.reference[0], _GROWTH_FLOOR[self.measure])


def _factor(x: float) -> str:
    """A growth factor as a person writes it: 8.03, 110, 1,028."""
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def _cost_text(value: float, measure: str) -> str:
    if measure == "time":
        return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} bytes"


def growth_check(sub: Submission, ctx: Context, scenario: Callable, small_args: Sequence[Any], large_args: Sequence[Any], *,
                 sizes: tuple[float, float], max_growth: float, what: str, measure: str = "time", size_format: str = "n = {:,}", hint: str = "",
                 repeats: tuple[int, int] | None = None, calls: tuple[int, int] = (1, 1), failing_input: Call | None = None) -> Growth:
    """A complexity claim as a measurement: from the small input to the large one, the learner's cost grows at
    most `max_growth` times as much as the reference's, both measured in this same run (so machine load and
    the machine's speed cancel out). One mechanism for every claim of the kind: O(n log n) time, memory
    linear in T.

    `scenario(module, *small_args)` and `scenario(module, *large_args)` run on the learner's module and on the
    reference's, each in a sandbox (the reference in one of its own, see Context.reference_submission);
    `sizes` = (small, large), shown as `size_format` says ("{:,} rows", "T = {:,}"). Costs are the best of `repeats` =
    (runs at the small size, runs at the large size) per side, the learner's and the reference's alternately.

    measure="time": each run is timed from the judge around its round trip, as time_ratio does (default
    repeats (7, 3): a small run takes milliseconds, so the best of several is what survives a busy machine).
    The learner's run at the large size is stopped once it takes longer than the bound allows (max_growth x
    the reference's growth x the learner's own time at the small size, plus GROWTH_SLACK_S), or than what is
    left of the check's time limit, and the check fails: a quadratic solution costs that bound, and on a
    busy machine still fails rather than timing out (the same verdict, for the diagnosis). So choose the sizes such that
    a quadratic solution is quick at the small one (the bound is proportional to that time), and the large
    one far enough (100x, 300x) for its growth to stand out. `calls` = (at the small size, at the large
    size) says how many calls of the learner's code one run of the scenario makes, and costs are per call:
    several calls a run at the small size (on fresh inputs) keep the round trip, about half a millisecond,
    from swamping it; otherwise the reference's small time is mostly round trip, its growth looks smaller
    than it is, and a correct solution that is slow per element looks as if it grew faster.

    measure="memory": the scenario measures its call itself with `measure_peak_memory` and returns the peak
    bytes (an int). Default repeats (2, 1): the first run at the small size pays for one-time allocations
    (thread pools, library workspaces), the smaller of the two counts.

    Running out of memory at either size fails the check too, as growing too fast. A failure reports both
    growths, the sizes, and what a linear and a quadratic algorithm would give; its details record what was
    compared (`what`) and the verdict (`got`), not the measured numbers, which change from run to run, so
    that the diagnosis compares runs by what failed. Its failing input is the scenario at the large size,
    unless `failing_input` names another (code that measures both sizes, say)."""
    from mlprep.grading._runner import SubmissionProblem, SubmissionRaised, SubmissionTimeout

    if measure not in _GROWTH_REPEATS:
        raise GraderDefect(f"growth_check measures 'time' or 'memory', not {measure!r}")
    small_runs, large_runs = repeats or _GROWTH_REPEATS[measure]
    floor = _GROWTH_FLOOR[measure]
    reference_sub = ctx.reference_submission()
    n_small, n_large = sizes
    small_text, large_text = size_format.format(n_small), size_format.format(n_large)
    ratio = n_large / n_small
    word = "time" if measure == "time" else "peak memory"
    verdict = {"what": what, "got": f"its {word}'s growth from {small_text} to {large_text} is more than {max_growth:g}x the reference's",
               "first_index": ""}
    costs: dict[tuple[str, int], list[float]] = {(who, i): [] for who in ("learner", "reference") for i in (0, 1)}
    failing = failing_input or _scenario_call(scenario, large_args, sub.device, ctx.interface)
    scale = (f"For scale: {large_text} is {ratio:g}x the size of {small_text}, so a {word} linear in the size grows about {ratio:g}x"
             + (" (n log n a little more)" if measure == "time" else "") + f", a quadratic one about {ratio * ratio:,.0f}x."
             + (f" (Times are per call: a run at {small_text} makes {calls[0]} calls.)" if measure == "time" and calls[0] > 1 else ""))

    def best(who: str, i: int) -> float:
        return min(costs[(who, i)])

    def growth(who: str) -> float:
        return best(who, 1) / max(best(who, 0), floor)

    def reference_growth_text() -> str:
        if not costs[("reference", 1)]:
            return f"the reference needed {_cost_text(best('reference', 0), measure)} at {small_text}"
        return (f"the reference's grew {_factor(growth('reference'))}x ({_cost_text(best('reference', 0), measure)} to"
                f" {_cost_text(best('reference', 1), measure)}) in the same run")

    def measured(value: Any, who: str, i: int) -> float:
        if measure == "time":
            return (reference_sub if who == "reference" else sub).last_elapsed_s / calls[i]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not value >= 0:
            if who == "reference":
                raise GraderDefect(f"the memory scenario {scenario.__name__} returned {_describe(value)}, not a number of bytes")
            fail(_join(f"{what}: the memory measurement in your process returned {_describe(value)}, not a number of bytes.", hint),
                 failing_input=failing, **verdict)
        return float(value)

    def run_reference(i: int) -> None:
        try:
            value = reference_sub._run(scenario, (small_args, large_args)[i], {})
        except SubmissionProblem as problem:
            raise GraderDefect(f"the reference failed the growth scenario {scenario.__name__}: {problem.message}") from None
        costs[("reference", i)].append(measured(value, "reference", i))

    def run_learner(i: int, cutoff: float | None = None) -> None:
        at = (small_text, large_text)[i]
        try:
            value = sub._run(scenario, (small_args, large_args)[i], {}, cutoff_s=cutoff)
        except SubmissionTimeout:
            if cutoff is None or sub.remaining_s() <= 0:
                raise
            at_least = cutoff / calls[1] / max(best("learner", 0), floor)
            allowed = max_growth * growth("reference")
            why = ("" if at_least > allowed else f" (all the time this check had left, {_factor(cutoff / calls[1] / best('reference', 1))}x"
                   f" the reference's {_cost_text(best('reference', 1), measure)} there)")
            fail(_join(f"{what}: your code's run at {large_text} was stopped after {cutoff:.2f} s{why}, when its time had grown more than"
                       f" {_factor(at_least)}x its {_cost_text(best('learner', 0), measure)} at {small_text}; {reference_growth_text()}."
                       f" Allowed: {max_growth:g}x the reference's growth ({_factor(allowed)}x). {scale}", hint),
                 failing_input=failing, learner_small=best("learner", 0), reference=[best("reference", 0), best("reference", 1)],
                 cutoff_s=cutoff, max_growth=max_growth, sizes=[n_small, n_large], **verdict)
        except SubmissionRaised as problem:
            if problem.details.get("kind") != "memory":
                raise
            head, _, trace = problem.message.partition("\n")
            before = ""
            if i:
                needed = best("learner", 0)
                before = f"; at {small_text} it needed {_cost_text(needed, measure)}" + (
                    f", which grown {ratio * ratio:,.0f}x (quadratically) would be {_cost_text(needed * ratio * ratio, measure)}" if measure == "memory" else "")
            fail(_join(f"{what}: at {at} {head}{before}; {reference_growth_text()}. {scale}", hint)
                 + (f"\n{trace}" if trace else ""), failing_input=failing, max_growth=max_growth, sizes=[n_small, n_large], **verdict)
        costs[("learner", i)].append(measured(value, "learner", i))

    for _ in range(small_runs):
        run_reference(0)
        run_learner(0)
    for _ in range(large_runs):
        run_reference(1)
        bound = max_growth * growth("reference") * max(best("learner", 0), floor)
        # Stopped at the bound, or else where the check's own time limit would end it (a timeout is no verdict on the
        # growth, and a busy machine must not turn this check's failure into one).
        cutoff = min(bound * calls[1] + GROWTH_SLACK_S, sub.remaining_s() - GROWTH_VERDICT_S) if measure == "time" else None
        run_learner(1, cutoff=cutoff if cutoff is None or cutoff > 0 else None)
        if best("learner", 1) > 2 * bound:  # failing by more than any machine noise: no need to run it again
            break
    found = Growth(measure, (n_small, n_large), (best("learner", 0), best("learner", 1)), (best("reference", 0), best("reference", 1)))
    if found.learner_growth > max_growth * found.reference_growth:
        fail(_join(f"{what}: your code's {word} grew {_factor(found.learner_growth)}x from {small_text} to {large_text}"
                   f" ({_cost_text(found.learner[0], measure)} to {_cost_text(found.learner[1], measure)}); {reference_growth_text()}."
                   f" Allowed: {max_growth:g}x the reference's growth ({_factor(max_growth * found.reference_growth)}x). {scale}", hint),
             failing_input=failing, learner=list(found.learner), reference=list(found.reference), learner_growth=found.learner_growth,
             reference_growth=found.reference_growth, max_growth=max_growth, sizes=[n_small, n_large], **verdict)
    return found


def _scenario_call(scenario: Callable, args: Sequence[Any], device: str, interface: Interface) -> Call:
    """A scenario's run as the learner's code it stands for (through its repro), without running it."""
    message = {"op": "run", "module": scenario.__module__, "scenario": scenario.__name__, "args": list(args), "kwargs": {}}
    return request_as_call(_Request("run", scenario.__name__, scenario, encode(message), device), interface)


class PeakMemory:
    """What measure_peak_memory saw: `bytes`, the peak beyond what was in use when the block began, and
    `method`, how it was measured."""

    def __init__(self) -> None:
        self.bytes = 0
        self.method = ""


@contextlib.contextmanager
def measure_peak_memory(device: str = "cpu") -> Iterator[PeakMemory]:
    """Sandbox side, inside a scenario: the peak memory the block allocates beyond what was in use when it
    began, measured outside Python's allocator, so that NumPy's, torch's and Python's own allocations all
    count (tracemalloc sees only those made through Python's hooks).

    On CUDA: torch.cuda's peak allocation (max_memory_allocated after reset_peak_memory_stats). On the CPU:
    the process's peak resident set (VmHWM), reset as the block begins (5 written to /proc/self/clear_refs),
    after the C allocator has handed its free pages back to the system (malloc_trim), so that memory the
    block takes from the allocator's free lists counts as well. Its threshold for serving an allocation
    with fresh pages of its own (mmap) is fixed at glibc's default, 128 KiB: left to itself, glibc raises
    it after big blocks are freed (up to 32 MiB) and then serves them from pages it kept, so that the same
    call would measure less in a process with a history than in a fresh one. That setting stays for the
    rest of the process: measure a sandbox's memory after timing it, not before. Where clear_refs cannot
    be written, the resident set is sampled every millisecond instead (which can miss a shorter peak)."""
    meter = PeakMemory()
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        try:
            yield meter
        finally:
            torch.cuda.synchronize(device)
            meter.bytes, meter.method = max(0, int(torch.cuda.max_memory_allocated(device) - base)), "torch.cuda.max_memory_allocated"
        return
    if _mallopt is not None:
        _mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
    _gc_collect()
    if _malloc_trim is not None:
        _malloc_trim(0)
    if _reset_peak_rss():
        base = _status_bytes("VmHWM")
        try:
            yield meter
        finally:
            meter.bytes, meter.method = max(0, _status_bytes("VmHWM") - base), "peak resident set (VmHWM)"
        return
    base = _resident_bytes()
    peak = [base]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.001):
            peak[0] = max(peak[0], _resident_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield meter
    finally:
        stop.set()
        sampler.join()
        meter.bytes, meter.method = max(0, max(peak[0], _resident_bytes()) - base), "resident set sampled every millisecond"


def _reset_peak_rss() -> bool:
    try:
        with _open("/proc/self/clear_refs", "w") as control:
            control.write("5")  # resets VmHWM to the current resident set (Linux 4.0+)
        return True
    except OSError:
        return False


def _status_bytes(field: str) -> int:
    with _open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":")) * 1024


def _resident_bytes() -> int:
    with _open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE_BYTES


def _bind_libc(name: str) -> Callable[..., int] | None:
    try:
        return getattr(ctypes.CDLL(None), name, None)
    except OSError:
        return None


# Bound at import, before any learner code runs in the sandbox.
_open, _gc_collect = open, gc.collect
_malloc_trim, _mallopt = _bind_libc("malloc_trim"), _bind_libc("mallopt")
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


# ---------------------------------------------------------------------------------------------
# Shrinking
# ---------------------------------------------------------------------------------------------
SHRINK_BUDGET_S = 1.0  # extra time a failed check may spend looking for a smaller failing case (the grade caps the total)
SHRINK_EXAMPLES = 200  # cases Hypothesis may try before it gives up finding a failing one


# Hypothesis reads the source of the strategies' lambdas with `ast` to describe them, which is not
# thread-safe on CPython 3.11 (SystemError in the self-check's parallel grades): one search at a time.
_hypothesis_lock = threading.Lock()


class _StopShrinking(BaseException):
    """Out of time, or the sandbox is gone: a BaseException, so Hypothesis does not take it for a failure."""


@contextlib.contextmanager
def shrink_on_failure(sub: Submission, cases: Callable[[], Any], verify: Callable[[Any], None], *,
                      worth_shrinking: Callable[[CheckFailed], bool] | None = None,
                      budget_s: float = SHRINK_BUDGET_S, max_examples: int = SHRINK_EXAMPLES) -> Iterator[None]:
    """If the block fails, look for the smallest case that fails too, and report that one instead.

    `cases()` returns a Hypothesis strategy of cases of this check (drawn and shrunk by Hypothesis:
    shapes shrink toward 0-d and 1 element, numbers toward 0 and small integers), and `verify(case)`
    checks one case against the learner's code, raising CheckFailed (with a message about that case)
    when it fails. Hypothesis runs only after the block failed, deterministically (derandomized, no
    database), within `budget_s` extra seconds (and what is left of the grade's allowance for
    shrinking). `worth_shrinking(failure)` says whether the block's failure is worth it; by default,
    when its failing input is too large to show in full. When it is not, when Hypothesis finds no
    failing case, or when the learner's code raises or hangs on the ones it tries, the block's own
    failure stands. Order a check's own cases small to large first: a small case that fails needs no
    shrinking."""
    try:
        yield
    except CheckFailed as original:
        if original.failing_input is None and sub.last_request is not None:
            original.failing_input = request_as_call(sub.last_request, Interface(None))
        too_large = lambda failure: failure.failing_input is None or not complete(str(failure.failing_input))
        if not (worth_shrinking or too_large)(original):
            raise
        smaller = _smallest_failure(sub, cases, verify, budget_s, max_examples)
        if smaller is None:
            raise
        first = str(original.details.get("scenario") or original.message.split(":")[0])
        first = first if len(first) <= 160 else first[:160] + "…"
        smaller.notes.append(f"(The smallest failing case found by shrinking; the check first failed on: {first}.)")
        smaller.details.setdefault("first_failure", str(first))
        raise smaller from None


def _smallest_failure(sub: Submission, cases: Callable[[], Any], verify: Callable[[Any], None], budget_s: float,
                      max_examples: int) -> CheckFailed | None:
    from hypothesis import HealthCheck, Phase, Verbosity, find, settings
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    from mlprep.workspace import data_dir

    # Hypothesis caches what it learns from source files in a `.hypothesis` folder of the current
    # directory: in mlprep's cache instead, never in the learner's folder.
    set_hypothesis_home_dir(data_dir() / "cache" / "hypothesis")

    from mlprep.grading._runner import SubmissionProblem, SubmissionRaised

    found: list[CheckFailed] = []
    deadline = 0.0  # set once this search holds the lock: waiting for another grade's search is not its time

    def fails(case: Any) -> bool:
        if time.monotonic() > deadline:
            raise _StopShrinking
        try:
            verify(case)
        except CheckFailed as failure:
            if failure.failing_input is None and sub.last_request is not None:
                failure.failing_input = request_as_call(sub.last_request, Interface(None))
            found.append(failure)  # Hypothesis only ever accepts smaller failing cases: the last is the smallest
            return True
        except SubmissionRaised:
            return False  # raising on this case is another kind of failure, not this check's
        except SubmissionProblem:
            raise _StopShrinking from None  # a crash or a hang: the sandbox is gone
        return False

    quiet = settings(database=None, derandomize=True, max_examples=max_examples, deadline=None, phases=(Phase.generate, Phase.shrink),
                     suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    with _hypothesis_lock:
        deadline = time.monotonic() + sub.grant(budget_s)
        try:
            find(cases(), fails, settings=quiet)
        except (_StopShrinking, NoSuchExample, Unsatisfiable):
            pass
    return found[-1] if found else None
