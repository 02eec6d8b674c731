"""Probes: the input left unchanged, what the learner's code raises, an output that must not move (causality,
padding, permutation), float64 gradients, memory traced by tracemalloc, and control calls made for a hint."""

from __future__ import annotations

import tracemalloc
from typing import Any, Callable, Sequence

from mlprep.grading._calls import Call, literal
from mlprep.grading._wire import encode
from mlprep.grading.checks import CheckFailed, GraderDefect, fail, in_scenario, joined
from mlprep.grading.compare import assert_close, assert_finite, assert_shape
from mlprep.grading.handles import Context, Interface, Submission, request_as_call
from mlprep.grading.values import describe_value, expect_sequence, is_numeric

# -- inputs left unchanged ------------------------------------------------------------------------

UNCHANGED_FIX = "compute new arrays/lists instead of writing into the arguments"


def inputs_unchanged(sub: Submission, fn_name: str, *args: Any, scenario: str = "", fix: str = UNCHANGED_FIX, **kwargs: Any) -> Any:
    """Call fn and fail if it modified any argument in place (`fix` says how not to); returns the result."""
    result = sub.call(fn_name, *args, **kwargs)
    if sub.last_mutated:
        fail(f"{fn_name}() modified its input {', '.join(sub.last_mutated)} in place{in_scenario(scenario)}; the caller's data"
             f" must be left unchanged: {fix}", mutated=sub.last_mutated)
    return result


class Snapshot:
    """Sandbox side, inside a scenario: the inputs as they were before the learner's code ran, to say
    afterwards which of them it changed in place (compared as encoded bytes: values, dtype and shape).

        before = Snapshot(X=X, y=y)
        model.fit(X, y)
        return {"changed": before.changed(), ...}
    """

    def __init__(self, **inputs: Any):
        self._inputs = inputs
        self._before = {name: encode(value) for name, value in inputs.items()}

    def changed(self) -> list[str]:
        return [name for name, value in self._inputs.items() if encode(value) != self._before[name]]


def fail_if_changed(changed: Sequence[str], *, who: str, where: str = "", fix: str = UNCHANGED_FIX, failing_input: Call | None = None) -> None:
    """A Snapshot's verdict, judge side: `who` ("fit()", "your training loop") changed `changed` in place."""
    if changed:
        fail(f"{where + ': ' if where else ''}{who} changed {', '.join(changed)} in place; the caller's data must stay as it was: {fix}",
             failing_input=failing_input, what=", ".join(changed), got="changed", first_index="")


# -- what the learner's code raises ------------------------------------------------------------------

def outcome(run: Callable[[], Any]) -> dict:
    """Sandbox side, inside a scenario: what run() did, as plain data: {"raised": None, "result": its value}
    or {"raised": the exception's type name, "classes": the type names along its MRO, "message": its text}.
    Only Exception is caught: SystemExit and the like stay the sandbox's business."""
    try:
        return {"raised": None, "result": run()}
    except Exception as exc:  # noqa: BLE001 - the learner's exception, whatever it is, is the evidence
        try:
            message = str(exc)[:200]
        except Exception:  # noqa: BLE001 - an exception whose str() raises
            message = "<its message could not be read>"
        return {"raised": type(exc).__name__, "classes": [cls.__name__ for cls in type(exc).__mro__], "message": message}


def raised_by(module: Any, fn: str, *args: Any, **kwargs: Any) -> dict:
    """Scenario: the outcome of the learner's fn(*args, **kwargs) (`fn` a function's or a class's name: a constructor)."""
    return outcome(lambda: getattr(module, fn)(*args, **kwargs))


raised_by.repro = lambda interface, fn, *args, **kwargs: Call(fn, *args, **kwargs)


def expect_raises(got: Any, exception: str = "ValueError", *, what: str, exact: bool = False, raised_hint: str = "", returned_hint: str = "",
                  shown: Callable[[Any], str] = describe_value, failing_input: Call | None = None, **details: Any) -> dict:
    """Fail unless the outcome `got` (of `outcome` or `raised_by`) raised `exception`, or a subclass of it
    (`exact`: that very type). The messages: "{what}: expected {exception}, but it raised {T}: {message}"
    or "{what}: expected {exception}, but it returned {shown(result)}", each followed by "; " and its hint. The
    details record what was tried and what came instead (`what`, `got`: the type or "no exception"), as
    the diagnosis compares them. Returns the record, for the fields a scenario adds to it."""
    if not isinstance(got, dict) or "raised" not in got:
        fail(f"{what}: expected {exception}, but the scenario's record came back as {describe_value(got)}", failing_input=failing_input,
             what=what, got="no record", first_index="", **details)
    raised = got["raised"]
    if raised is not None and (raised == exception if exact else exception in (got.get("classes") or [raised])):
        return got
    if raised is not None:
        fail(f"{what}: expected {exception}, but it raised {raised}: {got.get('message', '')}" + (f"; {raised_hint}" if raised_hint else ""),
             failing_input=failing_input, what=what, got=raised, first_index="", **details)
    fail(f"{what}: expected {exception}, but it returned {shown(got.get('result'))}" + (f"; {returned_hint}" if returned_hint else ""),
         failing_input=failing_input, what=what, got="no exception", first_index="", **details)


# -- control calls ---------------------------------------------------------------------------------

def control_value(sub: Submission, fn: str | Callable, *args: Any, read: Callable[[Any], Any] = lambda got: got, **kwargs: Any) -> Any:
    """`read` of what a control call (see Submission.control) gave, or None when the learner's code raised,
    crashed or hung on it, or when what it gave cannot be read that way."""
    got = sub.control(fn, *args, **kwargs)
    if got is None:
        return None
    try:
        return read(got)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, RuntimeError, CheckFailed):
        return None


# -- outputs that must not move ----------------------------------------------------------------------


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
            if not is_numeric(output):
                fail(joined(f"{what}{in_scenario(scenario)}: expected an array or tensor from {called}, got {describe_value(output)}.", hint))
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
            fail(joined(f"{what}{in_scenario(scenario)}: no gradient reached this input; the output must be computed from it with torch operations.", hint))
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


# -- how an input was changed in place ------------------------------------------------------------

class InPlace(Snapshot):
    """Sandbox side, a Snapshot that also keeps a copy of each input, to say how the learner's code changed it:
    `reordered()` names the changed inputs that hold exactly their own items (elements, or rows of a 2-D array)
    in another order, as a sort or a shuffle in place leaves them, rather than values of their own.

        before = InPlace(X=X, y=y)
        scores = module.cross_val_score(make_model, X, y, k, seed)
        return {"changed": before.changed(), "reordered": before.reordered(), ...}
    """

    def __init__(self, **inputs: Any):
        super().__init__(**inputs)
        self._items = {name: _items(value) for name, value in inputs.items()}

    def reordered(self) -> list[str]:
        return [name for name in self.changed() if self._items[name] is not None and _items(self._inputs[name]) == self._items[name]]


def _items(value: Any) -> list[bytes] | None:
    """The encoded items of a sequence along its first axis, sorted, with its type and shape (None for anything else)."""
    try:
        shape = getattr(value, "shape", None)
        if shape is not None and len(shape) == 0:
            return None
        return sorted(encode(item) for item in value) + [encode((type(value).__name__, str(getattr(value, "dtype", "")), list(shape or [len(value)])))]
    except Exception:  # noqa: BLE001 - not a sequence: no items to compare
        return None
