"""Alternative: torch.optim.AdamW itself, wrapped to the interface.

Differs from the reference by not writing the update at all: it loads (w, m, v, t) into a fresh
torch.optim.AdamW as a parameter and its state, sets g as the gradient, calls step() and reads the
results back. NumPy inputs go through torch and come back as NumPy. torch.optim.AdamW wants one
dtype for the parameter, its gradient and its state, so everything runs in the widest of the
input dtypes (g upcast first) and each result is cast back to its input's dtype.
"""

import numpy as np
import torch


def adamw(w, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    is_numpy = not isinstance(w, torch.Tensor)
    tw, tg, tm, tv = (torch.as_tensor(np.asarray(x)) if is_numpy else x for x in (w, g, m, v))
    work = torch.promote_types(torch.promote_types(tw.dtype, tm.dtype), tv.dtype)

    # clone(): the optimizer updates its parameter and state in place; the inputs must stay as they are
    param = torch.nn.Parameter(tw.detach().to(work).clone())
    param.grad = tg.detach().to(work).clone()
    opt = torch.optim.AdamW([param], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, foreach=False)
    # step() increments the stored step count before using it, so store t - 1
    opt.state[param] = {
        "step": torch.tensor(float(t - 1)),
        "exp_avg": tm.detach().to(work).clone(),
        "exp_avg_sq": tv.detach().to(work).clone(),
    }
    with torch.no_grad():
        opt.step()
    state = opt.state[param]
    out = (param.detach().to(tw.dtype), state["exp_avg"].to(tm.dtype), state["exp_avg_sq"].to(tv.dtype))
    if is_numpy:
        return tuple(x.numpy() for x in out)
    return out
