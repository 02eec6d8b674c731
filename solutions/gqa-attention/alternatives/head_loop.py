"""Alternative: a loop over query heads, each attending with its key-value head h // G, and a
numerically stable softmax written out (subtract the row max, exp, divide by the sum)."""

import math

import torch


def gqa(q, k, v, causal=False):
    Hq, Hkv = q.size(1), k.size(1)
    if Hq % Hkv != 0:
        raise ValueError(f"{Hq} query heads are not a multiple of {Hkv} kv heads")
    G = Hq // Hkv
    T, S = q.size(2), k.size(2)
    if causal:
        future = torch.arange(S, device=q.device)[None, :] > torch.arange(T, device=q.device)[:, None]
    outs = []
    for h in range(Hq):
        kh, vh = k[:, h // G], v[:, h // G]
        s = q[:, h] @ kh.transpose(1, 2) / math.sqrt(q.size(-1))
        if causal:
            s = s.masked_fill(future, -math.inf)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        outs.append((e / e.sum(dim=-1, keepdim=True)) @ vh)
    return torch.stack(outs, dim=1)


def kv_cache_bytes(batch, seq_len, n_layers, n_kv_heads, head_dim, bytes_per_elem):
    elements_per_token = 2 * n_layers * n_kv_heads * head_dim  # K and V, every layer
    return batch * seq_len * elements_per_token * bytes_per_elem
