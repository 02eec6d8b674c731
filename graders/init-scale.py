"""Checks for `init-scale`. init_weights is graded by the statistics of its values, never one by one: each config
draws at least 2**18 values, so a normal distribution's sample variance is within 0.28% (1 sd) of the true one, and
the contract's 5% is 18 sd away (9 sd for tails as heavy as a Student t with 5 degrees of freedom); the mean is held
to 6 sd. Depth: over 750 simulated He nets (normal, uniform and Laplace weights) one net's variance wanders from its
first layer's by 1.56x on average at its worst layer (worst seen 3.2x), the geometric mean of 8 by 1.17x (worst seen
1.43x): the 2x bound is 7 sd away. forward_stats' single net: over 3,000 more, 0.23% went past 3x and none past 4x
(past 5x is a 4.5 sd event); its first layer stayed within 5% of theory over 2000 simulated nets (the bound is 10%).
Xavier's geometric mean falls by about 2**-19 over 20 layers; "collapses" is held to below 1/100."""

import math
import random
import sys

import numpy as np

from mlprep.grading import (Call, GraderDefect, assert_equal, check, describe_value, expect_raises, fail, inputs_unchanged, matching_mistakes, mistake_hint,
                            on_input, outcome, same_values, scenario)

SAMPLES = 2**18
VAR_RTOL = 0.05  # the contract's "within 5%"
MEAN_SDS = 6.0
WIDTH, DEPTH, NETS, BATCH_ROWS, BATCH_SEED = 512, 20, 8, 256, 2024
NET_SEEDS = list(range(100, 100 + NETS))
RELU_VAR = 0.5 - 1 / (2 * math.pi)  # Var(relu(z)) / Var(z) for a zero-mean normal z
LAYER1_RTOL = 0.10
INIT = ("init_weights",)
STATS = ("forward_stats",)


def target_variance(fan_in, fan_out, scheme):
    return 2.0 / fan_in if scheme == "he" else 2.0 / (fan_in + fan_out)


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox) and their rendering as code
# ---------------------------------------------------------------------------------------------
def _as_array(w):
    try:
        return np.asarray(w)
    except (TypeError, ValueError):
        return None


def _floats(value, what):
    """A result as a float64 array, or a clean fail where it holds something other than numbers."""
    arr = _as_array(value)
    if arr is None or arr.dtype.kind not in "fiub":
        fail(f"{what}: expected numbers, got {describe_value(value)}")
    return arr.astype(np.float64)


def _bad(w, fan_in, fan_out):
    """{"bad": what init_weights returned instead of a (fan_in, fan_out) float array}, or None where w is one."""
    if w is None or w.shape != (fan_in, fan_out) or w.dtype.kind != "f":
        return {"bad": None if w is None else {"shape": list(w.shape), "dtype": w.dtype.name}}
    return None


def _draws_code(interface, fan_in, fan_out, scheme, seed, calls):
    return Call.code(f"rng = np.random.default_rng({seed})\n"
                     f"w = np.stack([init_weights({fan_in}, {fan_out}, {scheme!r}, rng) for _ in range({calls})])\n"
                     "w.mean(), w.var()")


