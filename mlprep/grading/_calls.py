"""Inputs as Python a learner can paste: the smallest failing input of a check, shown in full.

    literal(value)                -> Python source for value, e.g. "np.array([0.5, -1.0], dtype=np.float32)"
    Call("adamw", w, g, m, v, 1)  -> one call of a learner function; str(call) is "adamw(np.array(...), ...)"

A value with more than MAX_VALUES numbers is described ("a float64 array of shape (200, 7)")
instead of written out, and the call then says it is not complete. Floats are written with the
fewest digits that read back as the same number in their own dtype, so a pasted input is exactly
the one that failed; NaN and infinities as float("nan"), float("inf").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mlprep.grading._wire import Opaque, origin_device
from mlprep.results import is_cut

MAX_VALUES = 20  # an array or tensor of at most this many numbers is written out in full
LINE_CHARS = 100  # a call longer than this is written one argument per line

_DEFAULT_NUMPY = {"float64", "int64", "bool"}  # what np.array([...]) infers: no dtype= needed
_DEFAULT_TORCH = {"float32", "int64", "bool"}  # likewise for torch.tensor([...])


class Described(str):
    """Source text that stands for a value too large to write out (not valid Python on its own)."""


def _float_text(x: float, dtype: str) -> str:
    if math.isnan(x):
        return 'float("nan")'
    if math.isinf(x):
        return 'float("inf")' if x > 0 else '-float("inf")'
    if dtype in ("float16", "float32"):
        return str(np.dtype(dtype).type(x))  # the shortest text that reads back as this float16/float32
    return repr(float(x))


def _nested(values: Any, dtype: str) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v, dtype) for v in values) + "]"
    if isinstance(values, bool):
        return repr(values)
    if isinstance(values, int):
        return str(values)
    if isinstance(values, complex):
        return repr(values)
    return _float_text(values, dtype)


def _array_literal(arr: np.ndarray, scalar: bool) -> str:
    dtype = arr.dtype.name
    if arr.size == 0:  # np.array([]) would lose the shape
        return f"np.zeros({arr.shape})" if dtype == "float64" else f"np.zeros({arr.shape}, dtype=np.{dtype})"
    if scalar:
        return f"np.{dtype}({_nested(arr.item(), dtype)})"
    body = _nested(arr.tolist(), dtype)
    return f"np.array({body})" if dtype in _DEFAULT_NUMPY else f"np.array({body}, dtype=np.{dtype})"


def _tensor_literal(t: Any) -> str:
    import torch

    dtype = str(t.dtype).removeprefix("torch.")
    values = t.detach().cpu()
    if dtype == "bfloat16":
        values = values.float()  # every bfloat16 value is a float32 value: written as one, read back exactly
        text_dtype = "float32"
    else:
        text_dtype = dtype
    extras = [] if dtype in _DEFAULT_TORCH else [f"dtype=torch.{dtype}"]
    body = _nested(values.tolist(), text_dtype) if t.numel() else str(tuple(t.shape))  # torch.tensor([]) would lose the shape
    device = origin_device(t)
    if device != "cpu":
        extras.append(f'device="{device}"')
    del torch
    return f"torch.{'tensor' if t.numel() else 'zeros'}({', '.join([body, *extras])})"


def _describe(value: Any) -> Described:
    kind = "tensor" if type(value).__module__.startswith("torch") else "array"
    dtype = str(value.dtype).removeprefix("torch.")
    arr = value.detach().cpu().double().numpy() if kind == "tensor" and value.is_floating_point() else np.asarray(
        value.detach().cpu() if kind == "tensor" else value)
    text = f"<a {dtype} {kind} of shape {tuple(value.shape)}"
    if arr.dtype.kind in "fiub" and arr.size:
        finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
        if finite.size:
            text += f", values {float(finite.min()):.4g} to {float(finite.max()):.4g}"
        if finite.size < arr.size:
            text += f", {arr.size - finite.size} inf/NaN"
    return Described(text + ">")


def _numbers(value: Any) -> int:
    """How many numbers `value` holds, containers included."""
    if isinstance(value, (np.ndarray, np.generic)):
        return int(value.size)
    if type(value).__module__.startswith("torch") and hasattr(value, "numel"):
        return int(value.numel())
    if isinstance(value, (list, tuple)):
        return sum(_numbers(v) for v in value)
    if isinstance(value, dict):
        return sum(_numbers(v) for v in value.values())
    return 1 if isinstance(value, (int, float, complex)) and not isinstance(value, bool) else 0


def _describe_container(value: Any) -> Described:
    kinds = {type(v).__name__ if not hasattr(v, "shape") else f"{str(v.dtype).removeprefix('torch.')} {tuple(v.shape)}" for v in value}
    what = next(iter(kinds)) if len(kinds) == 1 else "mixed items"
    return Described(f"<a {type(value).__name__} of {len(value)} ({what}), {_numbers(value)} numbers>")


def literal(value: Any, max_values: int = MAX_VALUES) -> str:
    """Python source for `value`; a `Described` placeholder for values holding more than
    `max_values` numbers (arrays, tensors, containers), for objects that are not plain data, and
    for containers holding one."""
    if isinstance(value, Described):
        return value
    if isinstance(value, (list, tuple)) and _numbers(value) > max_values:
        return _describe_container(value)
    if value is None or isinstance(value, (bool, str)):
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        return _float_text(value, "float64")
    if isinstance(value, Opaque):
        return Described(f"<a {value.type_name} object>")
    if isinstance(value, (np.ndarray, np.generic)):
        if value.size > max_values:
            return _describe(value)
        return _array_literal(np.asarray(value), scalar=isinstance(value, np.generic))
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        return _describe(value) if value.numel() > max_values else _tensor_literal(value)
    if isinstance(value, (list, tuple)):
        items = [literal(v, max_values) for v in value]
        body = ", ".join(items) + ("," if isinstance(value, tuple) and len(items) == 1 else "")
        text = f"[{body}]" if isinstance(value, list) else f"({body})"
        return Described(text) if any(isinstance(i, Described) for i in items) else text
    if isinstance(value, dict):
        items = [(literal(k, max_values), literal(v, max_values)) for k, v in value.items()]
        text = "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
        return Described(text) if any(isinstance(x, Described) for pair in items for x in pair) else text
    return Described(f"<a {type(value).__name__}>")


def complete(text: str) -> bool:
    """Whether `text` (from literal or Call) is whole Python, nothing left out: no value described instead,
    and not cut where a grade's text is cut (mlprep.results.cut_text)."""
    return "<a " not in text and "<your module>" not in text and not is_cut(text)


