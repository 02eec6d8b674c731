"""Checks for `gae-ppo`: generalised advantage estimation and PPO's clipped surrogate loss, in torch.

Expected values are computed here from the inputs' values, in float64, never by the reference: the GAE
recursion read straight from the contract and its two limits by their own definitions (lam = 0: the TD
errors; lam = 1: the discounted return to the episode's end, minus the value), the loss, and its gradient
with respect to logp_new in closed form (-r adv / N where the clip does not bind, 0 where it does).
A wrong result is compared with what each known mistake gives on the same inputs.
"""

import math

import numpy as np
import torch

from mlprep.grading import (Call, as_float, assert_close, assert_keeps_precision, assert_returns_like, assert_shape, check, dtype_name, explained, fail,
                            gradcheck_float64, grid, inputs_unchanged, invariance_probe, lists_of, literal, mistake_hint, on_input, scenario,
                            shrink_on_failure, sized)

DEVICES = ("cpu", "cuda")
TOL = {torch.float64: (1e-10, 1e-10), torch.float32: (1e-5, 5e-5)}
GRAD_ATOL = 1e-12  # a gradient that must be zero where the clip binds


# GAE: the contract's recursion and the known mistakes (judge side, Python floats)
def _floats(t):
    return [float(x) for x in t.detach().cpu().double().reshape(-1).tolist()]


def gae_variant(rewards, values, dones, last_value, gamma, lam, mistake=None):
    """Advantages as a list of floats; `mistake` (a key of GAE_MISTAKES) changes one thing."""
    T = len(values)
    d = [1.0 if x else 0.0 for x in dones]
    if mistake == "next_step_flag":  # CleanRL's layout read as if it were this one
        d = d[1:] + [0.0]
    stop_delta = [0.0 if mistake in ("bootstrap_through_done", "no_done_mask") else x for x in d]
    stop_trace = [0.0 if mistake in ("recursion_crosses_done", "no_done_mask") else x for x in d]
    nxt = values[1:] + [0.0 if mistake == "last_value_ignored" else last_value]
    decay = lam if mistake == "lam_without_gamma" else gamma * lam
    out, running = [0.0] * T, 0.0
    for t in reversed(range(T)):
        r = rewards[t] * (1 - d[t]) if mistake == "reward_masked" else rewards[t]
        delta = r + gamma * nxt[t] * (1 - stop_delta[t]) - values[t]
        running = delta + decay * (1 - stop_trace[t]) * running
        out[t] = running + values[t] if mistake == "returns" else running
    return out


GAE_MISTAKES = {
    "bootstrap_through_done": "bootstraps through the done: delta_t adds gamma * V_{t+1} even when the episode ended with step t,"
                              " a value of the next episode; multiply it by (1 - dones[t])",
    "recursion_crosses_done": "lets the recursion cross the done: A_t adds gamma * lam * A_{t+1} even when the episode ended with step t;"
                              " multiply that term by (1 - dones[t]) too",
    "no_done_mask": "ignores dones: both the bootstrap gamma * V_{t+1} and the trace gamma * lam * A_{t+1} cross episode boundaries",
    "next_step_flag": "reads the flag at the next step (dones[t + 1], the layout CleanRL and Stable-Baselines3 store); here dones[t] is"
                      " True when the episode ended with step t itself",
    "reward_masked": "masks the reward with (1 - dones[t]) too: the last step's reward belongs to its episode and always counts",
    "last_value_ignored": "drops last_value: the rollout's last step must bootstrap from V_T = last_value when dones[-1] is False",
    "lam_without_gamma": "decays the trace by lam alone; the factor is gamma * lam",
    "returns": "returns the returns A_t + V_t instead of the advantages A_t",
}


def likely_gae_mistake(got, args):
    if not all(map(math.isfinite, got)):
        return ""
    mistakes = [(text, lambda key=key: gae_variant(*args, mistake=key)) for key, text in GAE_MISTAKES.items()]
    return mistake_hint(got, mistakes, want=gae_variant(*args), rtol=1e-6, atol=1e-6, apart=(1e-9, 1e-9), say="Your advantages match code that {}.")


def td_errors(rewards, values, dones, last_value, gamma):
    nxt = values[1:] + [last_value]
    return [r + gamma * (0.0 if d else v1) - v for r, v, d, v1 in zip(rewards, values, dones, nxt)]


