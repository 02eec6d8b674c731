"""Vectorised: A = M @ delta, with M[t, s] = (gamma * lam)^(s - t) for s >= t in the same episode
(no done among steps t..s-1), built from the count of dones before each step. The loss with
torch.where: the clipped term where it is the smaller one, the unclipped one elsewhere."""

import torch


def gae(rewards, values, dones, last_value, gamma, lam):
    T = values.shape[0]
    d = dones.to(values.dtype)
    last = torch.as_tensor(last_value, dtype=values.dtype, device=values.device).reshape(1)
    deltas = rewards + gamma * torch.cat([values[1:], last]) * (1 - d) - values
    episode = torch.cumsum(d, 0) - d  # dones strictly before each step
    steps = torch.arange(T, device=values.device)
    lag = steps[None, :] - steps[:, None]
    same = (lag >= 0) & (episode[None, :] == episode[:, None])
    weights = torch.where(same, torch.tensor(gamma * lam, dtype=values.dtype, device=values.device) ** lag.clamp(min=0).to(values.dtype), 0.0)
    return weights @ deltas


def ppo_clip_loss(logp_new, logp_old, adv, clip):
    adv = adv.detach()
    ratio = torch.exp(logp_new - logp_old.detach())
    binds = ((adv > 0) & (ratio > 1 + clip)) | ((adv < 0) & (ratio < 1 - clip))
    surrogate = torch.where(binds, torch.clamp(ratio, 1 - clip, 1 + clip) * adv, ratio * adv)
    return -surrogate.mean()
