"""Expected values, judge side (NumPy, float64; SciPy is not a dependency of grading)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


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


def central_differences(f: Callable[[np.ndarray], float], x: Any, h: float = 1e-5) -> np.ndarray:
    """d f / d x by central differences, element by element, in float64: (f(x + h) - f(x - h)) / 2h."""
    x = np.asarray(x, dtype=np.float64)
    grad = np.empty_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += h
        down[index] -= h
        grad[index] = (f(up) - f(down)) / (2 * h)
    return grad
