"""Reading what came back: a value described in words, as an array, as a scalar or a tuple of n."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlprep.grading._wire import Opaque
from mlprep.grading.checks import fail, in_scenario

def describe_value(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, Opaque):
        return f"a {value.type_name} object"
    if is_tensor(value):
        return f"a tensor of shape {tuple(value.shape)} and dtype {dtype_name(value.dtype)}"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype.name}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of length {len(value)}"
    return f"{type(value).__name__} {value!r}"[:120]


def is_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "dtype") and hasattr(value, "detach")


def dtype_name(dtype: Any) -> str:
    if dtype is None:
        return "float64"
    text = str(dtype)
    if text.startswith("torch."):
        return text.removeprefix("torch.")
    if isinstance(dtype, str):
        return dtype
    return np.dtype(dtype).name


def value_dtype(value: Any) -> str:
    if is_tensor(value) or isinstance(value, (np.ndarray, np.generic)):
        return dtype_name(value.dtype)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    return "float64"


def is_numeric(value: Any) -> bool:
    if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
        return True
    return is_tensor(value)


def to_array(value: Any) -> np.ndarray:
    """A NumPy view of a numeric value; tensors of any dtype become float64/int64/bool arrays."""
    if is_tensor(value):
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
        fail(f"{what}{in_scenario(scenario)}: expected a tuple of {n} values, got {describe_value(got)}", expected_length=n)
    return list(got)


def as_float(got: Any, *, what: str, scenario: str = "") -> float:
    """A scalar result (Python or NumPy number, 0-d array or tensor) as a float, or a clean fail."""
    if isinstance(got, (list, tuple)) or not is_numeric(got) or np.shape(to_array(got)) not in ((), (1,)):
        fail(f"{what}{in_scenario(scenario)}: expected a scalar, got {describe_value(got)}")
    return float(to_array(got).reshape(()))


def index_text(flat_index: int, shape: tuple[int, ...]) -> str:
    if not shape:
        return "(scalar)"
    return str(tuple(int(i) for i in np.unravel_index(flat_index, shape)))


def number_text(x: Any, digits: int = 8) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.{digits}g}"
    return repr(x.item() if hasattr(x, "item") else x)


def number_pair(expected: Any, got: Any) -> tuple[str, str]:
    """Short numbers, unless they would print the same: then all the digits that tell them apart."""
    short = number_text(expected), number_text(got)
    return short if short[0] != short[1] else (number_text(expected, 17), number_text(got, 17))
