"""Small cases for shrinking (see shrink_on_failure): Hypothesis strategies of numbers on a grid, fixed-length
lists, matrices and arrays of a given shape, and sizes drawn first. Hypothesis is imported only when a
strategy is built, which happens only after a check has failed.

Numbers on a grid read well in a failing input (halves, quarters) and are exact in float64; each
strategy shrinks toward its first choice (the grid's 0, the smallest size), and draws in a fixed
order, so the same failure shrinks to the same case every time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np


def _on_grid(offset: float, per: int, i: int) -> float:
    return offset + i / per


def grid(lo: int, hi: int, per: int = 1, *, offset: float = 0.0) -> Any:
    """offset + i / per for the integers lo <= i <= hi (halves in [-4, 4]: grid(-8, 8, 2)); shrinks toward i = 0."""
    from hypothesis import strategies as st

    return st.integers(lo, hi).map(partial(_on_grid, offset, per))


def lists_of(elements: Any, n: int) -> Any:
    """Lists of exactly n elements."""
    from hypothesis import strategies as st

    return st.lists(elements, min_size=n, max_size=n)


def _as_array(dtype: str, shape: tuple[int, ...], values: list) -> np.ndarray:
    return np.array(values, dtype=dtype).reshape(shape)


def matrix(rows: int, cols: int, elements: Any, dtype: str = "float64") -> Any:
    """A (rows, cols) NumPy array, drawn row by row (each row shrinks on its own)."""
    return lists_of(lists_of(elements, cols), rows).map(partial(_as_array, dtype, (rows, cols)))


def array_of(shape: Sequence[int], elements: Any, dtype: str = "float64") -> Any:
    """A NumPy array of a fixed shape (any number of dimensions, 0-d included), drawn as one flat list."""
    shape = tuple(shape)
    return lists_of(elements, int(np.prod(shape, dtype=np.int64))).map(partial(_as_array, dtype, shape))


def _unpacked(then: Callable[..., Any], sizes: tuple[int, ...]) -> Any:
    return then(*sizes)


def sized(*ranges: tuple[int, int], then: Callable[..., Any]) -> Any:
    """The sizes first (an integer in each (lo, hi) range), then the strategy then(*sizes) returns:
    sized((1, 3), (2, 4), then=lambda n, k: matrix(n, k, grid(-8, 8, 2)))."""
    from hypothesis import strategies as st

    return st.tuples(*(st.integers(lo, hi) for lo, hi in ranges)).flatmap(partial(_unpacked, then))
