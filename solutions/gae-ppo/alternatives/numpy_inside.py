"""GAE in NumPy (a reversed loop over Python floats' arrays), converted back to a tensor on the
input's device; the loss as the max of the negated terms, with the ratio from log-probabilities."""

import numpy as np
import torch


def gae(rewards, values, dones, last_value, gamma, lam):
    r = rewards.detach().cpu().numpy().astype(np.float64)
    v = values.detach().cpu().numpy().astype(np.float64)
    done = dones.detach().cpu().numpy().astype(bool)
    lv = float(last_value)
    out = np.zeros_like(v)
    next_adv = 0.0
    for t in range(len(v) - 1, -1, -1):
        if done[t]:
            next_adv = r[t] - v[t]
        else:
            next_v = v[t + 1] if t + 1 < len(v) else lv
            next_adv = r[t] + gamma * next_v - v[t] + gamma * lam * next_adv
        out[t] = next_adv
    return torch.from_numpy(out).to(device=values.device, dtype=values.dtype)


def ppo_clip_loss(logp_new, logp_old, adv, clip):
    with torch.no_grad():
        log_ratio_old = logp_old.clone()
        a = adv.clone()
    ratio = (logp_new - log_ratio_old).exp()
    return torch.maximum(-ratio * a, -ratio.clamp(1 - clip, 1 + clip) * a).mean()
