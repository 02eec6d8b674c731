"""Alternative: torch's F.scaled_dot_product_attention with a boolean attn_mask.

Differs from the reference in that the scaling, masking and softmax are torch's fused kernel;
queries that see no key are given a harmless all-True mask row (so no backend ever softmaxes an
all-masked row) and zeroed afterwards with torch.where. lm_loss calls the model on the WHOLE
sequence and drops the last position, and averages with reduction="none" and a weight mask."""

import torch
import torch.nn.functional as F


def causal_attention(q, k, v, keep):
    T = q.shape[-2]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))
    allowed = causal & keep[:, None, None, :].to(torch.bool)
    empty = ~allowed.any(dim=-1, keepdim=True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | empty)
    return torch.where(empty, torch.zeros((), dtype=out.dtype, device=out.device), out)


def lm_loss(model, x, pad_id):
    logits = model(x)[:, :-1, :]
    targets = x[:, 1:]
    weight = (targets != pad_id).to(logits.dtype)
    per_token = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")
    return (per_token * weight.reshape(-1)).sum() / weight.sum().clamp(min=1.0)
