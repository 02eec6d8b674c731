"""Alternative: one weight at a time, in Python floats (float64), with math.sqrt.

Differs from the reference by looping over the elements instead of using array arithmetic: each
element is read as a Python float, updated with scalar math (so every intermediate is float64,
whatever the input dtypes, and g is never squared in low precision), and written into a fresh
output of the input's dtype, shape and device. Slow, but exactly as correct.
"""

import math

import numpy as np


def _scalar_update(w, g, m, v, t, lr, b1, b2, eps, wd):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    m_hat = m / (1 - b1**t)
    v_hat = v / (1 - b2**t)
    w = w - lr * wd * w - lr * m_hat / (math.sqrt(v_hat) + eps)
    return w, m, v


def adamw(w, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    if type(w).__module__.startswith("torch"):
        flat = [x.detach().reshape(-1).cpu().tolist() for x in (w, g, m, v)]
        new = [[], [], []]
        for wi, gi, mi, vi in zip(*flat):
            for out, value in zip(new, _scalar_update(wi, gi, mi, vi, t, lr, b1, b2, eps, wd)):
                out.append(value)
        import torch

        return tuple(
            torch.tensor(values, dtype=like.dtype, device=like.device).reshape(like.shape)
            for values, like in zip(new, (w, m, v))
        )

    w, g, m, v = (np.asarray(x) for x in (w, g, m, v))
    outs = (np.empty(w.shape, w.dtype), np.empty(m.shape, m.dtype), np.empty(v.shape, v.dtype))
    for index in np.ndindex(w.shape):
        values = _scalar_update(float(w[index]), float(g[index]), float(m[index]), float(v[index]), t, lr, b1, b2, eps, wd)
        for out, value in zip(outs, values):
            out[index] = value
    return outs
