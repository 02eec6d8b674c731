"""Alternative: explicit NumPy/torch dispatch, with torch.optim.AdamW's order of operations.

Differs from the reference in how it is written: it picks the library (`xp`) from the input type,
moves m and v towards g and g**2 with an interpolation (m + (1 - b1) * (g - m)), decays w first by
the factor (1 - lr * wd), and folds the bias corrections into a step size lr / (1 - b1**t) and a
denominator sqrt(v) / sqrt(1 - b2**t) + eps. Mathematically the same step, rounded differently.
"""

import math

import numpy as np


def _library(x):
    if type(x).__module__.startswith("torch"):
        import torch

        return torch
    return np


def adamw(w, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    xp = _library(w)
    if xp is np:
        w, g, m, v = (np.asarray(x) for x in (w, g, m, v))
        cast = lambda x, dtype: np.asarray(x).astype(dtype)  # noqa: E731
    else:
        cast = lambda x, dtype: x.to(dtype)  # noqa: E731

    gm = cast(g, m.dtype)
    gv = cast(g, v.dtype)
    m_new = m + (1 - b1) * (gm - m)
    v_new = v + (1 - b2) * (xp.square(gv) - v)

    step_size = lr / (1 - b1**t)
    denom = xp.sqrt(v_new) / math.sqrt(1 - b2**t) + eps
    w_new = w * (1 - lr * wd) - step_size * (m_new / denom)
    return cast(w_new, w.dtype), cast(m_new, m.dtype), cast(v_new, v.dtype)
