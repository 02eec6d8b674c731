"""Reference for `gae-ppo`: generalised advantage estimation and PPO's clipped surrogate loss.

GAE (Schulman et al., 2016) weights the TD errors exponentially:

    delta_t = r_t + gamma * V_{t+1} * (1 - done_t) - V_t          (V_T = last_value)
    A_t     = delta_t + gamma * lam * (1 - done_t) * A_{t+1}       (A_T = 0)

where done_t means the episode ended with step t: then neither the next value nor the next
advantage (which belong to another episode) reach A_t. lam = 0 gives the TD error, lam = 1 the
discounted return minus the value.

PPO's loss is the negative of the clipped surrogate objective, so that an optimiser that minimises
it raises the probability of positive-advantage actions, and no further than the clip allows:

    r = exp(logp_new - logp_old)
    loss = -mean(min(r * adv, clamp(r, 1 - clip, 1 + clip) * adv))

The ratio comes from the difference of log-probabilities: exp(logp_new) / exp(logp_old) is 0 / 0
at log-probabilities of -800. logp_old and adv are constants of the surrogate: detached, so no
gradient reaches them.
"""

import torch


def gae(rewards, values, dones, last_value, gamma, lam):
    """Advantages (T,) from rewards, values, dones (T,) and the value after the last step."""
    not_done = 1.0 - dones.to(values.dtype)
    next_values = torch.cat([values[1:], torch.as_tensor(last_value, dtype=values.dtype, device=values.device).reshape(1)])
    deltas = rewards + gamma * next_values * not_done - values
    advantages = torch.zeros_like(values)
    running = torch.zeros((), dtype=values.dtype, device=values.device)
    for t in reversed(range(values.shape[0])):
        running = deltas[t] + gamma * lam * not_done[t] * running
        advantages[t] = running
    return advantages


def ppo_clip_loss(logp_new, logp_old, adv, clip):
    """PPO's clipped surrogate, as a 0-d loss to minimise; gradient to logp_new only."""
    logp_old, adv = logp_old.detach(), adv.detach()
    ratio = torch.exp(logp_new - logp_old)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - clip, 1 + clip) * adv
    return -torch.min(unclipped, clipped).mean()