class Call:
    """One call of a learner function (or a line of code around one), as the failing input of a check.

    Call("kmeans", points, init, max_iter=3, tol=0.0) renders as `kmeans([[0, 4], ...], [[11, 3], ...],
    max_iter=3, tol=0.0)`. `note` is a comment added after it (what is done with the result).
    `Call.code(text)` is a failing input written by hand (several lines of code, say)."""

    def __init__(self, fn: str, *args: Any, note: str = "", **kwargs: Any):
        self.fn, self.args, self.kwargs, self.note = fn, args, kwargs, note
        self._text: str | None = None

    @classmethod
    def code(cls, text: str) -> "Call":
        call = cls("")
        call._text = text
        return call

    @property
    def is_code(self) -> bool:
        """Written by hand (statements ending in an expression), not one call."""
        return self._text is not None

    def __str__(self) -> str:
        if self._text is not None:
            return self._text
        parts = [literal(a) for a in self.args] + [f"{k}={literal(v)}" for k, v in self.kwargs.items()]
        one_line = f"{self.fn}({', '.join(parts)})"
        text = one_line if len(one_line) <= LINE_CHARS else self.fn + "(\n" + "".join(f"    {p},\n" for p in parts) + ")"
        return text + (f"  # {self.note}" if self.note else "")

    def __repr__(self) -> str:
        return f"Call({str(self)!r})"
