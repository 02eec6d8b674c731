"""Wraps torch's own float32 -> bfloat16 -> float32 cast and torch.finfo."""

import math

import numpy as np
import torch

_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def round_to_bf16(x):
    x = np.asarray(x, dtype=np.float32)
    # from_numpy needs a writeable array with non-negative strides: a contiguous copy is both
    return torch.from_numpy(np.ascontiguousarray(x).copy()).to(torch.bfloat16).float().numpy().reshape(x.shape)


def format_info(name):
    if name not in _DTYPES:
        raise ValueError(f"unknown format {name!r}")
    info = torch.finfo(_DTYPES[name])
    mantissa = round(-math.log2(info.eps))
    return {"max": info.max, "tiny": info.tiny, "eps": info.eps, "exponent_bits": info.bits - 1 - mantissa, "mantissa_bits": mantissa}
