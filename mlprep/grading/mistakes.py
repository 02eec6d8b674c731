"""Known mistakes as evidence: what each known mistake gives on the input a check failed on, held against
what the learner's code gave, so that a hint names a mistake only when the values show it.

    hint = mistake_hint(got, {"the loss is summed over the rows; it is their mean": -logp_y.sum(), ...}, want=want)

A grader keeps the exercise's knowledge (what each mistake computes, in its own words); the matching, its
one tolerance rule and its wording live here. Values are numbers, arrays, tensors (any dtype, any device),
tuples and lists of them, dicts of them, strings or None; a value may also be a function of no
arguments, computed only when the matching reaches it, or None where the mistake does not apply to
this input. Nothing here raises on a malformed learner value: it is simply no match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from mlprep.grading.values import is_numeric, to_array

Mistakes = Mapping[str, Any] | Iterable[tuple[str, Any]]
MISSING = object()
MATCH_RTOL, MATCH_ATOL = 1e-9, 1e-12  # "the same value": far tighter than any check's tolerance, looser than rounding noise


def same_values(a: Any, b: Any, *, rtol: float = 0.0, atol: float = 0.0, equal_nan: bool = False) -> bool:
    """Whether `a` holds `b`'s values: tuples and lists item by item (of the same length), dicts key by
    key (the same keys), numbers, arrays and tensors of b's shape with |a - b| <= atol + rtol * |b|
    (in float64, on the CPU; an infinity only matches itself; NaN only NaN, and only with `equal_nan`);
    None only None; anything else by ==. False, never an exception, for values that cannot be compared."""
    try:
        if isinstance(b, (list, tuple)):
            return isinstance(a, (list, tuple)) and len(a) == len(b) and all(
                same_values(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan) for x, y in zip(a, b))
        if isinstance(b, dict):
            return isinstance(a, dict) and a.keys() == b.keys() and all(same_values(a[k], b[k], rtol=rtol, atol=atol, equal_nan=equal_nan) for k in b)
        if b is None or a is None:
            return a is b
        if is_numeric(b) and not isinstance(b, str):
            if not is_numeric(a):
                return False
            x, y = to_array(a), to_array(b)
            if x.shape != y.shape:
                return False
            if x.dtype.kind not in "biufc" or y.dtype.kind not in "biufc":
                return bool(np.array_equal(x, y))
            kind = np.complex128 if "c" in (x.dtype.kind, y.dtype.kind) else np.float64
            x, y = x.astype(kind), y.astype(kind)
            with np.errstate(invalid="ignore", over="ignore"):
                ok = (x == y) | (np.isfinite(y) & (np.abs(x - y) <= atol + rtol * np.abs(y)))
            if equal_nan:
                ok |= np.isnan(x) & np.isnan(y)
            return bool(ok.all())
        return bool(a == b)
    except Exception:  # noqa: BLE001 - a value that cannot be compared is no evidence
        return False


def _finite(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    try:
        array = to_array(value)
        return array.dtype.kind not in "fc" or bool(np.isfinite(array).all())
    except Exception:  # noqa: BLE001 - not numbers: nothing to be non-finite
        return True


def matching_mistakes(got: Any, mistakes: Mistakes, *, want: Any = MISSING, wants: Iterable[Any] = (), rtol: float = MATCH_RTOL,
                      atol: float = MATCH_ATOL, equal_nan: bool = False, apart: tuple[float, float] | None = None,
                      same: Callable[[Any, Any], bool] | None = None, is_right: Callable[[Any], bool] | None = None,
                      finite_only: bool = False) -> list[str]:
    """The texts (in order, each once) of the known mistakes whose value `got` equals and the right answer
    does not: a mistake that gives the right answer on this input is no evidence. `got` equals a value
    when `same(got, value)`, else when same_values(got, value, rtol, atol, equal_nan). A value is the right
    answer when `is_right(value)`, else when it equals `want` or one of `wants` within `apart` (rtol, atol;
    default: the matching's own). With no right answer given, no mistake is excluded. `finite_only`: a
    mistake whose value holds inf or NaN is no evidence either."""
    items = mistakes.items() if isinstance(mistakes, Mapping) else mistakes
    right = [] if want is MISSING else [want]
    right += list(wants)
    apart_rtol, apart_atol = apart if apart is not None else (rtol, atol)
    found: list[str] = []
    for text, value in items:
        text = text.strip()
        if text in found:
            continue
        if callable(value):
            value = value()
        if value is None or (finite_only and not _finite(value)):
            continue
        matches = same(got, value) if same is not None else same_values(got, value, rtol=rtol, atol=atol, equal_nan=equal_nan)
        if not matches:
            continue
        if is_right is not None:
            if is_right(value):
                continue
        elif any(same_values(value, w, rtol=apart_rtol, atol=apart_atol) for w in right):
            continue
        found.append(text)
    return found


def mistake_hint(got: Any, mistakes: Mistakes, *, say: str = "Your result matches one where {}.", two: str | None = None, join: str | None = None,
                 first: bool = False, **match: Any) -> str:
    """The sentence for matching_mistakes(got, mistakes, **match), or "" when the values show no single
    mistake: exactly one match gives say.format(it); two give two.format(a, b) when `two` is given; with
    `join`, any number give say.format(join.join(them)); with `first`, the first of them counts."""
    found = matching_mistakes(got, mistakes, **match)
    if not found:
        return ""
    if join is not None:
        return say.format(join.join(found))
    if first or len(found) == 1:
        return say.format(found[0])
    if two is not None and len(found) == 2:
        return two.format(*found)
    return ""
