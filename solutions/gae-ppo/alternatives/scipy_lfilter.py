"""GAE with the library's discounted cumulative sum, scipy.signal.lfilter (as OpenAI's Spinning Up
computes it), run on each episode's stretch of TD errors separately so nothing crosses a done."""

import numpy as np
import scipy.signal
import torch
import torch.nn.functional as F


def discount_cumsum(x, discount):
    return scipy.signal.lfilter([1], [1, -discount], x[::-1])[::-1]


def gae(rewards, values, dones, last_value, gamma, lam):
    r = rewards.detach().cpu().double().numpy()
    v = values.detach().cpu().double().numpy()
    done = dones.detach().cpu().numpy().astype(bool)
    v_next = np.append(v[1:], float(last_value)) * ~done
    deltas = r + gamma * v_next - v
    out = np.empty_like(deltas)
    start = 0
    for end in [i + 1 for i in np.flatnonzero(done)] + [len(deltas)]:
        if end > start:
            out[start:end] = discount_cumsum(deltas[start:end], gamma * lam)
        start = end
    return torch.as_tensor(out.copy(), dtype=values.dtype, device=values.device)


def ppo_clip_loss(logp_new, logp_old, adv, clip):
    # min(r a, clamp(r) a) = r a - relu(r a - clamp(r) a)
    a = adv.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    unclipped, clipped = ratio * a, ratio.clamp(1 - clip, 1 + clip) * a
    return -(unclipped - F.relu(unclipped - clipped)).mean()
