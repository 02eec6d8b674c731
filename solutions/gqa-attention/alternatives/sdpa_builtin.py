"""Alternative: torch's own F.scaled_dot_product_attention with enable_gqa=True (the same grouping,
h // (Hq // Hkv)), is_causal for the causal mask; math.prod for the cache size."""

import math

import torch.nn.functional as F


def gqa(q, k, v, causal=False):
    if q.shape[1] % k.shape[1] != 0:
        raise ValueError(f"Hq = {q.shape[1]} is not a multiple of Hkv = {k.shape[1]}")
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


def kv_cache_bytes(batch, seq_len, n_layers, n_kv_heads, head_dim, bytes_per_elem):
    return math.prod((2, batch, seq_len, n_layers, n_kv_heads, head_dim, bytes_per_elem))
