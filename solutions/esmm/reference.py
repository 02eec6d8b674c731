"""Reference for `esmm`: the ESMM loss, supervised on the entire space of impressions.

pCTR = sigmoid(a) and pCTCVR = sigmoid(a) * sigmoid(b) (a, b the CTR and CVR logits) are both
supervised on every impression, pCTR by the click and pCTCVR by click AND buy, so the CVR head
learns from unclicked impressions too (through the product) and never only from the clicked ones.
Everything stays in log space, so logits of +-50 cannot round a probability to 0 or 1:

    log pCTR       = logsigmoid(a)                 log(1 - pCTR) = logsigmoid(-a)
    log pCTCVR     = logsigmoid(a) + logsigmoid(b)
    log(1 - pCTCVR) = log(sigmoid(-a) + sigmoid(a) sigmoid(-b))
                    = logaddexp(logsigmoid(-a), logsigmoid(a) + logsigmoid(-b))

the last since 1 - s(a) s(b) = (1 - s(a)) + s(a) (1 - s(b)), a sum of two positive terms: no
cancellation, and a gradient that is finite wherever the loss is.
"""

import torch
import torch.nn.functional as F


def esmm_loss(ctr_logit, cvr_logit, click, buy):
    """mean BCE(pCTR, click) + mean BCE(pCTCVR, click * buy) over all N impressions, with
    pCTR = sigmoid(ctr_logit), pCTCVR = sigmoid(ctr_logit) * sigmoid(cvr_logit). Inputs: (N,) float
    tensors of one dtype and device, labels 0/1. Returns a 0-d tensor."""
    ctcvr = click * buy  # a purchase without a click is not a click-and-purchase
    log_ctr, log_not_ctr = F.logsigmoid(ctr_logit), F.logsigmoid(-ctr_logit)
    log_ctcvr = log_ctr + F.logsigmoid(cvr_logit)
    log_not_ctcvr = torch.logaddexp(log_not_ctr, log_ctr + F.logsigmoid(-cvr_logit))
    ctr_loss = -(click * log_ctr + (1 - click) * log_not_ctr).mean()
    ctcvr_loss = -(ctcvr * log_ctcvr + (1 - ctcvr) * log_not_ctcvr).mean()
    return ctr_loss + ctcvr_loss
