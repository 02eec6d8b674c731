"""One element at a time with Python ints: round half to even spelled out as remainder comparisons."""

import struct

import numpy as np

WIDTHS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23)}


def _round_bits(b):
    if (b & 0x7F800000) == 0x7F800000 and (b & 0x007FFFFF):
        return 0x7FC00000  # NaN
    kept, rest = b >> 16, b & 0xFFFF
    if rest > 0x8000 or (rest == 0x8000 and kept & 1):
        kept += 1  # may carry into the exponent: the largest values become inf
    return (kept << 16) & 0xFFFFFFFF


def round_to_bf16(x):
    x = np.asarray(x, dtype=np.float32)
    out = []
    for value in x.reshape(-1).tolist():
        (b,) = struct.unpack("<I", struct.pack("<f", value))
        out.append(_round_bits(b))
    return np.array(out, dtype=np.uint32).view(np.float32).reshape(x.shape)


def format_info(name):
    try:
        e, m = WIDTHS[name]
    except KeyError:
        raise ValueError(f"no such format: {name}") from None
    bias = (1 << (e - 1)) - 1
    largest = int("1" * (m + 1), 2) << (bias - m)  # 1.11...1 (binary) * 2**bias, exactly, as an int
    return {"max": float(largest), "tiny": 2.0 ** (1 - bias), "eps": 2.0 ** (-m), "exponent_bits": e, "mantissa_bits": m}
