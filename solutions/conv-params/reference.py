"""Reference for `conv-params`: what nn.Conv2d holds and what it outputs, by formula.

Weights: each of the c_out filters spans the c_in / groups input channels of its group over a
kh x kw window; the bias is one number per output channel. Output size per dimension, as in the
nn.Conv2d documentation: floor((size + 2 padding - dilation (kernel - 1) - 1) / stride) + 1, where
dilation (kernel - 1) + 1 is the span the dilated kernel covers, which must fit in the padded input.
"""


def conv2d_params(c_in, c_out, kh, kw, bias=True, groups=1):
    """Number of learnable parameters of nn.Conv2d(c_in, c_out, (kh, kw), bias=bias,
    groups=groups), an int: c_out * (c_in // groups) * kh * kw weights, plus c_out biases.
    Raises ValueError when groups does not divide both c_in and c_out."""
    if c_in % groups or c_out % groups:
        raise ValueError(f"groups = {groups} must divide both c_in = {c_in} and c_out = {c_out}")
    weights = c_out * (c_in // groups) * kh * kw
    return weights + (c_out if bias else 0)


def conv2d_out_shape(h, w, kh, kw, stride=1, padding=0, dilation=1):
    """(h_out, w_out), ints, of nn.Conv2d with kernel (kh, kw) and this stride, padding and
    dilation (each the same for both dimensions) on an h x w input. Raises ValueError when the
    dilated kernel, dilation * (k - 1) + 1, is larger than the padded input in either dimension."""
    return (out_size(h, kh, stride, padding, dilation, "h"), out_size(w, kw, stride, padding, dilation, "w"))


def out_size(size, kernel, stride, padding, dilation, name):
    span = dilation * (kernel - 1) + 1  # what the dilated kernel covers
    padded = size + 2 * padding  # padding goes on both sides
    if span > padded:
        raise ValueError(f"the dilated kernel spans {span} but the padded input has {padded} in {name}")
    return (padded - span) // stride + 1
