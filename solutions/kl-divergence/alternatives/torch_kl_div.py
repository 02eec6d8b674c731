"""torch.nn.functional.kl_div, whose arguments run the other way round: kl_div(log q, p) is KL(p || q)."""

import numpy as np
import torch
import torch.nn.functional as F


def kl(p, q):
    p, q = torch.from_numpy(np.asarray(p)), torch.from_numpy(np.asarray(q))
    # kl_div(input=log q, target=p) is p * (log p - log q) with 0 where p = 0, except 0 * -inf = NaN
    # where q = 0 too: those terms are 0 by definition.
    terms = F.kl_div(torch.log(q), p, reduction="none")
    return torch.where(p > 0, terms, torch.zeros_like(terms)).sum(-1).numpy()


def kl_from_logits(a, b):
    a, b = torch.from_numpy(np.asarray(a)), torch.from_numpy(np.asarray(b))
    return F.kl_div(F.log_softmax(b, dim=-1), F.log_softmax(a, dim=-1), reduction="none", log_target=True).sum(-1).numpy()
