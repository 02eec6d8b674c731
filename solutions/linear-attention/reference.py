"""Reference for `linear-attention`: kernelised attention with the elu + 1 feature map, O(T) memory."""

import torch
import torch.nn.functional as F

EPS = 1e-6  # keeps the normaliser away from 0 where phi underflows; the contract allows up to 1e-5


def linear_attention(q, k, v, causal=True):
    """Linear attention with phi(x) = elu(x) + 1 applied to q and k as given (no 1 / sqrt(d)).
    q, k: (B, H, T, d); v: (B, H, T, dv). Output (B, H, T, dv), row t equal to
        sum_j phi(q_t).phi(k_j) v_j / sum_j phi(q_t).phi(k_j)
    over j <= t (causal, the diagonal included) or over every j (causal=False). Never builds the
    (T, T) matrix: memory grows linearly in T. Inputs are left unchanged."""
    phi_q = F.elu(q) + 1
    phi_k = F.elu(k) + 1
    if causal:
        # Prefix sums S_t = sum_{j<=t} phi(k_j) v_j^T and z_t = sum_{j<=t} phi(k_j): (B, H, T, d, dv) and (B, H, T, d).
        # Inclusive cumsum, so that position t sees its own key.
        kv = torch.einsum("bhtd,bhte->bhtde", phi_k, v).cumsum(dim=2)
        z = phi_k.cumsum(dim=2)
        num = torch.einsum("bhtd,bhtde->bhte", phi_q, kv)
        den = torch.einsum("bhtd,bhtd->bht", phi_q, z)
    else:
        kv = torch.einsum("bhtd,bhte->bhde", phi_k, v)
        z = phi_k.sum(dim=2)
        num = torch.einsum("bhtd,bhde->bhte", phi_q, kv)
        den = torch.einsum("bhtd,bhd->bht", phi_q, z)
    return num / (den.unsqueeze(-1) + EPS)
