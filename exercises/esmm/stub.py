"""The ESMM loss (torch). Fill in esmm_loss; run `mlprep grade esmm` to grade it."""

import torch  # noqa: F401 -- your implementation will need it
import torch.nn.functional as F  # noqa: F401


def esmm_loss(ctr_logit, cvr_logit, click, buy):
    """Entire-space multi-task loss for the funnel impression -> click -> purchase.

    ctr_logit, cvr_logit: (N,) float tensors (float32 or float64), the logits of pCTR = p(click) and
    pCVR = p(buy | click) for N impressions; click, buy: (N,) float tensors of 0/1 labels, same dtype
    and device. buy may be 1 where click is 0; the CTCVR label is click AND buy (click * buy).
    Returns a 0-d tensor on the inputs' device, of their dtype (float64 kept):
        mean over all N of BCE(pCTR, click) + mean over all N of BCE(pCTR * pCVR, click * buy).
    Computed in log space, so logits of +-50 give a finite loss and finite gradients; differentiable
    with respect to both logits. The inputs are not modified.
    """
    raise NotImplementedError("esmm_loss: supervise pCTR and pCTR * pCVR on every impression, in log space")
