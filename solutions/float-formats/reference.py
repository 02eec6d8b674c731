"""Rounding float32 to bfloat16 by bit manipulation, and the parameters of three floating-point formats."""

import numpy as np

# name: (exponent bits, stored fraction bits); the leading 1 of a normal number is implicit, not stored.
_FORMATS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23)}


def round_to_bf16(x):
    """Each float32 value of x rounded to the nearest bfloat16 value, ties to even, returned as float32
    (x's shape). bfloat16 is the top 16 bits of a float32: rounding adds 0x7FFF plus the lowest kept
    bit (so an exact tie rounds to the even neighbour) and clears the low 16 bits; a carry moves into
    the exponent, up to inf. Subnormals and signed zeros need no special case, NaN does."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32)
    # A NaN becomes a quiet NaN first: the bias would carry a payload held in the low bits into the
    # exponent (0x7F800001 would round to inf) or past the sign bit (0xFFFFFFFF to +0.0).
    bits = np.where(np.isnan(x), np.uint32(0x7FC00000), bits)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)
    return np.asarray(rounded, dtype=np.uint32).view(np.float32)


def format_info(name):
    """{"max", "tiny", "eps", "exponent_bits", "mantissa_bits"} of "float16", "bfloat16" or "float32", as
    torch.finfo gives them: max the largest finite value, tiny the smallest positive normal value, eps
    the gap between 1 and the next larger value; mantissa_bits counts the stored fraction bits.
    Any other name raises ValueError."""
    if name not in _FORMATS:
        raise ValueError(f"unknown format {name!r}: expected one of {', '.join(_FORMATS)}")
    e, m = _FORMATS[name]
    emax = 2 ** (e - 1) - 1  # the exponent bias; the all-ones exponent is reserved for inf and NaN
    return {
        "max": (2.0 - 2.0**-m) * 2.0**emax,  # all fraction bits set, largest finite exponent
        "tiny": 2.0 ** (1 - emax),  # exponent field 1, fraction 0: the smallest normal value
        "eps": 2.0**-m,  # one unit in the last place of 1.0
        "exponent_bits": e,
        "mantissa_bits": m,
    }
