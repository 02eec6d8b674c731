"""Conv2d parameter counts and output shapes, in plain Python. Fill in both functions; run `mlprep grade conv-params` to grade them."""


def conv2d_params(c_in, c_out, kh, kw, bias=True, groups=1):
    """Number of learnable parameters of nn.Conv2d(c_in, c_out, (kh, kw), bias=bias,
    groups=groups), an int: c_out * (c_in // groups) * kh * kw weights, plus c_out biases.
    Raises ValueError when groups does not divide both c_in and c_out."""
    raise NotImplementedError("conv2d_params: weights per filter times filters, plus the biases")


def conv2d_out_shape(h, w, kh, kw, stride=1, padding=0, dilation=1):
    """(h_out, w_out), ints, of nn.Conv2d with kernel (kh, kw) and this stride, padding and
    dilation (each the same for both dimensions) on an h x w input. Raises ValueError when the
    dilated kernel, dilation * (k - 1) + 1, is larger than the padded input in either dimension."""
    raise NotImplementedError("conv2d_out_shape: pad, fit the dilated kernel, count the strided positions")
