"""Alternative: the RNN form. Walk t = 0..T-1 carrying the state S = sum phi(k_j) v_j^T and the
normaliser z = sum phi(k_j); one (d, dv) state per (batch, head), so memory is O(T) for the output only."""

import torch
import torch.nn.functional as F


def linear_attention(q, k, v, causal=True):
    fq = F.elu(q) + 1.0
    fk = F.elu(k) + 1.0
    B, H, T, d = q.shape
    dv = v.shape[-1]
    if not causal:
        S = fk.transpose(-2, -1) @ v  # (B, H, d, dv)
        z = fk.sum(dim=-2, keepdim=True)  # (B, H, 1, d)
        return (fq @ S) / (fq * z).sum(dim=-1, keepdim=True)
    S = q.new_zeros(B, H, d, dv)
    z = q.new_zeros(B, H, d)
    rows = []
    for t in range(T):
        S = S + fk[:, :, t, :, None] * v[:, :, t, None, :]
        z = z + fk[:, :, t]
        num = (fq[:, :, t, None, :] @ S).squeeze(-2)  # (B, H, dv)
        den = (fq[:, :, t] * z).sum(dim=-1, keepdim=True)
        rows.append(num / den)
    return torch.stack(rows, dim=2)
