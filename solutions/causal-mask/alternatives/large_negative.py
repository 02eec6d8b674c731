"""Alternative: masked_fill with the dtype's most negative finite number, softmax in float32.

Differs from the reference in that masked scores become torch.finfo(dtype).min rather than -inf
(a fully masked row is then a finite, uniform softmax, zeroed afterwards by a multiply), the
scores and the softmax are computed in float32 for half-precision inputs, and the scale is split
as d**-0.25 on both q and k. lm_loss uses reduction="none" and a float weight mask."""

import torch
import torch.nn.functional as F


def causal_attention(q, k, v, keep):
    T, d = q.shape[-2], q.shape[-1]
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    qs = q.to(work) * d ** -0.25
    ks = k.to(work) * d ** -0.25
    scores = torch.einsum("bhtd,bhsd->bhts", qs, ks)
    pos = torch.arange(T, device=q.device)
    allowed = (pos[None, :] <= pos[:, None])[None, None] & keep[:, None, None, :]
    scores = scores.masked_fill(~allowed, torch.finfo(work).min)
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("bhts,bhsd->bhtd", weights, v.to(work))
    out = out * allowed.any(dim=-1, keepdim=True).to(work)
    return out.to(q.dtype)


def lm_loss(model, x, pad_id):
    logits = model(x[:, :-1])
    targets = x[:, 1:]
    weight = (targets != pad_id).float()
    losses = F.cross_entropy(logits.permute(0, 2, 1), targets, reduction="none")
    return (losses * weight).sum() / torch.clamp(weight.sum(), min=1.0)
