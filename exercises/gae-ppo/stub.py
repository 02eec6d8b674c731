"""GAE and PPO's clipped surrogate loss (torch). Fill in gae and ppo_clip_loss; run `mlprep grade gae-ppo` to grade them."""

import torch  # noqa: F401 -- your implementation will need it


def gae(rewards, values, dones, last_value, gamma, lam):
    """Generalised advantage estimates for one rollout of T steps.

    rewards, values: (T,) float tensors (float32 or float64) on one device; values[t] = V(s_t).
    dones: (T,) tensor of bool or 0/1 (int or float); dones[t] is True when the episode ended with
    step t, so A_t uses no value (and no advantage) after t. last_value: a float or a 0-d tensor,
    V of the state after the last step, used only when dones[-1] is False.
        delta_t = rewards[t] + gamma * V_{t+1} * (1 - dones[t]) - values[t]     (V_T = last_value)
        A_t     = delta_t + gamma * lam * (1 - dones[t]) * A_{t+1}             (A_T = 0)
    Returns the (T,) advantages only, a tensor of values' dtype on its device. Inputs unchanged.
    """
    raise NotImplementedError("gae: run the recursion backwards from the last step, stopping at every done")


def ppo_clip_loss(logp_new, logp_old, adv, clip):
    """PPO's clipped surrogate as a loss to minimise.

    logp_new, logp_old, adv: (N,) float tensors of one dtype and device (log-probabilities of the
    taken actions under the current and the old policy, and their advantages); clip in (0, 1).
        r = exp(logp_new - logp_old)
        loss = -mean(min(r * adv, clamp(r, 1 - clip, 1 + clip) * adv))
    Returns a 0-d tensor, differentiable with respect to logp_new; no gradient reaches logp_old or
    adv (detach them), and adv is used as given (not normalised). Inputs unchanged.
    """
    raise NotImplementedError("ppo_clip_loss: the ratio from the log-probabilities, clipped, the pessimistic min, negated")
