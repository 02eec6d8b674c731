"""gqa-attention: grouped-query attention, and the size of a KV cache. Run `mlprep grade gqa-attention`."""

import math  # noqa: F401

import torch  # noqa: F401


def gqa(q, k, v, causal=False):
    """Grouped-query attention. q: (B, Hq, T, d); k, v: (B, Hkv, S, d), where Hkv divides Hq
    (else ValueError). Query head h attends with key-value head h // (Hq // Hkv), so consecutive
    groups of Hq // Hkv query heads share one key-value head (as F.scaled_dot_product_attention's
    enable_gqa). softmax(q k^T / sqrt(d)) v over the keys; causal=True (used with T == S): query t
    sees keys 0..t only. Returns (B, Hq, T, d) on q's device, float64 for float64 inputs."""
    raise NotImplementedError("gqa: check Hq % Hkv, share each kv head across its group of query heads, attend")


def kv_cache_bytes(batch, seq_len, n_layers, n_kv_heads, head_dim, bytes_per_elem):
    """The bytes a KV cache takes (an int): every layer keeps K and V, each (batch, n_kv_heads,
    seq_len, head_dim), with bytes_per_elem bytes per number."""
    raise NotImplementedError("kv_cache_bytes: count the cached numbers, times bytes_per_elem")