@scenario(repro=_draws_code)
def draws(module, fan_in, fan_out, scheme, seed, calls):
    """Scenario: `calls` calls of init_weights with one generator; every value (float64), or the first bad result."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(calls):
        w = _as_array(module.init_weights(fan_in, fan_out, scheme, rng))
        if bad := _bad(w, fan_in, fan_out):
            return bad
        values.append(w.astype(np.float64).ravel())
    return {"values": np.concatenate(values)}


@scenario(repro=lambda interface, fan_in, fan_out, scheme, seed: Call.code(
    f"init_weights({fan_in}, {fan_out}, {scheme!r}, np.random.default_rng({seed}))"))
def init_call(module, fan_in, fan_out, scheme, seed):
    """Scenario: one call of init_weights with a fresh generator (a Generator cannot cross to the sandbox: it is made there)."""
    return module.init_weights(fan_in, fan_out, scheme, np.random.default_rng(seed))


def _seeds_code(interface, fan_in, fan_out, scheme, seed, global_seed):
    return Call.code(f"import random\nnp.random.seed({global_seed}); random.seed({global_seed}); torch.manual_seed({global_seed})  # the global RNGs\n"
                     f"rng = np.random.default_rng({seed})\n"
                     f"first = init_weights({fan_in}, {fan_out}, {scheme!r}, rng)\n"
                     f"second = init_weights({fan_in}, {fan_out}, {scheme!r}, rng)\n"
                     "first, second")


def _global_seeds_code(fan_in, fan_out, scheme):
    lines = []
    for name, g in (("a", 1), ("b", 2)):
        lines += [f"np.random.seed({g}); random.seed({g}); torch.manual_seed({g})  # only the global RNGs differ",
                  f"{name} = init_weights({fan_in}, {fan_out}, {scheme!r}, np.random.default_rng(0))"]
    return Call.code("\n".join(["import random", *lines, "a, b  # must be equal"]))


def _seed_globals(global_seed):
    np.random.seed(global_seed)
    random.seed(global_seed)
    torch = sys.modules.get("torch")  # seeded where the learner's code has imported it (importing it here costs a second)
    if torch is not None:
        torch.manual_seed(global_seed)


@scenario(repro=_seeds_code)
def two_calls(module, fan_in, fan_out, scheme, seed, global_seed):
    """Scenario: the global RNGs (NumPy's, Python's, torch's) seeded with global_seed, then two calls with one generator."""
    _seed_globals(global_seed)
    rng = np.random.default_rng(seed)
    return [module.init_weights(fan_in, fan_out, scheme, rng), module.init_weights(fan_in, fan_out, scheme, rng)]


def _nets_code(interface, scheme, seeds):
    return Call.code("\n".join([
        f"X = np.random.default_rng({BATCH_SEED}).standard_normal(({BATCH_ROWS}, {WIDTH}))  # the grader's fixed batch",
        "variances = []",
        f"for seed in {seeds!r}:",
        "    rng, h, v = np.random.default_rng(seed), X, []",
        f"    for layer in range({DEPTH}):",
        f"        h = np.maximum(h @ init_weights({WIDTH}, {WIDTH}, {scheme!r}, rng), 0.0)",
        "        v.append(h.var())",
        "    variances.append(v)",
        f"gm = np.exp(np.log(variances).mean(axis=0))  # per layer, the geometric mean over the {len(seeds)} nets",
        "gm / gm[0]"]))


@scenario(repro=_nets_code)
def deep_nets(module, scheme, seeds):
    """Scenario: per seed, a bias-free ReLU net of DEPTH layers of width WIDTH from init_weights on the fixed batch;
    the post-ReLU variance of every layer (np.var of the whole batch x width output)."""
    X = np.random.default_rng(BATCH_SEED).standard_normal((BATCH_ROWS, WIDTH))
    out = []
    for seed in seeds:
        rng, h, variances = np.random.default_rng(seed), X, []
        for _ in range(DEPTH):
            w = _as_array(module.init_weights(WIDTH, WIDTH, scheme, rng))
            if bad := _bad(w, WIDTH, WIDTH):
                return bad
            h = np.maximum(h @ w.astype(np.float64), 0.0)
            variances.append(float(h.var()))
        out.append(variances)
    return {"variances": out}


def _stats_code(interface, sizes, scheme, global_seeds):
    lines = []
    for k, g in enumerate(global_seeds, start=1):
        lines += [f"np.random.seed({g}); random.seed({g}); torch.manual_seed({g})", f"v{k} = forward_stats({sizes!r}, {scheme!r})"]
    return Call.code("\n".join(["import random", *lines, ", ".join(f"v{k}" for k in range(1, len(global_seeds) + 1)) + "  # must be equal"]))


@scenario(repro=_stats_code)
def stats_under_global_seeds(module, sizes, scheme, global_seeds):
    """Scenario: forward_stats once per global seed (NumPy's, Python's and torch's global RNGs seeded with it)."""
    results = []
    for g in global_seeds:
        _seed_globals(g)
        results.append(module.forward_stats(list(sizes), scheme))
    return results


# ---------------------------------------------------------------------------------------------
# Reading results
# ---------------------------------------------------------------------------------------------
def _check_bad(result, fan_in, fan_out, what):
    if not result or "bad" not in result:
        return
    bad = result["bad"]
    if bad is None:
        fail(f"{what}: init_weights returned something that is not an array; return a NumPy array of shape ({fan_in}, {fan_out})")
    if tuple(bad["shape"]) != (fan_in, fan_out):
        transposed = tuple(bad["shape"]) == (fan_out, fan_in)
        fail(f"{what}: init_weights returned shape {tuple(bad['shape'])}, expected (fan_in, fan_out) = ({fan_in}, {fan_out})"
             + ("; that is the transpose: this exercise's layers compute h @ W, so W is (fan_in, fan_out) (torch's"
                " nn.Linear stores (out, in))" if transposed else ""))
    fail(f"{what}: init_weights returned dtype {bad['dtype']}; return floats (float64 or float32)")


def variance_mistakes(fan_in, fan_out, scheme):
    """(what the known mistake does, the variance it gives) for this config."""
    v = target_variance(fan_in, fan_out, scheme)
    mistakes = [
        ("the variance used as the standard deviation (std = 2 / fan_in instead of sqrt of it)" if scheme == "he" else
         "the variance used as the standard deviation (std = 2 / (fan_in + fan_out) instead of sqrt of it)", v * v),
        ("a uniform distribution with bound sqrt(variance): U(-b, b) has variance b**2 / 3, so the bound must be"
         " sqrt(3 * variance)", v / 3),
        ("the variance used as a uniform bound", v * v / 3),
    ]
    if scheme == "he":
        mistakes += [("fan_out in He's formula: He uses 2 / fan_in (it keeps the forward variance)", 2.0 / fan_out),
                     ("fan_in + fan_out in He's formula: that is Xavier's denominator; He uses 2 / fan_in", 2.0 / (fan_in + fan_out)),
                     ("1 / fan_in: He's formula has a 2 (ReLU halves the second moment)", 1.0 / fan_in)]
    else:
        mistakes += [("1 / (fan_in + fan_out): Xavier's formula is 2 / (fan_in + fan_out)", 1.0 / (fan_in + fan_out)),
                     ("He's 2 / fan_in for Xavier: Xavier averages the fans, 2 / (fan_in + fan_out)", 2.0 / fan_in),
                     ("1 / fan_in for Xavier (LeCun's): Xavier uses 2 / (fan_in + fan_out)", 1.0 / fan_in)]
    return [(text, value) for text, value in mistakes if abs(value / v - 1) > 2 * VAR_RTOL]


def mean_hint(values):
    """For values whose mean is off 0: the remedy, and where every value is >= 0, the likely source of that."""
    hint = "Draw from a distribution centred on 0: rng.standard_normal, or rng.uniform(-b, b)"
    return hint + ("; none of your values is negative, as with rng.random() (uniform on [0, 1))." if values.min() >= 0 else ".")


def check_distribution(sub, fan_in, fan_out, scheme, seed, calls):
    what = f'init_weights({fan_in}, {fan_out}, "{scheme}", rng), {calls} call{"s" if calls > 1 else ""} with one generator'
    result = sub.run(draws, fan_in, fan_out, scheme, seed, calls)
    _check_bad(result, fan_in, fan_out, what)
    w = result["values"]
    v = target_variance(fan_in, fan_out, scheme)
    formula = "2 / fan_in" if scheme == "he" else "2 / (fan_in + fan_out)"
    if not np.isfinite(w).all():
        fail(f"{what}: {int((~np.isfinite(w)).sum())} of {w.size} values are inf or NaN")
    mean, var = float(w.mean()), float(w.var())
    mean_bound = MEAN_SDS * math.sqrt(v / w.size)
    if abs(mean) > mean_bound:
        fail(f"{what}: the mean of the {w.size} values is {mean:.4g}; a zero-mean distribution with variance {v:.4g} gives a"
             f" sample mean within {mean_bound:.2g} ({MEAN_SDS:g} standard errors). {mean_hint(w)}", mean=mean, bound=mean_bound)
    ratio = var / v
    if abs(ratio - 1) > VAR_RTOL:
        hint = mistake_hint(var, variance_mistakes(fan_in, fan_out, scheme), rtol=VAR_RTOL, atol=0.0, join="; or ",
                            say=" Your variance is what this mistake gives: {}.")
        fail(f"{what}: the variance of the {w.size} values is {var:.4g}, expected {formula} = {v:.4g} within 5% (yours is"
             f" {ratio:.3g} times that).{hint}", variance=var, expected=v, ratio=ratio)


# ---------------------------------------------------------------------------------------------
# Checks: init_weights
# ---------------------------------------------------------------------------------------------
def _shape_ok(w, fan_in, fan_out, what):
    """w as a float64 array of shape (fan_in, fan_out) with finite values, or a clean fail."""
    arr = _as_array(w)
    _check_bad(_bad(arr, fan_in, fan_out), fan_in, fan_out, what)
    if not np.isfinite(arr).all():
        fail(f"{what}: the result holds inf or NaN")
    return arr.astype(np.float64)


@check("init_weights returns a (fan_in, fan_out) float array", uses=INIT)
def shapes(sub, ctx):
    for fan_in, fan_out in ((3, 5), (5, 3), (1, 7), (64, 16)):
        for scheme in ("he", "xavier", "zero"):
            _shape_ok(sub.run(init_call, fan_in, fan_out, scheme, 0), fan_in, fan_out, f'init_weights({fan_in}, {fan_out}, "{scheme}", rng)')


TRAIN_STEPS = 50
SAME_UNIT_ATOL = 1e-12  # weights of order 1 after training: rounding differences are ~1e-16
# (No contrast run from "he" weights: a correct discrete distribution, random signs say, can give two units of a
# 4-6-1 net identical weights by chance, and such units stay identical too.)


def train_two_layer(W1, W2, activation):
    """Full-batch gradient descent on a fixed regression task: h = act(X W1 + b1), y_hat = h W2 + b2, mean squared error."""
    X = np.array([[1.0, -0.5, 2.0, 0.0], [0.5, 1.5, -1.0, 1.0], [-1.0, 0.25, 0.5, -2.0], [2.0, -1.0, 0.0, 0.5],
                  [0.0, 2.0, 1.0, -1.0], [-0.5, -1.5, 1.5, 1.0], [1.5, 0.5, -0.5, -0.5], [-2.0, 1.0, -1.5, 0.25]])
    y = np.array([[1.0], [-0.5], [0.25], [2.0], [-1.0], [0.5], [1.5], [-2.0]])
    W1, W2, b1, b2 = W1.copy(), W2.copy(), np.zeros(W1.shape[1]), np.zeros(W2.shape[1])
    with np.errstate(all="ignore"):  # a learner's huge "zero" weights may overflow here; the check reports the weights themselves
        for _ in range(TRAIN_STEPS):
            W1, W2, b1, b2 = _gradient_step(X, y, W1, W2, b1, b2, activation)
    return W1, W2


def _gradient_step(X, y, W1, W2, b1, b2, activation):
    z = X @ W1 + b1
    h = 1 / (1 + np.exp(-z)) if activation == "sigmoid" else np.maximum(z, 0.0)
    d_out = 2 * (h @ W2 + b2 - y) / len(X)
    d_z = (d_out @ W2.T) * (h * (1 - h) if activation == "sigmoid" else (z > 0))
    lr = 0.5
    return W1 - lr * X.T @ d_z, W2 - lr * h.T @ d_out, b1 - lr * d_z.sum(axis=0), b2 - lr * d_out.sum(axis=0)


@check('"zero" gives zeros, and the hidden units of a net trained from it stay identical', uses=INIT)
def zero_symmetry(sub, ctx):
    W1 = _shape_ok(sub.run(init_call, 4, 6, "zero", 0), 4, 6, 'init_weights(4, 6, "zero", rng)')
    W2 = _shape_ok(sub.run(init_call, 6, 1, "zero", 1), 6, 1, 'init_weights(6, 1, "zero", rng)')
    # The symmetry demo, here in the judge: a 4-6-1 net trained by gradient descent from the learner's "zero" weights.
    sigmoid_W1, _ = train_two_layer(W1, W2, "sigmoid")
    relu_W1, _ = train_two_layer(W1, W2, "relu")
    # Identical units get identical updates up to rounding: BLAS may sum different columns in different orders.
    spread = float(np.ptp(sigmoid_W1, axis=1).max())
    identical = spread <= SAME_UNIT_ATOL
    for (fan_in, fan_out, seed), w in (((4, 6, 0), W1), ((6, 1, 1), W2)):
        if np.any(w != 0):
            demo = (f" With these weights the 6 hidden units of a 4-6-1 sigmoid net trained for {TRAIN_STEPS} gradient steps end up"
                    f" different (their incoming weights differ by up to {spread:.3g}); from exact zeros every unit computes the"
                    " same output and gets the same gradient, so they stay identical forever." if not identical else "")
            with on_input(init_call.repro(None, fan_in, fan_out, "zero", seed)):
                assert_equal(w, np.zeros((fan_in, fan_out)), what=f'init_weights({fan_in}, {fan_out}, "zero", rng)',
                             hint=f'"zero" returns exact zeros, np.zeros((fan_in, fan_out)).{demo}')
    if not identical or np.abs(relu_W1).max() != 0:
        raise GraderDefect("the symmetry demo failed on exact zeros")  # cannot happen: identical units get identical updates


@scenario(repro=lambda interface, scheme: Call.code(f"init_weights(3, 4, {scheme!r}, np.random.default_rng(0))  # must raise ValueError"))
def init_outcome(module, scheme):
    """What init_weights(3, 4, scheme, rng) does (a Generator cannot cross to the sandbox: it is made there)."""
    return outcome(lambda: module.init_weights(3, 4, scheme, np.random.default_rng(0)))


@check("an unknown scheme raises ValueError", uses=INIT, edge='Any other scheme (`"kaiming_uniform"`, `"He"`) raises `ValueError`.')
def unknown_scheme(sub, ctx):
    schemes = 'the schemes are "he", "xavier" and "zero" (lower case): anything else must raise ValueError'
    for scheme in ("kaiming_uniform", "He"):
        expect_raises(sub.run(init_outcome, scheme), what=f'init_weights(3, 4, "{scheme}", rng)', raised_hint=schemes,
                      returned_hint=schemes + ", not fall back to a default")


@check("he: zero mean, variance 2 / fan_in within 5%", uses=INIT)
def he_distribution(sub, ctx):
    for fan_in, fan_out, calls in ((20, 50, 263), (256, 1024, 1), (1024, 256, 1)):
        check_distribution(sub, fan_in, fan_out, "he", 10 + fan_in, calls)


@check("xavier: zero mean, variance 2 / (fan_in + fan_out) within 5%", uses=INIT)
def xavier_distribution(sub, ctx):
    for fan_in, fan_out, calls in ((20, 50, 263), (300, 100, 9), (64, 1000, 5)):
        check_distribution(sub, fan_in, fan_out, "xavier", 20 + fan_in, calls)


@check("all randomness comes from rng", uses=INIT)
def randomness_from_rng(sub, ctx):
    for scheme in ("he", "xavier"):
        runs = {}
        for seed, global_seed in ((0, 1), (0, 2), (1, 1)):
            result = sub.run(two_calls, 3, 4, scheme, seed, global_seed)
            runs[seed, global_seed] = [_floats(w, f'init_weights(3, 4, "{scheme}", rng)') for w in result]
            for w in runs[seed, global_seed]:
                if w.shape != (3, 4):
                    fail(f'init_weights(3, 4, "{scheme}", rng): expected shape (3, 4), got {w.shape}')
        if not np.array_equal(runs[0, 1][0], runs[0, 2][0]):
            with on_input(_global_seeds_code(3, 4, scheme)):
                fail(f'init_weights(3, 4, "{scheme}", rng) with rng = np.random.default_rng(0) gave different weights when only the'
                     " global RNGs (np.random.seed, random.seed, torch.manual_seed) were seeded differently: draw every random number"
                     " from rng (rng.standard_normal, rng.uniform), never from np.random.*, random or torch's global generator")
        if np.array_equal(runs[0, 1][0], runs[0, 1][1]):
            with on_input(_seeds_code(None, 3, 4, scheme, 0, 1)):
                fail(f'two calls of init_weights(3, 4, "{scheme}", rng) with the same generator gave identical weights: draw from the'
                     " rng you are given (each call advances it), instead of a generator of your own with a fixed seed")
        if np.array_equal(runs[0, 1][0], runs[1, 1][0]):
            with on_input(_seeds_code(None, 3, 4, scheme, 1, 1)):
                fail(f'init_weights(3, 4, "{scheme}", rng) gave the same weights for np.random.default_rng(0) and default_rng(1):'
                     " the weights must come from rng")


# ---------------------------------------------------------------------------------------------
# Checks: depth, with the learner's init_weights
# ---------------------------------------------------------------------------------------------
def geometric_means(sub, scheme):
    result = sub.run(deep_nets, scheme, NET_SEEDS)
    _check_bad(result, WIDTH, WIDTH, f'init_weights({WIDTH}, {WIDTH}, "{scheme}", rng) inside a {DEPTH}-layer net')
    v = np.asarray(result["variances"], dtype=np.float64)
    if not np.isfinite(v).all():
        fail(f"{DEPTH}-layer ReLU nets of width {WIDTH} from init_weights(..., \"{scheme}\", rng): some layer's activations are"
             " inf or NaN")
    with np.errstate(divide="ignore"):
        gm = np.exp(np.log(v).mean(axis=0))
    return gm


def per_layer_factor(gm):
    if gm[0] <= 0 or gm[-1] <= 0:
        return 0.0
    return float((gm[-1] / gm[0]) ** (1 / (DEPTH - 1)))


@check(f"he: the post-ReLU variance stays within 2x over {DEPTH} layers of width {WIDTH} (geometric mean of {NETS} nets)", uses=INIT)
def he_keeps_variance(sub, ctx):
    gm = geometric_means(sub, "he")
    ratio = gm / gm[0] if gm[0] > 0 else np.zeros_like(gm)
    worst = int(np.argmax(np.abs(np.log(np.where(ratio > 0, ratio, 1e-300)))))
    if not (0.5 <= ratio[worst] <= 2.0):
        factor = per_layer_factor(gm)
        hint = (f" The variance changes by a factor of about {factor:.3g} per layer, as if your weights' variance were"
                f" {factor:.3g} x 2 / fan_in" + (" (a third: a uniform bound without sqrt(3)?)" if abs(factor - 1 / 3) < 0.05 else
                                                  " (half: 1 / fan_in, or Xavier's formula?)" if abs(factor - 0.5) < 0.05 else "")
                + "; He's 2 / fan_in makes that factor 1.") if factor > 0 else ""
        fail(f"{NETS} bias-free ReLU nets of {DEPTH} layers of width {WIDTH}, weights from init_weights({WIDTH}, {WIDTH}, \"he\", rng)"
             f" with seeds {NET_SEEDS[0]}..{NET_SEEDS[-1]}, on a fixed standard-normal batch of {BATCH_ROWS} rows: the geometric mean"
             f" of the post-ReLU variance at layer {worst + 1} is {ratio[worst]:.3g} times layer 1's ({gm[worst]:.3g} vs {gm[0]:.3g});"
             f" He initialisation keeps it within 2x.{hint}", layer=worst + 1, ratio=float(ratio[worst]))


@check(f"xavier: the post-ReLU variance collapses over {DEPTH} layers of width {WIDTH} (geometric mean of {NETS} nets)", uses=INIT)
def xavier_collapses(sub, ctx):
    gm = geometric_means(sub, "xavier")
    ratio = gm[-1] / gm[0] if gm[0] > 0 else 0.0
    if not ratio < 0.01:
        factor = per_layer_factor(gm)
        fail(f"{NETS} bias-free ReLU nets of {DEPTH} layers of width {WIDTH}, weights from init_weights({WIDTH}, {WIDTH}, \"xavier\", rng):"
             f" the geometric mean of the post-ReLU variance at layer {DEPTH} is {ratio:.3g} times layer 1's; with Xavier's"
             f" 2 / (fan_in + fan_out) = 1 / {WIDTH} it halves at every layer (about 2**-19 = 1.9e-06 after {DEPTH} layers; held to"
             f" below 0.01). Yours changes by a factor of about {factor:.3g} per layer, as if your weights' variance were"
             f" {2 * factor:.3g} / fan_in.", ratio=float(ratio))


# ---------------------------------------------------------------------------------------------
# Checks: forward_stats
# ---------------------------------------------------------------------------------------------
def theory(sizes, scheme):
    """The expected post-ReLU variance of each layer: Var(z) = fan_in * Var(w) * E[h**2], E[h**2] = Var(z) / 2."""
    second_moment, out = 1.0, []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        pre = fan_in * target_variance(fan_in, fan_out, scheme) * second_moment
        out.append(pre * RELU_VAR)
        second_moment = pre / 2
    return out


def stats_values(sub, sizes, scheme):
    """forward_stats(sizes, scheme) as a float64 array of len(sizes) - 1 finite values, sizes unchanged."""
    shown = f"[{sizes[0]}] * {len(sizes)}" if len(set(sizes)) == 1 and len(sizes) > 3 else str(list(sizes))
    got = inputs_unchanged(sub, "forward_stats", list(sizes), scheme, scenario=f"sizes = {shown}")
    what = f'forward_stats({shown}, "{scheme}")'
    arr = _as_array(got)
    if arr is None or arr.dtype.kind not in "fiu" or arr.shape != (len(sizes) - 1,):
        fail(f"{what}: expected {len(sizes) - 1} numbers (one variance per layer), got {describe_value(got)}"
             + ("" if arr is None or arr.dtype.kind in "fiu" else f", which holds values of dtype {arr.dtype} (not numbers)"))
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        fail(f"{what}: some values are inf or NaN: {arr.tolist()}")
    return what, arr


@check("forward_stats: one value per layer; layer 1 is the post-ReLU variance theory predicts", uses=STATS)
def first_layer_variance(sub, ctx):
    for sizes, scheme in (([256, 256], "he"), ([512, 128], "xavier"), ([100, 400, 200], "he")):
        what, got = stats_values(sub, sizes, scheme)
        want = theory(sizes, scheme)[0]
        pre = want / RELU_VAR
        if abs(got[0] / want - 1) > LAYER1_RTOL:
            fail(f"{what}: layer 1's value is {got[0]:.4g}; with a standard-normal batch, z = h @ W has variance fan_in * Var(w) ="
                 f" {pre:.4g}, and relu(z) has variance {pre:.4g} * (1/2 - 1/(2 pi)) = {want:.4g}, expected within"
                 f" {LAYER1_RTOL:.0%}.{layer1_hint(got[0], sizes, scheme)}", got=float(got[0]), expected=want)


def layer1_hint(got, sizes, scheme):
    """What a known mistake gives for layer 1's value; "return np.var of the post-ReLU output" unless the values show
    that the weights, not the statistic, are wrong."""
    pre = sizes[0] * target_variance(sizes[0], sizes[1], scheme)
    statistic = {"the variance of the pre-activation z = h @ W (before the ReLU)": pre,
                 "the mean of h**2 (the second moment), not the variance of h": pre / 2}
    weights = {f"the post-ReLU variance with weights of the wrong variance, {text}": sizes[0] * value * RELU_VAR
               for text, value in variance_mistakes(sizes[0], sizes[1], scheme)}
    found = matching_mistakes(got, {**statistic, **weights}, rtol=LAYER1_RTOL, atol=0.0)
    remedy = "" if found and all(text in weights for text in found) else " Return np.var of each layer's whole post-ReLU output."
    return remedy + (f" Your value is {'; or '.join(found)}." if found else "")


@check(f"forward_stats: he stays within 5x over {DEPTH} layers of width {WIDTH}, xavier collapses", uses=STATS)
def forward_stats_depth(sub, ctx):
    sizes = [WIDTH] * (DEPTH + 1)
    with on_input(Call.code(f'forward_stats([{WIDTH}] * {DEPTH + 1}, "he")')):
        what, he = stats_values(sub, sizes, "he")
        _within_5x(what, he)
    with on_input(Call.code(f'forward_stats([{WIDTH}] * {DEPTH + 1}, "xavier")')):
        what, xavier = stats_values(sub, sizes, "xavier")
        _collapses(what, xavier, he)


def _within_5x(what, he):
    ratio = he / he[0] if he[0] > 0 else np.zeros_like(he)
    bad = np.flatnonzero((ratio < 0.2) | (ratio > 5.0))
    if bad.size:
        k = int(bad[0])
        fail(f"{what}: layer {k + 1}'s variance is {ratio[k]:.3g} times layer 1's ({he[k]:.3g} vs"
             f" {he[0]:.3g}); one He net may wander, but stays within 5x", layer=k + 1, ratio=float(ratio[k]))


def _collapses(what, xavier, he):
    if not (xavier[0] > 0 and xavier[-1] / xavier[0] < 0.01):
        fail(f"{what}: layer {DEPTH}'s variance is {xavier[-1]:.3g} and layer 1's {xavier[0]:.3g};"
             f" with Xavier it halves at every layer (about 2**-19 over {DEPTH} layers; held to below 1/100 of layer 1's).{scheme_hint(xavier, he)}")


def scheme_hint(xavier, he):
    """For a forward_stats("xavier") that does not collapse: whether its values are those of "he"."""
    if not same_values(xavier, he):
        return ""
    return ' Your values for "xavier" are exactly those for "he": use init_weights with the scheme you were given, for every layer.'



@check("forward_stats: its own fixed seed, whatever the global RNG state", uses=STATS)
def forward_stats_deterministic(sub, ctx):
    sizes = [64, 64, 64]
    results = sub.run(stats_under_global_seeds, sizes, "he", [1, 2, 1])
    arrays = [_floats(r, f'forward_stats({sizes}, "he")') for r in results]
    for arr in arrays[1:]:
        if arr.shape != arrays[0].shape or not np.array_equal(arr, arrays[0]):
            fail(f'forward_stats({sizes}, "he") gave {arrays[0].tolist()} and then {arr.tolist()}: it must use its own fixed-seed'
                 " generator (np.random.default_rng(seed) with a constant seed) for the batch and the weights, so the same call always"
                 " gives the same values, whatever the global RNGs' state")