def mc_advantages(rewards, values, dones, last_value, gamma):
    """Discounted return from t to the end of its episode (+ gamma^k last_value if the rollout cuts it off), minus V_t."""
    T, out = len(values), []
    for t in range(T):
        ret, discount = 0.0, 1.0
        for s in range(t, T):
            ret += discount * rewards[s]
            discount *= gamma
            if dones[s]:
                break
        else:
            ret += discount * last_value
        out.append(ret - values[t])
    return out


# GAE: inputs and judging one call
def rollout(rewards, values, dones):
    return torch.tensor(rewards, dtype=torch.float64), torch.tensor(values, dtype=torch.float64), torch.tensor(dones).to(torch.bool)


def _sixteenths(x):
    return torch.from_numpy(np.round(16 * x) / 16)  # short, exactly representable inputs


def random_rollout(rng, T, done_rate, dtype=torch.float64, done_dtype=torch.bool):
    rewards = _sixteenths(rng.standard_normal(T)).to(dtype)
    values = _sixteenths(2.0 * rng.standard_normal(T)).to(dtype)
    return rewards, values, torch.from_numpy(rng.random(T) < done_rate).to(done_dtype)


def describe_rollout(rewards, dones, last_value, gamma, lam, device):
    ended = [i for i, x in enumerate(_floats(dones)) if x]
    at = (f"dones True at {ended}" if len(ended) <= 6 else f"{len(ended)} dones") if ended else "no done"
    lv = f"last_value = {float(last_value):g} ({'0-d tensor' if isinstance(last_value, torch.Tensor) else 'float'})"
    return f"T = {rewards.numel()}, {dtype_name(rewards.dtype)}, dones {dtype_name(dones.dtype)}, {at}, {lv}, gamma = {gamma:g}, lam = {lam:g}, {device}"


def judge_gae(sub, rewards, values, dones, last_value, gamma, lam, want=None, what="gae()'s advantages", extra=""):
    scenario = describe_rollout(rewards, dones, last_value, gamma, lam, sub.device) + extra
    got = inputs_unchanged(sub, "gae", rewards, values, dones, last_value, gamma, lam, scenario=scenario)
    assert_returns_like(got, values, what="gae()'s advantages", scenario=scenario, device=sub.device)
    assert_shape(got, tuple(values.shape), what="gae()'s advantages", scenario=scenario)
    assert_keeps_precision(got, values.dtype, what="gae()'s advantages", scenario=scenario)
    args = (_floats(rewards), _floats(values), [bool(x) for x in _floats(dones)], float(last_value), gamma, lam)
    rtol, atol = TOL[values.dtype]
    with explained(lambda: likely_gae_mistake(_floats(got), args)):
        assert_close(got, torch.tensor(gae_variant(*args) if want is None else want, dtype=torch.float64), what=what, scenario=scenario, rtol=rtol, atol=atol)


def small_rollouts():
    from hypothesis import strategies as st

    half = grid(-4, 4, 2)
    return sized((1, 6), then=lambda T: st.tuples(lists_of(half, T), lists_of(half, T), lists_of(st.booleans(), T), half, st.sampled_from([0.5, 0.9, 1.0]),
                                                  st.sampled_from([0.0, 0.5, 0.95, 1.0])))


# PPO: the loss, its gradient and the known mistakes (judge side, float64)
def _arrays(*tensors):
    return [t.detach().cpu().double().numpy() for t in tensors]


def ppo_variant(logp_new, logp_old, adv, clip, mistake=None):
    new, old, a = _arrays(logp_new, logp_old, adv)
    with np.errstate(all="ignore"):
        r = np.exp(old - new) if mistake == "inverted_ratio" else np.exp(new - old)
        if mistake == "ratio_of_probabilities":
            r = np.exp(new) / np.exp(old)
        elif mistake == "batch_max_shift":
            top = max(new.max(), old.max())
            r = np.exp(new - top) / np.exp(old - top)
        if mistake and mistake.startswith("normalised"):
            a = (a - a.mean()) / (a.std(ddof=1 if mistake == "normalised_unbiased" else 0) + 1e-8) if a.size > 1 else a - a.mean()
        clipped = np.clip(r * a, 1 - clip, 1 + clip) if mistake == "clipped_product" else np.clip(r, 1 - clip, 1 + clip) * a
        if mistake == "log_ratio_clamped":
            clipped = np.exp(np.clip(new - old, -clip, clip)) * a
        pick = np.maximum if mistake == "max_for_min" else np.minimum
        terms = pick(r * a, clipped)
        value = terms.sum() if mistake == "sum" else terms.mean()
    return float(value if mistake == "sign" else -value)


