"""Alternative: explicit Python loops over batch, head and query.

Differs from the reference in that each query gathers its visible keys with boolean indexing
(so a query with no key simply produces a zero vector, with no softmax at all), and lm_loss
selects the real targets with boolean indexing and returns `logits.sum() * 0` when there are
none, so the 0.0 still belongs to the graph."""

import math

import torch
import torch.nn.functional as F


def causal_attention(q, k, v, keep):
    B, H, T, d = q.shape
    rows = []
    for b in range(B):
        heads = []
        for h in range(H):
            outs = []
            for t in range(T):
                visible = keep[b, : t + 1]
                if not bool(visible.any()):
                    outs.append(torch.zeros(d, dtype=q.dtype, device=q.device))
                    continue
                keys = k[b, h, : t + 1][visible]
                values = v[b, h, : t + 1][visible]
                scores = keys @ (q[b, h, t] / math.sqrt(d))  # scale first: q.k may overflow float16
                # Half-precision scores are softmaxed in float32; float32/float64 stay as they are.
                work = torch.promote_types(scores.dtype, torch.float32)
                outs.append(torch.softmax(scores.to(work), dim=0).to(v.dtype) @ values)
            heads.append(torch.stack(outs))
        rows.append(torch.stack(heads))
    return torch.stack(rows)


def lm_loss(model, x, pad_id):
    logits = model(x[:, :-1])
    targets = x[:, 1:]
    real = targets != pad_id
    if not bool(real.any()):
        return logits.sum() * 0.0
    return F.cross_entropy(logits[real], targets[real])
