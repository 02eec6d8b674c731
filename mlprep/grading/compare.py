"""Comparisons that fail with a message naming the scenario, expected vs got, and the first differing index."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mlprep.grading._wire import origin_device
from mlprep.grading.checks import CheckFailed, fail, in_scenario, joined
from mlprep.grading.values import describe_value, dtype_name, expect_sequence, index_text, is_numeric, is_tensor, number_pair, number_text, to_array, value_dtype

# torch.testing.assert_close's defaults, per dtype: (rtol, atol).
_TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "complex128": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
}


def tolerance_for(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) of torch.testing.assert_close for this dtype; exact for integers and bools."""
    return _TOLERANCES.get(dtype_name(dtype), (0.0, 0.0))


def _check_numeric_pair(got: Any, want: Any, what: str, scenario: str, hint: str = "") -> tuple[np.ndarray, np.ndarray]:
    if not is_numeric(got):
        fail(joined(f"{what}{in_scenario(scenario)}: expected {describe_value(want)}, got {describe_value(got)}.", hint))
    got_arr, want_arr = to_array(got), to_array(want)
    if got_arr.shape != want_arr.shape:
        fail(joined(f"{what}{in_scenario(scenario)}: expected shape {want_arr.shape}, got shape {got_arr.shape}.", hint),
             expected_shape=list(want_arr.shape), got_shape=list(got_arr.shape))
    if got_arr.dtype.kind not in "biufc":
        fail(joined(f"{what}{in_scenario(scenario)}: expected numbers, got values of dtype {got_arr.dtype}.", hint))
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
    default_rtol, default_atol = tolerance_for(dtype if dtype is not None else value_dtype(want))
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
        "first_index": index_text(first, shape), **dict(zip(("expected", "got"), number_pair(w.ravel()[first], g.ravel()[first]))),
        "rtol": rtol, "atol": atol,
    }
    finite_want = np.isfinite(w)
    nonfinite_got = ~np.isfinite(g) & finite_want
    if nonfinite_got.any():
        at = int(np.flatnonzero(nonfinite_got.ravel())[0])
        message = (f"{what}{in_scenario(scenario)}: expected finite values, got {number_text(g.ravel()[at])} at index {index_text(at, shape)}"
                   f" ({int(nonfinite_got.sum())} of {nonfinite_got.size} values are inf/NaN; expected {number_text(w.ravel()[at])} there)")
        raise CheckFailed(joined(message + ".", hint), details)
    # Relative error only where it means something: at expected values that are not zero.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rel_err = np.where(finite_want & bad & (w != 0), abs_err / np.where(w != 0, np.abs(w), 1.0), 0.0)
    masked_abs = np.where(bad & np.isfinite(abs_err), abs_err, 0.0)
    details.update(max_abs_err=float(np.max(masked_abs)), max_rel_err=float(np.max(rel_err)))
    message = (f"{what}{in_scenario(scenario)}: {int(bad.sum())} of {bad.size} values differ; first at index {index_text(first, shape)}:"
               f" expected {details['expected']}, got {details['got']}. Max abs error {details['max_abs_err']:.3g},"
               f" max rel error {details['max_rel_err']:.3g}; allowed |got - expected| <= {atol:g} + {rtol:g} * |expected|.")
    raise CheckFailed(joined(message, hint), details)


def assert_equal(got: Any, want: Any, *, what: str, scenario: str = "", hint: str = "") -> None:
    """Exactly equal values (indices, counts, flags), element by element, containers not compared."""
    if isinstance(want, (list, tuple)):
        items = expect_sequence(got, len(want), what=what, scenario=scenario)
        for i, (g, w) in enumerate(zip(items, want)):
            assert_equal(g, w, what=f"{what}[{i}]", scenario=scenario, hint=hint)
        return
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            fail(joined(f"{what}{in_scenario(scenario)}: expected a dict with keys {sorted(map(str, want))}, got {describe_value(got)}", hint))
        for key in want:
            assert_equal(got[key], want[key], what=f"{what}[{key!r}]", scenario=scenario, hint=hint)
        return
    if not is_numeric(want):
        if got != want:
            fail(joined(f"{what}{in_scenario(scenario)}: expected {want!r}, got {describe_value(got)}", hint), expected=repr(want), got=repr(got)[:200])
        return
    got_arr, want_arr = _check_numeric_pair(got, want, what, scenario, hint)
    bad = ~((got_arr == want_arr) | (np.isnan(got_arr) & np.isnan(want_arr) if want_arr.dtype.kind in "fc" and got_arr.dtype.kind in "fc" else False))
    if not np.any(bad):
        return
    first = int(np.flatnonzero(np.asarray(bad).ravel())[0])
    expected, got_value = number_text(want_arr.ravel()[first]), number_text(got_arr.ravel()[first])
    message = (f"{what}{in_scenario(scenario)}: {int(np.sum(bad))} of {want_arr.size} values differ; first at index"
               f" {index_text(first, want_arr.shape)}: expected {expected}, got {got_value}.")
    details = {"what": what, "scenario": scenario, "first_index": index_text(first, want_arr.shape), "expected": expected, "got": got_value}
    raise CheckFailed(joined(message, hint), details)


