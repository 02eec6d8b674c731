"""Alternative: no copies of K and V. q is viewed as (B, Hkv, G, T, d), so the G query heads of a
group sit next to their key-value head and broadcast against it in one einsum; the causal mask is
an additive -inf bias; the cache size is built up layer by layer."""

import torch


def gqa(q, k, v, causal=False):
    B, Hq, T, d = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    if Hq % Hkv:
        raise ValueError("Hq must be a multiple of Hkv")
    G = Hq // Hkv
    qg = q.reshape(B, Hkv, G, T, d)  # query head h = j * G + g sits at [j, g]
    scores = torch.einsum("bjgtd,bjsd->bjgts", qg, k) / d ** 0.5
    if causal:
        bias = torch.full((T, S), float("-inf"), dtype=q.dtype, device=q.device).triu(1)
        scores = scores + bias
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("bjgts,bjsd->bjgtd", weights, v)
    return out.reshape(B, Hq, T, d)


def kv_cache_bytes(batch, seq_len, n_layers, n_kv_heads, head_dim, bytes_per_elem):
    per_layer = batch * n_kv_heads * seq_len * head_dim * bytes_per_elem  # one of K or V
    total = 0
    for _ in range(n_layers):
        total += 2 * per_layer
    return total
