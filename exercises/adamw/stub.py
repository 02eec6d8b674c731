"""AdamW: one decoupled-weight-decay step. Fill in `adamw`; run `mlprep grade adamw` to grade it."""


def adamw(w, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    """One AdamW step. w, g, m, v share one shape; t is the 1-based step count.
    Works on NumPy arrays and on torch tensors (any device). Returns the new (w, m, v)
    and leaves the inputs unchanged. The returned w, m, v have the dtypes of the input w, m, v
    (m and v are the optimizer state); g may be lower precision than m and v."""
    raise NotImplementedError("adamw: update m and v, bias-correct them, take the step and decay w")