def assert_finite(got: Any, *, what: str, scenario: str = "", hint: str = "") -> None:
    if isinstance(got, (list, tuple)):
        for i, item in enumerate(got):
            assert_finite(item, what=f"{what}[{i}]", scenario=scenario, hint=hint)
        return
    if not is_numeric(got):
        fail(f"{what}{in_scenario(scenario)}: expected numbers, got {describe_value(got)}")
    arr = to_array(got)
    if arr.dtype.kind not in "fc":
        return
    bad = ~np.isfinite(arr)
    if bad.any():
        first = int(np.flatnonzero(bad.ravel())[0])
        message = (f"{what}{in_scenario(scenario)}: expected finite values, got {number_text(arr.ravel()[first])} at index"
                   f" {index_text(first, arr.shape)} ({int(bad.sum())} of {arr.size} values are inf/NaN).")
        raise CheckFailed(joined(message, hint), {"what": what, "scenario": scenario, "first_index": index_text(first, arr.shape), "nonfinite": int(bad.sum())})


def assert_shape(got: Any, shape: Sequence[int], *, what: str, scenario: str = "") -> None:
    if not is_numeric(got):
        fail(f"{what}{in_scenario(scenario)}: expected an array of shape {tuple(shape)}, got {describe_value(got)}")
    actual = tuple(np.shape(to_array(got)))
    if actual != tuple(shape):
        fail(f"{what}{in_scenario(scenario)}: expected shape {tuple(shape)}, got shape {actual}", expected_shape=list(shape), got_shape=list(actual))


def assert_dtype(got: Any, dtype: Any, *, what: str, scenario: str = "", hint: str = "") -> None:
    expected = dtype_name(dtype)
    if not (is_tensor(got) or isinstance(got, (np.ndarray, np.generic))):
        fail(f"{what}{in_scenario(scenario)}: expected a {expected} array or tensor, got {describe_value(got)}")
    actual = dtype_name(got.dtype)
    if actual != expected:
        fail(joined(f"{what}{in_scenario(scenario)}: expected dtype {expected}, got {actual}.", hint), expected=expected, got=actual)


def _kind_of(value: Any) -> str:
    if is_tensor(value):
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
            fail(f"{what}{in_scenario(scenario)}: expected a torch tensor for torch inputs, got {describe_value(got)}; keep torch inputs"
                 " in torch (torch in, torch out) instead of converting them with np.asarray or .numpy()", expected="torch.Tensor", got=actual)
        expected_device = device or origin_device(like)
        if origin_device(got).split(":")[0] != expected_device.split(":")[0]:
            fail(f"{what}{in_scenario(scenario)}: expected a tensor on {expected_device}, the input's device, got one on"
                 f" {origin_device(got)}; create new tensors on the input's device (torch.zeros_like(x), .to(x.device))",
                 expected=expected_device, got=origin_device(got))
    elif want == "numpy" and actual != "numpy":
        fail(f"{what}{in_scenario(scenario)}: expected a NumPy array for NumPy inputs, got {describe_value(got)}", expected="numpy.ndarray", got=actual)


_FLOAT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


def assert_keeps_precision(got: Any, input_dtype: Any, *, what: str, scenario: str = "", hint: str = "") -> None:
    """A result computed from float64 inputs carries float64 precision: a Python float or a float64
    array, tensor or scalar, never float32 or lower (a hidden .float() or float32 constant). Results
    of float16/bfloat16 inputs may be float32 (the usual mixed-precision practice) or wider."""
    expected = dtype_name(input_dtype)
    if expected not in _FLOAT_BITS or isinstance(got, (float, int)) or not is_numeric(got):
        return
    actual = dtype_name(got.dtype)
    if actual in _FLOAT_BITS and _FLOAT_BITS[actual] < _FLOAT_BITS[expected]:
        fail(joined(f"{what}{in_scenario(scenario)}: the inputs are {expected} but the result is {actual}, so it was computed with"
                   f" less precision than the inputs carry; keep the whole computation in {expected} (look for .float(), a"
                   f" {actual} constant or dtype=... on the way).", hint), expected=expected, got=actual)