PPO_MISTAKES = {
    "sign": "returns the surrogate objective mean(min(...)) itself; the loss to minimise is its negative",
    "max_for_min": "takes the max of the two terms; PPO's pessimistic bound is their min",
    "clipped_product": "clips the product r * adv to [1 - clip, 1 + clip]; it is the ratio r that is clipped, then multiplied by adv",
    "sum": "sums over the samples; the loss is a mean",
    "normalised": "normalises the advantages ((adv - mean) / std); they are used as given",
    "normalised_unbiased": "normalises the advantages ((adv - mean) / std); they are used as given",
    "inverted_ratio": "inverts the ratio: exp(logp_old - logp_new); r = exp(logp_new - logp_old) = pi_new / pi_old",
    "log_ratio_clamped": "clamps the log-ratio to [-clip, clip], a range of [e^-clip, e^clip] for r; the ratio itself is clamped to [1 - clip, 1 + clip]",
}


def likely_ppo_mistake(value, args):
    mistakes = [(text, lambda key=key: ppo_variant(*args, mistake=key)) for key, text in PPO_MISTAKES.items()]
    return mistake_hint(value, mistakes, want=ppo_variant(*args), rtol=1e-6, atol=1e-9, apart=(1e-9, 1e-12), say="Your loss matches code that {}.")


def nonfinite_hint(value, args):
    """A non-finite loss explained only when a ratio of probabilities gives that very value here (0 / 0: NaN)."""
    new, old = _arrays(*args[:2])
    low, span = min(new.min(), old.min()), max(new.max(), old.max()) - min(new.min(), old.min())
    mistakes = {f"A ratio of probabilities exp(logp_new) / exp(logp_old) gives this result: exp() of log-probabilities as low as {low:g} underflows to 0,"
                " and 0 / 0 is NaN.": lambda: ppo_variant(*args, mistake="ratio_of_probabilities"),
                "A ratio of probabilities shifted by one max m of the whole batch, exp(logp_new - m) / exp(logp_old - m), gives this result: these"
                f" log-probabilities span {span:g}, and exp() still underflows to 0 far below m.": lambda: ppo_variant(*args, mistake="batch_max_shift")}
    return mistake_hint(value, mistakes, want=ppo_variant(*args), equal_nan=True, join=" ",
                        say="{} Take the ratio from the difference of each sample's own log-probabilities: r = exp(logp_new - logp_old).")


def expected_grad(logp_new, logp_old, adv, clip):
    """d(loss)/d(logp_new): -r adv / N where the unclipped term counts, 0 where the clip binds."""
    new, old, a = _arrays(logp_new, logp_old, adv)
    r = np.exp(new - old)
    binds = ((a > 0) & (r > 1 + clip)) | ((a < 0) & (r < 1 - clip))
    return np.where(binds, 0.0, -r * a / a.size), binds


def batch(log_ratios, logp_old, adv, dtype=torch.float64):
    old = torch.tensor(logp_old, dtype=dtype)
    return old + torch.tensor(log_ratios, dtype=dtype), old, torch.tensor(adv, dtype=dtype)


def random_batch(rng, N, clip, dtype=torch.float64):
    """Log-ratios N(0, 0.3) in multiples of 1/64, kept 1e-3 away from log(1 +- clip); log-probs around -1.5 and
    advantages N(0.3, 1.5), in multiples of 1/16."""
    log_r = np.round(64 * 0.3 * rng.standard_normal(N)) / 64
    for edge in (math.log(1 + clip), math.log(1 - clip)):
        near = np.abs(log_r - edge) < 1e-3
        log_r[near] = edge + np.where(log_r[near] >= edge, 2e-3, -2e-3)
    old = np.round(16 * (-1.5 + 0.5 * rng.standard_normal(N))) / 16
    adv = np.round(16 * (0.3 + 1.5 * rng.standard_normal(N))) / 16
    return batch(log_r.tolist(), old.tolist(), adv.tolist(), dtype)


def describe_batch(logp_new, clip, device, extra=""):
    return f"N = {logp_new.numel()}, {dtype_name(logp_new.dtype)}, clip = {clip:g}{extra}, {device}"


