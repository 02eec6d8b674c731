"""No bits at all: scale each value so that bfloat16's last kept bit is the units digit, round with np.rint
(which rounds half to even) in float64, where this is exact, and scale back. bfloat16 keeps 8 significant
bits down to 2**-126 and a fixed quantum of 2**-133 below it (its subnormals)."""

import numpy as np

_FORMATS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23)}


def round_to_bf16(x):
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore"):  # a signalling NaN warns when widened
        wide = x.astype(np.float64)
    finite = np.isfinite(wide) & (wide != 0)
    _, exponent = np.frexp(np.where(finite, wide, 1.0))  # |x| = f * 2**exponent, 0.5 <= f < 1
    quantum = np.ldexp(1.0, np.maximum(exponent - 8, -133))
    rounded = np.where(finite, np.rint(wide / quantum) * quantum, wide)  # zeros keep their sign, inf and NaN pass through
    with np.errstate(over="ignore"):  # past bfloat16's max the rounded value is 2**128, which is inf in float32
        return rounded.astype(np.float32)


def format_info(name):
    if name not in _FORMATS:
        raise ValueError(f"format_info: {name!r} is not float16, bfloat16 or float32")
    e, m = _FORMATS[name]
    emax = 2 ** (e - 1) - 1
    max_value = float(np.ldexp(2.0**(m + 1) - 1, emax - m))
    return {"max": max_value, "tiny": float(np.ldexp(1.0, 1 - emax)), "eps": float(np.ldexp(1.0, -m)), "exponent_bits": e, "mantissa_bits": m}
