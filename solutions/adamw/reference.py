"""Reference AdamW step: the seed's formula, array-agnostic, with the dtype rules of the contract.

Works unchanged on NumPy arrays and on torch tensors (any device): only arithmetic, `** 0.5` and a
dtype cast are used, and the cast is the one place that needs to know which library it is.
"""


def _as_dtype_of(x, like):
    """`x` converted to the dtype of `like` (NumPy `.astype`, torch `.to`); a no-op when they agree."""
    if hasattr(x, "astype"):  # NumPy arrays and NumPy scalars (NumPy turns 0-d results into scalars)
        return x.astype(like.dtype)
    return x.to(like.dtype)


def adamw(w, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    """One AdamW step. w, g, m, v share one shape; t is the 1-based step count.
    Works on NumPy arrays and on torch tensors (any device). Returns the new (w, m, v)
    and leaves the inputs unchanged. The returned w, m, v have the dtypes of the input w, m, v
    (m and v are the optimizer state); g may be lower precision than m and v."""
    # g may be float16 while the state is float32: bring it to each state's dtype BEFORE squaring,
    # because in float16 300**2 overflows (> 65504) and (1 - b2) * 1e-3**2 underflows to zero.
    g_m = _as_dtype_of(g, m)
    g_v = _as_dtype_of(g, v)

    # Running averages of the gradient and of its square (new arrays: the inputs stay unchanged).
    m_new = b1 * m + (1 - b1) * g_m
    v_new = b2 * v + (1 - b2) * g_v * g_v

    # Both averages start at zero, so for small t they are biased towards zero; dividing by
    # 1 - beta**t (t is 1-based) removes that bias and makes the first step about lr in size.
    m_hat = m_new / (1 - b1 ** t)
    v_hat = v_new / (1 - b2 ** t)

    # Decoupled weight decay: shrink w directly by lr * wd * w, outside the adaptive step, so it is
    # not divided by sqrt(v_hat) (an L2 term folded into g would be, and would barely decay weights
    # with large gradients). eps sits outside the root: it only guards against dividing by ~0.
    w_new = w - lr * (m_hat / (v_hat ** 0.5 + eps) + wd * w)

    # Mixed dtypes promote (float32 w with float64 state gives float64): hand each back in its own.
    return _as_dtype_of(w_new, w), _as_dtype_of(m_new, m), _as_dtype_of(v_new, v)