def judge_loss(sub, logp_new, logp_old, adv, clip, extra=""):
    scenario = describe_batch(logp_new, clip, sub.device, extra)
    got = inputs_unchanged(sub, "ppo_clip_loss", logp_new, logp_old, adv, clip, scenario=scenario)
    assert_returns_like(got, logp_new, what="ppo_clip_loss()'s result", scenario=scenario, device=sub.device)
    if tuple(got.shape) != ():
        fail(f"ppo_clip_loss()'s result ({scenario}): expected a 0-d tensor (one scalar loss), got shape {tuple(got.shape)}; reduce with .mean().")
    assert_keeps_precision(got, logp_new.dtype, what="ppo_clip_loss()'s result", scenario=scenario)
    value = as_float(got, what="ppo_clip_loss()'s result", scenario=scenario)
    args = (logp_new, logp_old, adv, clip)
    rtol, atol = TOL[logp_new.dtype]
    with explained(lambda: likely_ppo_mistake(value, args) if math.isfinite(value) else nonfinite_hint(value, args)):
        assert_close(value, ppo_variant(*args), what="ppo_clip_loss()'s result", scenario=scenario, rtol=rtol, atol=atol)


def _grads_repro(interface, logp_new, logp_old, adv, clip, track_all):
    names = ("logp_new", "logp_old", "adv")
    tracked = names if track_all else names[:1]
    lines = [f"{name} = {literal(value)}" + (".requires_grad_()" if name in tracked else "") for name, value in zip(names, (logp_new, logp_old, adv))]
    lines.append(f"loss = ppo_clip_loss(logp_new, logp_old, adv, {clip!r})")
    lines.append(f"torch.autograd.grad(loss, [{', '.join(tracked)}], allow_unused=True)  # d(loss)/d({', '.join(tracked)})")
    return Call.code("\n".join(lines))


@scenario(repro=_grads_repro)
def loss_grads(module, logp_new, logp_old, adv, clip, track_all=False):
    """Scenario: the loss and its gradients by autograd with respect to logp_new (and, with track_all, to logp_old
    and adv too, which then require grad as if they came out of a graph); an input the loss does not reach: None."""
    inputs = [logp_new.clone().requires_grad_(True), logp_old.clone().requires_grad_(track_all), adv.clone().requires_grad_(track_all)]
    loss = module.ppo_clip_loss(*inputs, clip)
    if not isinstance(loss, torch.Tensor) or not loss.requires_grad:
        return {"connected": False}
    grads = torch.autograd.grad(loss.sum(), [x for x in inputs if x.requires_grad], allow_unused=True)
    return {"connected": True, "grads": [None if g is None else g.detach() for g in grads]}


def learner_grads(sub, logp_new, logp_old, adv, clip, scenario, track_all=False):
    got = sub.run(loss_grads, logp_new, logp_old, adv, clip, track_all)
    if not got.get("connected"):
        fail(f"ppo_clip_loss() ({scenario}): the loss is not connected to logp_new in autograd, so no gradient reaches the policy; compute it"
             " with torch operations (no .item(), .detach() of logp_new, NumPy or torch.no_grad()).")
    return got["grads"]


def logp_new_grad(sub, logp_new, logp_old, adv, clip, scenario):
    grad = learner_grads(sub, logp_new, logp_old, adv, clip, scenario)[0]
    if grad is None:
        fail(f"d(loss)/d(logp_new) of ppo_clip_loss() ({scenario}): no gradient reached logp_new.")
    return grad


def small_batches():
    from hypothesis import strategies as st

    ratio = st.sampled_from([-0.5, -0.25, -0.1, 0.0, 0.1, 0.25, 0.5])
    old = st.sampled_from([-2.0, -1.0, -0.5])
    return sized((1, 5), then=lambda N: st.tuples(lists_of(ratio, N), lists_of(old, N), lists_of(grid(-4, 4, 2), N)))


# Checks: gae
HAND = [([1.0, 0.5, -1.0], [0.5, 1.0, 0.25], [False, False, False], 2.0),
        ([1.0, 2.0, 0.5, -0.5, 1.5], [0.5, -0.25, 1.0, 0.75, 2.0], [False, True, False, False, True], 3.0),
        ([0.5, 1.0, -1.0, 2.0, 0.25, 1.0], [1.5, 0.5, 0.25, -1.0, 0.5, 1.0], [False, False, True, False, False, False], -2.0)]


