"""Reading what came back: a value described in words, as an array, as a scalar or a tuple of n."""

from __future__ import annotations

from typing import Any, Sequence

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


def as_bool(got: Any, *, what: str, scenario: str = "") -> bool:
    """A yes/no result (a Python or NumPy bool, or a 0-d bool array or tensor) as a bool, or a clean fail."""
    if isinstance(got, (bool, np.bool_)) or (is_numeric(got) and not isinstance(got, (int, float)) and to_array(got).dtype == np.bool_
                                             and to_array(got).shape == ()):
        return bool(to_array(got))
    fail(f"{what}{in_scenario(scenario)}: expected True or False, got {describe_value(got)}")


def as_int(got: Any, *, what: str, scenario: str = "", hint: str = "") -> int:
    """A whole-number result (a Python or NumPy integer, a 0-d integer array or tensor) as an int, or a clean fail."""
    if not isinstance(got, bool) and is_numeric(got) and to_array(got).shape == () and to_array(got).dtype.kind in "iu":
        return int(to_array(got))
    fail(" ".join(part for part in (f"{what}{in_scenario(scenario)}: expected an integer, got {describe_value(got)}.", hint) if part))


def expect_record(got: Any, keys: Sequence[str] = (), *, what: str, scenario: str = "") -> dict:
    """A scenario's record (a dict holding at least `keys`) as it came back, or a clean fail: what the
    learner's code hands a scenario can break its record (a model that is not one, a loop that returns early)."""
    missing = [key for key in keys if not isinstance(got, dict) or key not in got]
    if not isinstance(got, dict) or missing:
        fail(f"{what}{in_scenario(scenario)}: expected a record with {', '.join(keys) or 'fields'}, got {describe_value(got)}"
             + (f" (without {', '.join(missing)})" if isinstance(got, dict) else ""))
    return got


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


def listed(items: Any, limit: int = 10, *, empty: str = "") -> str:
    """Items in words, the first `limit` of them: "3, 5, 8, ..." (", ..." when some are left out), or `empty` when there are none:
    row numbers, batch sizes, ids in a message."""
    items = list(items)
    if not items:
        return empty
    return ", ".join(map(str, items[:limit])) + (", ..." if len(items) > limit else "")
