"""torch's own loss for the CTR term (F.binary_cross_entropy_with_logits), and the CTCVR term by
log1mexp of log pCTCVR (Maechler's two branches: log(-expm1(L)) near 0, log1p(-exp(L)) below
-ln 2), each branch fed a clamped input so that the branch torch.where does not take cannot send a
NaN back through autograd."""

import math

import torch
import torch.nn.functional as F


def _log1mexp(L):
    near_zero = L > -math.log(2)
    upper = torch.log(-torch.expm1(torch.where(near_zero, L, torch.full_like(L, -1.0))))
    lower = torch.log1p(-torch.exp(torch.where(near_zero, torch.full_like(L, -1.0), L)))
    return torch.where(near_zero, upper, lower)


def esmm_loss(ctr_logit, cvr_logit, click, buy):
    ctr_term = F.binary_cross_entropy_with_logits(ctr_logit, click)
    target = click * buy
    log_ctcvr = F.logsigmoid(ctr_logit) + F.logsigmoid(cvr_logit)
    ctcvr_term = -(target * log_ctcvr + (1 - target) * _log1mexp(log_ctcvr)).mean()
    return ctr_term + ctcvr_term