@check("lam = 0 gives the TD errors r_t + gamma V_{t+1} (1 - done_t) - V_t", devices=DEVICES, uses=("gae",))
def lam_zero_td_error(sub, ctx):
    for rewards, values, dones, last_value in HAND:
        judge_gae(sub, *rollout(rewards, values, dones), last_value, 0.9, 0.0, want=td_errors(rewards, values, dones, last_value, 0.9),
                  what="gae()'s advantages at lam = 0 (the TD errors)")


@check("lam = 1 gives the discounted return to the episode's end minus the value", devices=DEVICES, uses=("gae",))
def lam_one_mc_return(sub, ctx):
    for rewards, values, dones, last_value in HAND:
        judge_gae(sub, *rollout(rewards, values, dones), last_value, 0.5, 1.0, want=mc_advantages(rewards, values, dones, last_value, 0.5),
                  what="gae()'s advantages at lam = 1 (return minus value)")


@check("no bootstrap across a done: what comes after the episode's last step never reaches its advantages", devices=DEVICES, uses=("gae",))
def no_bootstrap_across_done(sub, ctx):
    # The episode ends with step 2: rewards and values of steps 3.., and last_value, belong to the next one.
    rewards, values, dones = rollout([1.0, 0.5, 2.0, -1.0, 0.5, 1.0], [0.5, 1.0, 1.5, 4.0, -2.0, 0.75], [False, False, True, False, False, False])
    changed = rollout([1.0, 0.5, 2.0, 3.0, -2.5, 0.25], [0.5, 1.0, 1.5, -8.0, 6.0, 2.5], [False, False, True, False, False, False])
    scenario = describe_rollout(rewards, dones, 1.0, 0.9, 0.95, sub.device) + "; rewards[3:], values[3:] and last_value changed (1.0 -> 5.0)"
    judge_gae(sub, rewards, values, dones, 1.0, 0.9, 0.95)  # first: what gae returns is a tensor of advantages, so the probe's hint can only be about the done
    invariance_probe(sub, "gae", [rewards, values, dones, 1.0, 0.9, 0.95], [*changed, 5.0, 0.9, 0.95], what="advantages of steps 0..2",
                     scenario=scenario, shape=(6,), graded=lambda out: out[:3],
                     hint="The episode ended with step 2, so A_0..A_2 may use nothing after it: multiply both the bootstrap gamma * V_{t+1} and"
                          " the trace gamma * lam * A_{t+1} by (1 - dones[t])")
    # An episode that ends with the rollout's last step does not use last_value at all.
    r, v, d = rollout([1.0, -0.5, 2.0], [0.25, 0.5, 1.0], [False, False, True])
    invariance_probe(sub, "gae", [r, v, d, 1.0, 0.9, 0.95], [r, v, d, -7.0, 0.9, 0.95], what="advantages", shape=(3,),
                     scenario=describe_rollout(r, d, 1.0, 0.9, 0.95, sub.device) + "; last_value changed (1.0 -> -7.0)",
                     hint="dones[-1] is True: the episode ended with the last step, so V_T = last_value (of the next episode) is not used")


@check("a rollout cut off mid-episode bootstraps its last step from last_value", devices=DEVICES, uses=("gae",))
def bootstrap_last_value(sub, ctx):
    r, v, d = rollout([0.5, 1.0, -0.5, 1.0], [1.0, 0.5, 0.25, 2.0], [False, True, False, False])
    for last_value in (4.0, torch.tensor(4.0, dtype=torch.float64), -3.0):
        judge_gae(sub, r, v, d, last_value, 0.9, 0.5)


@check("matches the GAE recursion on random rollouts (float64, within 1e-10)", devices=DEVICES, uses=("gae",))
def random_rollouts(sub, ctx):
    rng = ctx.rng(1)
    with shrink_on_failure(sub, small_rollouts, lambda case: judge_gae(sub, *rollout(*case[:3]), *case[3:])):
        for T, done_rate, gamma, lam in ((5, 0.3, 0.9, 0.5), (64, 0.1, 0.99, 0.95), (1000, 0.02, 0.99, 0.95), (300, 0.05, 1.0, 0.9)):
            rewards, values, dones = random_rollout(rng, T, done_rate)
            judge_gae(sub, rewards, values, dones, round(float(rng.standard_normal()) * 16) / 16, gamma, lam)


