"""Counting instead of a closed formula: the positions where a window starts, and the weights group by group."""


def conv2d_params(c_in, c_out, kh, kw, bias=True, groups=1):
    if c_in % groups != 0 or c_out % groups != 0:
        raise ValueError("groups must divide c_in and c_out")
    per_group_in, per_group_out = c_in // groups, c_out // groups
    total = 0
    for _ in range(groups):
        total += per_group_out * per_group_in * kh * kw  # this group's filters, over this group's inputs
        if bias:
            total += per_group_out
    return total


def conv2d_out_shape(h, w, kh, kw, stride=1, padding=0, dilation=1):
    sizes = []
    for size, k in ((h, kh), (w, kw)):
        last_tap = dilation * (k - 1)  # offset of the window's last tap from its first
        starts = range(0, size + 2 * padding - last_tap, stride)  # window starts whose last tap is still inside
        if len(starts) == 0:
            raise ValueError(f"kernel {k} with dilation {dilation} does not fit in {size} + 2 * {padding}")
        sizes.append(len(starts))
    return tuple(sizes)
