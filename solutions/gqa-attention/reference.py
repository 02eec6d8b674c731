"""gqa-attention: grouped-query attention (query heads share key-value heads), and the KV cache's size."""

import math

import torch


def gqa(q, k, v, causal=False):
    """Grouped-query attention. q (B, Hq, T, d); k, v (B, Hkv, S, d) with Hq a multiple of Hkv.
    Query head h uses key-value head h // (Hq // Hkv). Returns (B, Hq, T, d)."""
    n_q_heads, n_kv_heads = q.shape[-3], k.shape[-3]
    if n_kv_heads < 1 or n_q_heads % n_kv_heads != 0:
        raise ValueError(f"the {n_q_heads} query heads cannot be split into groups over {n_kv_heads} key-value heads")
    group = n_q_heads // n_kv_heads
    # Consecutive query heads share a key-value head: kv head j serves query heads j*group .. (j+1)*group - 1.
    k = k.repeat_interleave(group, dim=-3)
    v = v.repeat_interleave(group, dim=-3)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q * scale) @ k.transpose(-2, -1)  # (B, Hq, T, S)
    if causal:
        T, S = scores.shape[-2:]
        allowed = torch.ones(T, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v


def kv_cache_bytes(batch, seq_len, n_layers, n_kv_heads, head_dim, bytes_per_elem):
    """Bytes of the KV cache: per layer, one K and one V tensor of (batch, n_kv_heads, seq_len, head_dim)."""
    return 2 * batch * seq_len * n_layers * n_kv_heads * head_dim * bytes_per_elem