@check("dones as bool, int or float 0/1, last_value as a float or a 0-d tensor: the same advantages", devices=DEVICES, uses=("gae",),
       edge="`dones`: (T,) tensor of bool, int 0/1 or float 0/1, on the same device.")
def input_kinds(sub, ctx):
    rewards, values, dones = rollout(*HAND[1][:3])
    for done_dtype in (torch.bool, torch.int64, torch.float64):
        for last_value in (3.0, torch.tensor(3.0, dtype=torch.float64)):
            judge_gae(sub, rewards, values, dones.to(done_dtype), last_value, 0.9, 0.95)


@check("float32 rollouts at float32 tolerance; float64 kept; a (T,) tensor on the input's device", devices=DEVICES, uses=("gae",))
def gae_dtypes(sub, ctx):
    rng = ctx.rng(2)
    for dtype, done_dtype in ((torch.float32, torch.bool), (torch.float32, torch.float32), (torch.float64, torch.int64)):
        rewards, values, dones = random_rollout(rng, 200, 0.05, dtype=dtype, done_dtype=done_dtype)
        last_value = torch.tensor(round(float(rng.standard_normal()) * 16) / 16, dtype=dtype)
        judge_gae(sub, rewards, values, dones, last_value, 0.99, 0.95)


# Checks: ppo_clip_loss
@check("matches -mean(min(r adv, clamp(r, 1 - clip, 1 + clip) adv)) on small batches", devices=DEVICES, uses=("ppo_clip_loss",))
def small_losses(sub, ctx):
    cases = [([0.1], [-1.0], [2.0], 0.2), ([0.5, -0.5], [-1.0, -2.0], [1.0, 1.0], 0.2), ([0.5, -0.5, 0.1, -0.1], [-1.0, -0.5, -2.0, -1.5], [-1.5, -1.0, 2.0, 0.5], 0.2),
             ([0.25, -0.75, 1.0, -0.05, 0.0], [-0.5, -1.0, -3.0, -1.0, -2.0], [2.5, -2.0, -0.5, 3.0, 1.0], 0.1)]
    for log_r, old, adv, clip in cases:
        judge_loss(sub, *batch(log_r, old, adv), clip)


@check("a loss to minimise: at logp_new = logp_old it is -mean(adv), and its gradient lowers it by raising good actions", devices=DEVICES,
       uses=("ppo_clip_loss",))
def loss_to_minimise(sub, ctx):
    logp_new, logp_old, adv = batch([0.0, 0.0, 0.0, 0.0], [-1.0, -0.5, -2.0, -1.5], [2.0, -1.0, 0.5, 1.5])
    scenario = describe_batch(logp_new, 0.2, sub.device, ", r = 1 everywhere")
    judge_loss(sub, logp_new, logp_old, adv, 0.2, ", r = 1 everywhere")
    with on_input(_grads_repro(ctx.interface, logp_new, logp_old, adv, 0.2, False)):
        grad = logp_new_grad(sub, logp_new, logp_old, adv, 0.2, scenario)
        assert_close(grad, torch.tensor([-0.5, 0.25, -0.125, -0.375], dtype=torch.float64), what="d(loss)/d(logp_new) of ppo_clip_loss()",
                     scenario=scenario, hint="At r = 1 the gradient is -adv / N: a descent step raises logp_new where adv > 0 (good actions)"
                     " and lowers it where adv < 0")


