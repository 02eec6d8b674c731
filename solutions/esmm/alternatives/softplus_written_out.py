"""Written out with softplus: log sigmoid(x) = -softplus(-x), and
1 - s(a) s(b) = (e^-a + e^-b + e^-(a+b)) / ((1 + e^-a)(1 + e^-b)), whose log is a logsumexp of
(-a, -b, -a-b) minus two softplus terms. F.softplus switches to the identity above 20 (its default
threshold), off by at most e^-20 per term: inside the contract's absolute tolerance."""

import torch
import torch.nn.functional as F


def esmm_loss(ctr_logit, cvr_logit, click, buy):
    a, b = ctr_logit, cvr_logit
    sp_a, sp_b = F.softplus(-a), F.softplus(-b)
    log_ctr, log_not_ctr = -sp_a, -a - sp_a
    log_ctcvr = -sp_a - sp_b
    log_not_ctcvr = torch.logsumexp(torch.stack([-a, -b, -a - b]), dim=0) - sp_a - sp_b
    both = click * buy
    n = a.numel()
    ctr = -(click * log_ctr + (1 - click) * log_not_ctr).sum() / n
    ctcvr = -(both * log_ctcvr + (1 - both) * log_not_ctcvr).sum() / n
    return ctr + ctcvr
