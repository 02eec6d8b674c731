"""Both answers from torch itself: an nn.Conv2d and a forward pass on the meta device (shapes only, no memory)."""

import torch
import torch.nn.functional as F
from torch import nn


def conv2d_params(c_in, c_out, kh, kw, bias=True, groups=1):
    layer = nn.Conv2d(c_in, c_out, (kh, kw), bias=bias, groups=groups, device="meta")  # raises ValueError for bad groups
    return sum(p.numel() for p in layer.parameters())


def conv2d_out_shape(h, w, kh, kw, stride=1, padding=0, dilation=1):
    x = torch.zeros(1, 1, h, w, device="meta")
    weight = torch.zeros(1, 1, kh, kw, device="meta")
    try:
        out = F.conv2d(x, weight, stride=stride, padding=padding, dilation=dilation)
    except RuntimeError as exc:  # "Kernel size can't be greater than actual input size"
        raise ValueError(str(exc)) from None
    return tuple(out.shape[2:])