@check("zero gradient where the clip binds, -r adv / N where it does not", devices=DEVICES, uses=("ppo_clip_loss",))
def clip_gradient(sub, ctx):
    # Each sign of adv with r below, inside and above [1 - clip, 1 + clip] (clip = 0.2): r = e^-0.5, e^0.1, e^0.5.
    log_r = [0.5, -0.5, 0.1, 0.5, -0.5, -0.1]
    logp_new, logp_old, adv = batch(log_r, [-1.0, -2.0, -0.5, -1.5, -1.0, -3.0], [1.0, -2.0, 1.5, -1.0, 2.0, -0.5])
    want, binds = expected_grad(logp_new, logp_old, adv, 0.2)
    scenario = describe_batch(logp_new, 0.2, sub.device, ", r = exp(logp_new - logp_old) = e^" + str(log_r))
    judge_loss(sub, logp_new, logp_old, adv, 0.2, ", r below, inside and above the clip range, both signs of adv")
    with on_input(_grads_repro(ctx.interface, logp_new, logp_old, adv, 0.2, False)):
        grad = logp_new_grad(sub, logp_new, logp_old, adv, 0.2, scenario)
        got = _arrays(grad)[0] if isinstance(grad, torch.Tensor) else None
        if got is not None and got.shape == want.shape:
            for i in np.flatnonzero(binds):
                if abs(got[i]) > GRAD_ATOL:
                    fail(f"d(loss)/d(logp_new)[{i}] of ppo_clip_loss() ({scenario}): expected 0, got {got[i]:.6g}; there adv = {float(adv[i]):g} and"
                         f" r = {math.exp(log_r[i]):.6g} is {'above 1 + clip' if adv[i] > 0 else 'below 1 - clip'}, so the clipped term"
                         " (constant in logp_new) is the min and the sample sends no gradient: that is what stops the policy moving too far.",
                         what="d(loss)/d(logp_new)", first_index=f"({i},)", expected="0", got=f"{got[i]:.6g}")
        assert_close(grad, torch.tensor(want), what="d(loss)/d(logp_new) of ppo_clip_loss()", scenario=scenario,
                     hint="Where the clip does not bind (r inside the range, or on the side the min keeps unclipped) the gradient is -r * adv / N")


@check("log-probabilities near -800 (float64): the ratio comes from their difference", devices=DEVICES, uses=("ppo_clip_loss",))
def tiny_probabilities(sub, ctx):
    for offset in (-800.0, -750.0):
        logp_new, logp_old, adv = batch([0.1, -0.3, 0.5, -0.05], [offset, offset - 0.5, offset + 0.25, offset - 1.0], [1.0, -0.5, 2.0, 1.5])
        judge_loss(sub, logp_new, logp_old, adv, 0.2, f", log-probabilities near {offset:g}")
    scenario = describe_batch(logp_new, 0.2, sub.device, ", log-probabilities near -750")
    gradcheck_float64(sub, ctx, "ppo_clip_loss", [logp_new, logp_old, adv, 0.2], [0], scenario=scenario)
    # One batch from -1 to -800: no shift shared by the batch keeps every exp() away from 0.
    judge_loss(sub, *batch([0.1, -0.3, 0.5, -0.05], [-1.0, -800.0, -3.0, -750.5], [1.0, -0.5, 2.0, 1.5]), 0.2, ", log-probabilities from -1 to -800 in one batch")


@check("no gradient reaches logp_old or adv (they are constants of the surrogate)", devices=DEVICES, uses=("ppo_clip_loss",))
def constants_detached(sub, ctx):
    logp_new, logp_old, adv = batch([0.1, -0.5, 0.3], [-1.0, -2.0, -0.5], [1.5, -1.0, 0.5])
    scenario = describe_batch(logp_new, 0.2, sub.device, ", logp_old and adv require grad")
    with on_input(_grads_repro(ctx.interface, logp_new, logp_old, adv, 0.2, True)):
        grads = learner_grads(sub, logp_new, logp_old, adv, 0.2, scenario, track_all=True)
        for name, grad in zip(("logp_old", "adv"), grads[1:]):
            if grad is not None and bool((grad != 0).any()):
                fail(f"ppo_clip_loss() ({scenario}): a gradient reached {name} (d(loss)/d({name}) = {literal(grad)}); logp_old and adv are"
                     " constants of PPO's surrogate (the old policy's log-probabilities, the critic's advantages): detach them, or a"
                     " backward pass would push the loss into whatever graph they came from.", what=f"d(loss)/d({name})", first_index="",
                     expected="None or 0", got="nonzero")


@check("matches on random batches, float64 within 1e-10 and float32; gradient with respect to logp_new in float64", devices=DEVICES,
       uses=("ppo_clip_loss",))
def random_losses(sub, ctx):
    rng = ctx.rng(3)
    with shrink_on_failure(sub, small_batches, lambda case: judge_loss(sub, *batch(*case), 0.2)):
        for N, clip, dtype in ((7, 0.2, torch.float64), (64, 0.1, torch.float64), (1000, 0.3, torch.float64), (500, 0.2, torch.float32)):
            judge_loss(sub, *random_batch(rng, N, clip, dtype), clip)
    for N, clip in ((5, 0.2), (40, 0.1)):
        logp_new, logp_old, adv = random_batch(rng, N, clip)
        gradcheck_float64(sub, ctx, "ppo_clip_loss", [logp_new, logp_old, adv, clip], [0], scenario=describe_batch(logp_new, clip, sub.device))
