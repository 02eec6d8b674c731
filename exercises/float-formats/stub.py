"""float16, bfloat16 and float32. Fill in `round_to_bf16` and `format_info`; run `mlprep grade float-formats` to grade them."""

import numpy as np


def round_to_bf16(x):
    """Each value of the float32 array x rounded to the nearest bfloat16 value, ties to even, by bit
    manipulation on x.view(np.uint32); returned as a new float32 array of x's shape (the bfloat16
    value in the top 16 bits, the low 16 bits zero). Bit for bit what torch's
    x.to(torch.bfloat16).float() gives: subnormals rounded (not flushed), the sign of zero kept,
    +-inf unchanged, values past bfloat16's max rounded to inf, any NaN to a NaN. x is unchanged."""
    raise NotImplementedError("round_to_bf16: add 0x7FFF plus the lowest kept bit to the bits, then clear the low 16 bits")


def format_info(name):
    """The parameters of "float16", "bfloat16" or "float32" as a dict, as torch.finfo gives them:
    "max" (largest finite value), "tiny" (smallest positive normal value), "eps" (the gap between 1.0
    and the next larger value), "exponent_bits" and "mantissa_bits" (the stored fraction bits:
    10, 7, 23). Any other name raises ValueError."""
    raise NotImplementedError("format_info: derive max, tiny and eps from the exponent and fraction widths")
