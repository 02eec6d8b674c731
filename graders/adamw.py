"""Checks for `adamw`. Expected values come from torch.optim.AdamW's own update, the functional
`torch.optim.adamw.adamw` that AdamW.step runs (an optimizer object would import torch._dynamo, about 1 s),
from the same (w, m, v, t) as the learner's call. A trajectory runs in the sandbox in one round trip
(`adamw_trajectory`) and is compared here step by step, so the first step that goes wrong is the one reported."""

import copy
from functools import partial

import numpy as np
import torch
from torch.optim.adamw import adamw as adamw_update  # what torch.optim.AdamW.step runs

from mlprep.grading import (Call, assert_close, assert_dtype, assert_finite, assert_returns_like, assert_shape, check, control_value, dtype_name,
                            expect_sequence, explained, fail, inputs_unchanged, literal, mistake_hint, on_input, scenario, shrink_on_failure)

# Relative tolerances of the lockstep comparisons: a correct implementation with another order of
# operations stays within these after 200 steps (measured: float64 ~1e-13, float32 ~5e-7 of scale).
LOCKSTEP_RTOL = {"float64": 1e-10, "float32": 1e-5}

UPCAST_HINT = "bring g to the state's dtype before squaring it: in float16, 300**2 overflows and (1 - b2) * 1e-3**2 underflows"


def step1_hint(w_at_t2):
    """For a non-finite step 1: the same call at t = 2 (a control), finite, shows that step 1 itself divides by zero."""
    if w_at_t2 is None or not np.isfinite(w_at_t2).all():
        return ""
    return ("The same call at t = 2 gives finite values, so step 1 itself divides by zero: at t = 1 (t counts from 1) the bias"
            " corrections 1 - b1**t and 1 - b2**t are 1 - b1 and 1 - b2, never 0.")


def w_at_t2(sub, *args, **hyper):
    return control_value(sub, "adamw", *args, 2, **hyper, read=lambda got: np.asarray(got[0], dtype=np.float64))


def first_step_hint(moved, g, lr, eps=1e-8, b1=0.9, b2=0.999):
    """What a known mistake moves w by at t = 1 from a zero state (wd = 0), when the learner's step equals it."""
    m, v = (1 - b1) * g, (1 - b2) * g * g

    def move(m_hat, v_hat, inside=False):
        return lr * m_hat / (np.sqrt(v_hat + eps) if inside else np.sqrt(v_hat) + eps)

    return mistake_hint(moved, {
        "m and v are not bias-corrected: m_hat = m / (1 - b1**t) and v_hat = v / (1 - b2**t)": move(m, v),
        "v is not bias-corrected (v_hat = v / (1 - b2**t)), or sqrt(v) stands where sqrt(v_hat) belongs": move(m / (1 - b1), v),
        "the bias corrections use b1**(t + 1) and b2**(t + 1); t counts from 1": move(m / (1 - b1**2), v / (1 - b2**2)),
        "eps is under the square root, sqrt(v_hat + eps); it belongs outside, sqrt(v_hat) + eps": move(g, g * g, inside=True),
    }, want=lr * g / (np.abs(g) + eps), say="Your step is what you get when {}.")


def zero_gradient_hint(got_w, w, t, lr, wd, eps=1e-8, b1=0.9, b2=0.999):
    """What a known decay mistake gives for g = 0 from a zero state, when the learner's w equals it."""
    g = wd * w  # the decay folded into the gradient
    m_hat, v_hat = (1 - b1) * g / (1 - b1**t), (1 - b2) * g * g / (1 - b2**t)
    return mistake_hint(got_w, {
        "the decay is folded into g (an L2 term, g + wd * w), so it goes through m, v and the division by sqrt(v_hat); AdamW's"
        " decoupled decay shrinks w by lr * wd * w directly": w - lr * m_hat / (np.sqrt(v_hat) + eps),
        "the decay is not multiplied by lr: w * (1 - wd) instead of w * (1 - lr * wd)": w * (1 - wd),
    }, want=w * (1 - lr * wd), say="Your w is what you get when {}.")


def decay_hint(rows_without_decay):
    """For rows that decayed apart: the same run with wd = 0 (a control), its two rows still together, shows the decay is the cause."""
    if rows_without_decay is None or not np.allclose(rows_without_decay[1], rows_without_decay[0], rtol=1e-3, atol=1e-3):
        return ""
    return ("With wd = 0 the two rows stay together, so the decay is what tells them apart: apply it to w directly, not through g"
            " (where it gets divided by sqrt(v_hat)).")


def dtype_hint(name, got, dtypes):
    """For a wrong dtype of the returned `name`: whether it is the promotion of the inputs' dtypes."""
    promoted = np.result_type(*dtypes).name
    if getattr(got, "dtype", None) is not None and dtype_name(got.dtype) == promoted and len(set(dtypes)) > 1:
        return (f"{promoted} is what mixing the inputs' dtypes promotes to: cast {name} back to the dtype of the input {name}"
                f" ({dtypes['wgmv'.index(name)]})")
    return f"return {name} in the dtype of the input {name}"


# ---------------------------------------------------------------------------------------------
# Scenario (runs in the sandbox) and expectations (run here)
# ---------------------------------------------------------------------------------------------
def _trajectory_repro(interface, w, m, v, grads, t0, hyper):
    settings = "".join(f", {k}={v!r}" for k, v in hyper.items())
    return Call.code(f"w, m, v = {literal(w)}, {literal(m)}, {literal(v)}\ngrads = {literal(grads)}\n"
                     f"for t, g in enumerate(grads, start={t0}):\n    w, m, v = adamw(w, g, m, v, t{settings})\nw, m, v")


@scenario(repro=_trajectory_repro)
def adamw_trajectory(module, w, m, v, grads, t0, hyper):
    """Scenario: adamw once per gradient, each step's (w, m, v) fed into the next; returns a copy of
    every step's result (a copy, so that later steps cannot change what an earlier one returned)."""
    results = []
    for k, g in enumerate(grads):
        result = module.adamw(w, g, m, v, t0 + k, **hyper)
        results.append(copy.deepcopy(result))
        if not (isinstance(result, (tuple, list)) and len(result) == 3):
            break  # the judge reports the malformed result at this step
        w, m, v = result
    return results


def torch_adamw_steps(w, m, v, grads, t0, hyper, dtype):
    """torch.optim.AdamW from state (w, m, v) at step t0, one step per gradient, all in `dtype` on
    the CPU (g upcast first); returns every step's (w, m, v) as float64 NumPy arrays."""
    hyper = {"lr": 1e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.01, **hyper}

    def tensor(x):
        return torch.as_tensor(np.asarray(x, dtype=np.float64)).to(dtype).clone()

    param, exp_avg, exp_avg_sq = tensor(w), tensor(m), tensor(v)
    step = torch.tensor(float(t0 - 1))  # the update counts it up to t first, as in AdamW's state
    steps = []
    for g in grads:
        adamw_update([param], [tensor(g)], [exp_avg], [exp_avg_sq], [], [step], foreach=False, amsgrad=False, beta1=hyper["b1"],
                     beta2=hyper["b2"], lr=hyper["lr"], weight_decay=hyper["wd"], eps=hyper["eps"], maximize=False)
        steps.append(tuple(x.double().numpy().copy() for x in (param, exp_avg, exp_avg_sq)))
    return steps


def as_input(x, lib, dtype):
    """A float64 NumPy value as the learner's input: a NumPy array or a (CPU) torch tensor of `dtype`."""
    arr = np.asarray(x, dtype=np.float64).astype(dtype)
    return torch.from_numpy(arr.copy()) if lib == "torch" else arr


LIB = {"numpy": "NumPy", "torch": "torch"}


def describe(lib, dtype, shape, hyper):
    settings = ", ".join(f"{k}={v:g}" for k, v in hyper.items()) or "default lr, b1, b2, eps, wd"
    return f"{LIB[lib]} {dtype}, shape {shape}, {settings}"


def judge_state(got, want, *, like, dtypes, scenario, dtype_hint, device=None, what="{}", close=lambda name: {}, order="wmv"):
    """adamw's (w, m, v) against torch's, in `order`: each comes back like the input `like`, in its dtype (else the
    failure says dtype_hint(name, value)), and close."""
    got = expect_sequence(got, 3, what="adamw's result (w, m, v)", scenario=scenario)
    for name in order:
        i = "wmv".index(name)
        assert_returns_like(got[i], like, what=f"returned {name}", scenario=scenario, device=device)
        assert_dtype(got[i], dtypes[i], what=f"returned {name}", scenario=scenario, hint=dtype_hint(name, got[i]))
        assert_close(got[i], want[i], what=what.format(name), scenario=scenario, **close(name))


def all_steps_close(got, want, dtypes, scales):
    """Whether the step-by-step comparison below would pass: the same test on all steps at once (one
    array operation instead of 600 calls). Anything unusual (ragged steps, wrong dtype, non-finite
    values at step 1, non-arrays) answers False and leaves the verdict and its message to the loop."""
    try:
        if len(got) != len(want) or any(len(step) != 3 for step in got):
            return False
        for i, (dtype, scale) in enumerate(zip(dtypes, scales)):
            first = got[0][i]
            if dtype_name(first.dtype) != dtype:
                return False
            got_i = np.stack([np.asarray(step[i], dtype=np.float64) for step in got])
            want_i = np.stack([step[i] for step in want])
            if got_i.shape != want_i.shape or not np.isfinite(got_i[0]).all():
                return False
            rtol = LOCKSTEP_RTOL[dtype]
            with np.errstate(invalid="ignore", over="ignore"):
                if not ((np.abs(got_i - want_i) <= rtol * scale + rtol * np.abs(want_i)) | (got_i == want_i)).all():
                    return False
        return True
    except Exception:  # whatever came back, the loop below reports it properly
        return False


def compare_trajectory(sub, got, want, *, scenario, dtypes, start, device="cpu", scales=(1.0, 1.0, 1.0)):
    """Step by step (from t = 1), w then m then v, so the first step that differs is the one reported,
    with that step's call as the failing input: adamw(w, g, m, v, t) with the state it was given.
    `start` is (w, m, v, grads, t0, hyper) as passed to the learner; `scales` are the typical
    magnitudes of w, m, v: the absolute tolerance is the relative one times them."""
    w0, m0, v0, grads, t0, hyper = start
    first = got[0] if isinstance(got, (tuple, list)) and got and isinstance(got[0], (tuple, list)) else ()
    for name, got_x, like in zip("wmv", first, (w0, m0, v0)):
        with on_input(Call("adamw", w0, grads[0], m0, v0, t0, **hyper)):
            assert_returns_like(got_x, like, what=f"returned {name}", scenario=scenario, device=device)
    if all_steps_close(got, want, dtypes, scales):
        return  # the common case, checked in one go; otherwise step by step, to report the first step that differs
    state = (w0, m0, v0)
    for k, want_step in enumerate(want):
        t = k + 1
        with on_input(Call("adamw", state[0], grads[k], state[1], state[2], t0 + k, **hyper)):
            if k >= len(got):
                fail(f"adamw stopped at step {t}{scenario and f' ({scenario})'}: expected {len(want)} steps")
            got_step = expect_sequence(got[k], 3, what=f"adamw's result at step {t}, (w, m, v)", scenario=scenario)
            for name, got_x, want_x, dtype, scale in zip("wmv", got_step, want_step, dtypes, scales):
                if k == 0:
                    assert_dtype(got_x, dtype, what=f"returned {name}", scenario=scenario,
                                 hint=f"return {name} in the dtype of the input {name}")
                if t == 1:
                    with explained(lambda: step1_hint(w_at_t2(sub, w0, grads[0], m0, v0, **hyper))):
                        assert_finite(got_x, what=f"{name} after step 1", scenario=scenario)
                rtol = LOCKSTEP_RTOL[dtype]
                assert_close(got_x, want_x, what=f"{name} after step {t}", scenario=scenario, rtol=rtol, atol=rtol * scale)
        state = got_step


# ---------------------------------------------------------------------------------------------
# One step, for shrinking a failed trajectory to the smallest step that fails
# ---------------------------------------------------------------------------------------------
SHRINK_SHAPES = [(), (1,), (2,), (3,), (2, 2)]


def single_steps(lib, dtype, hypers):
    """Hypothesis cases (shape, m, v, w, g, t, hyper) of one step from any state: shapes shrink to 0-d,
    values to 0 and small integers, t to 1, hyper to the first of `hypers`."""
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    width = 32 if dtype == "float32" else 64
    values = st.floats(-8.0, 8.0, width=width)
    squares = st.floats(0.0, 8.0, width=width)

    def of_shape(shape):
        def array(elements):
            return hnp.arrays(np.float64, shape, elements=elements)
        # The state first: Hypothesis shrinks earlier parts first, so it settles on a zero state and
        # a plain gradient (an input that reads like step 1) whenever that still fails.
        return st.tuples(st.just(shape), array(values), array(squares), array(values), array(values),
                         st.integers(1, 1000), st.sampled_from(hypers))

    return st.sampled_from(SHRINK_SHAPES).flatmap(of_shape)


def verify_one_step(sub, lib, dtype, case):
    """One adamw call against torch.optim.AdamW's step, at the dtype's assert_close tolerance."""
    shape, m, v, w, g, t, hyper = case
    scenario = f"one step, {describe(lib, dtype, shape, hyper)}, t = {t}"
    inputs = [as_input(x, lib, dtype) for x in (w, g, m, v)]
    (want,) = torch_adamw_steps(w, m, v, [g], t, hyper, getattr(torch, dtype))
    judge_state(sub.call("adamw", *inputs, t, **hyper), want, like=inputs[0], dtypes=(dtype,) * 3, scenario=scenario, device=sub.device,
                dtype_hint=lambda name, got: f"return {name} in the dtype of the input {name}", what="{} after the step",
                close=lambda name: {"dtype": dtype})


def shrinking_steps(sub, lib_choices, dtype, hypers):
    """shrink_on_failure for a trajectory check: on failure, the smallest single step that fails."""
    from hypothesis import strategies as st

    def cases():
        return st.sampled_from(lib_choices).flatmap(lambda lib: single_steps(lib, dtype, hypers).map(lambda c: (lib, c)))

    return shrink_on_failure(sub, cases, lambda lib_case: verify_one_step(sub, lib_case[0], dtype, lib_case[1]))


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
def run_trajectory(sub, w, m, v, grads, t0, hyper, lib, dtype):
    """The learner's trajectory from (w, m, v), and the inputs as passed (for compare_trajectory)."""
    start = (as_input(w, lib, dtype), as_input(m, lib, dtype), as_input(v, lib, dtype), [as_input(g, lib, dtype) for g in grads], t0, hyper)
    return sub.run(adamw_trajectory, *start[:3], start[3], t0, hyper), start


# The checks' inputs, built the same way by each check and by the check of inputs left unchanged.
FIRST_STEP_W = np.array([0.5, -1.0, 2.0, 0.25, -3.0, 1.5, -0.75, 4.0])  # short numbers: the failing input reads well
FIRST_STEP_G = np.array([1e-3, -2e-2, 0.5, -1.0, 3.0, -40.0, 300.0, -1e3])
DECAY_W = np.array([[0.5, -1.0, 2.0], [-0.25, 3.0, -4.0]])
FP16_G = np.array([300.0, -300.0, 1e-3, -1e-3, 2.5, -0.75]).astype(np.float16)
TINY_G = np.array([1e-12, 1e-11, 1e-10, 1e-9, 3e-9, 1e-8, 3e-8, 1e-7])
MIXED_DTYPES = (("numpy", ("float32", "float32", "float64", "float64")), ("torch", ("float64", "float16", "float32", "float32")),
                ("torch", ("float32", "float32", "float32", "float64")))
LOCKSTEP64 = [  # small to large: the first that fails is the smallest failing input
    ("numpy", (), {"lr": 0.1, "b1": 0.5, "b2": 0.9, "eps": 1e-3, "wd": 0.0}, 0.1),
    ("torch", (), {"lr": 3e-2, "b1": 0.95, "b2": 0.9999, "eps": 1e-8, "wd": 0.3}, 1.0),
    ("numpy", (7,), {}, 1.0),  # the defaults of the signature
    ("torch", (2, 3, 4), {"lr": 1e-2, "b1": 0.8, "b2": 0.99, "eps": 1e-6, "wd": 0.1}, 10.0),
    ("numpy", (2, 3, 4), {"lr": 5e-3, "b1": 0.9, "b2": 0.98, "eps": 1e-4, "wd": 0.05}, 1e-2),
]
LOCKSTEP32 = [  # small to large
    ("numpy", (), {"lr": 3e-2, "b1": 0.95, "b2": 0.9999, "wd": 0.3}, 1.0),
    ("numpy", (7,), {"lr": 1e-2, "wd": 0.1}, 1.0),
    ("torch", (2, 3, 4), {"lr": 1e-3, "b1": 0.8, "b2": 0.99, "eps": 1e-6, "wd": 0.01}, 10.0),
]


def lockstep_cases(ctx, configs, steps=200):
    for seed, (lib, shape, hyper, g_scale) in enumerate(configs):
        rng = ctx.rng(100 + seed)
        w0 = rng.standard_normal(shape)
        yield lib, shape, hyper, g_scale, w0, [g_scale * rng.standard_normal(shape) for _ in range(steps)]


def decay_case(ctx):
    """Two equal rows of w whose gradients are the same up to a factor 1e4 (100 vs 0.01), 30 steps."""
    rng = ctx.rng(3)
    w_row = rng.standard_normal(4)
    return np.stack([w_row, w_row]), [np.stack([100.0 * s, 0.01 * s]) for s in rng.standard_normal((30, 4))]


def tiny_case(ctx):
    rng = ctx.rng(4)
    return [TINY_G * rng.standard_normal(TINY_G.shape) for _ in range(20)]


def device_cases(ctx):
    rng = ctx.rng(5)
    for dtype in ("float32", "float64"):
        w = rng.standard_normal((3, 5))
        yield dtype, w, [rng.standard_normal((3, 5)) for _ in range(10)]


def fp16_cases(ctx):
    """(t, w, m, v): float32 state from zero at t = 1, and a nonzero one at t = 10, for g = FP16_G."""
    g = FP16_G.astype(np.float64)  # what the learner's float16 g holds, exactly
    w = ctx.rng(6).standard_normal(g.shape)
    for t, m, v in ((1, np.zeros_like(g), np.zeros_like(g)), (10, 0.5 * g, 0.8 * g * g)):
        yield t, w, m.astype(np.float32), v.astype(np.float32)


def mixed_cases(ctx):
    """(lib, dtypes of w, g, m, v, and their values as float64 after rounding to those dtypes)."""
    rng = ctx.rng(7)
    for lib, (w_dt, g_dt, m_dt, v_dt) in MIXED_DTYPES:
        w, g = rng.standard_normal(5), rng.standard_normal(5).astype(g_dt).astype(np.float64)
        m, v = 0.1 * rng.standard_normal(5), 0.01 * rng.random(5)
        w, m, v = (x.astype(dt).astype(np.float64) for x, dt in ((w, w_dt), (m, m_dt), (v, v_dt)))
        yield lib, (w_dt, g_dt, m_dt, v_dt), (w, g, m, v)


def lockstep(sub, ctx, configs, dtype, steps=200):
    libs = sorted({lib for lib, *_ in configs})
    with shrinking_steps(sub, libs, dtype, [config[2] for config in configs]):
        for lib, shape, hyper, g_scale, w0, grads in lockstep_cases(ctx, configs, steps):
            zeros = np.zeros(shape)
            want = torch_adamw_steps(w0, zeros, zeros, grads, 1, hyper, getattr(torch, dtype))
            got, start = run_trajectory(sub, w0, zeros, zeros, grads, 1, hyper, lib, dtype)
            scenario = f"{describe(lib, dtype, shape, hyper)}, gradients ~ {g_scale:g} * N(0, 1), {steps} steps from zero state"
            compare_trajectory(sub, got, want, scenario=scenario, dtypes=(dtype,) * 3, start=start, scales=(1.0, g_scale, g_scale**2))


@check("first step moves each weight by about lr")
def first_step_size(sub, ctx):
    # m_hat = g and v_hat = g**2 at t = 1, so without decay each weight moves by lr * |g| / (|g| + eps):
    # lr, whatever the gradient's size. wd = 0 here so the step is seen on its own.
    lr, eps, w, g = 1e-2, 1e-8, FIRST_STEP_W, FIRST_STEP_G
    zeros = np.zeros_like(g)
    want_move = lr * g / (np.abs(g) + eps)
    want_m, want_v = (1 - 0.9) * g, (1 - 0.999) * g * g
    for lib in ("numpy", "torch"):
        scenario = f"{LIB[lib]} float64, t = 1, zero m and v, lr={lr:g}, wd=0, g = {g.tolist()}"
        inputs = [as_input(x, lib, "float64") for x in (w, g, zeros, zeros)]
        got = sub.call("adamw", *inputs, 1, lr=lr, wd=0.0)
        got_w, got_m, got_v = expect_sequence(got, 3, what="adamw's result (w, m, v)", scenario=scenario)
        for name, got_x, like in zip("wmv", (got_w, got_m, got_v), (inputs[0], inputs[2], inputs[3])):
            assert_returns_like(got_x, like, what=f"returned {name}", scenario=scenario)
        with explained(lambda inputs=inputs: step1_hint(w_at_t2(sub, *inputs, lr=lr, wd=0.0))):
            assert_finite(got_w, what="w after step 1", scenario=scenario)
        assert_shape(got_w, g.shape, what="w after step 1", scenario=scenario)
        moved = w - np.asarray(got_w, dtype=np.float64)
        with explained(lambda moved=moved: first_step_hint(moved, g, lr)):
            assert_close(moved, want_move, what="how far step 1 moved w (old w - new w)", scenario=scenario,
                         hint=f"at t = 1 the bias-corrected averages are m_hat = g and v_hat = g**2, so the step is lr = {lr:g} in size whatever |g| is.")
        state_hint = ("from a zero state, step 1 gives m = (1 - b1) * g and v = (1 - b2) * g**2"
                      " (the state is stored without bias correction)")
        assert_close(got_m, want_m, what="m after step 1", scenario=scenario, hint=state_hint)
        assert_close(got_v, want_v, what="v after step 1", scenario=scenario, hint=state_hint)


@check("zero gradient shrinks w by (1 - lr*wd)")
def zero_gradient_decay(sub, ctx):
    lr, wd, w = 0.1, 0.5, DECAY_W
    zeros = np.zeros_like(w)
    for lib, t in (("numpy", 1), ("torch", 1), ("numpy", 50)):
        scenario = f"{LIB[lib]} float64, g = 0 with zero m and v, t = {t}, lr={lr:g}, wd={wd:g}"
        inputs = [as_input(x, lib, "float64") for x in (w, zeros, zeros, zeros)]
        got = sub.call("adamw", *inputs, t, lr=lr, wd=wd)
        got_w, got_m, got_v = expect_sequence(got, 3, what="adamw's result (w, m, v)", scenario=scenario)
        assert_returns_like(got_w, inputs[0], what="returned w", scenario=scenario)
        with explained(lambda inputs=inputs, t=t: step1_hint(w_at_t2(sub, *inputs, lr=lr, wd=wd)) if t == 1 else ""):
            assert_finite(got_w, what="w", scenario=scenario,
                          hint="with g = 0 and a zero state, m_hat = v_hat = 0 and the adaptive step is 0 / (0 + eps) = 0.")
        with explained(lambda got_w=got_w, t=t: zero_gradient_hint(got_w, w, t, lr, wd)):
            assert_close(got_w, w * (1 - lr * wd), what=f"w (expected w * (1 - lr*wd) = w * {1 - lr * wd:g})", scenario=scenario,
                         hint="with a zero gradient only the decoupled decay acts: it shrinks w by lr * wd * w.")
        assert_close(got_m, zeros, what="m", scenario=scenario)
        assert_close(got_v, zeros, what="v", scenario=scenario)


@check("large and small gradients decay alike")
def decay_independent_of_gradient_size(sub, ctx):
    # Row 0 and row 1 start equal and get the same gradients up to a factor 1e4 (100 vs 0.01). Adam's
    # step is scale-free (up to eps), so with decoupled decay they stay equal; with an L2 term in g they
    # end ~0.1 apart. The loose tolerance leaves eps-sized effects of other bugs to the torch comparison.
    hyper = {"lr": 1e-2, "wd": 0.1}
    w, grads = decay_case(ctx)
    zeros = np.zeros_like(w)
    scenario = "NumPy float64, shape (2, 4), row 0 gradients ~ 100, row 1 the same gradients * 1e-4, equal w, lr=0.01, wd=0.1, 30 steps"
    got, start = run_trajectory(sub, w, zeros, zeros, grads, 1, hyper, "numpy", "float64")
    want = torch_adamw_steps(w, zeros, zeros, grads, 1, hyper, torch.float64)
    last = expect_sequence(got[-1] if got else None, 3, what="adamw's last result", scenario=scenario)
    assert_finite(last[0], what="w after 30 steps", scenario=scenario)
    assert_shape(last[0], (2, 4), what="w after 30 steps", scenario=scenario)
    final_w = np.asarray(last[0], dtype=np.float64)
    without_decay = partial(control_value, sub, adamw_trajectory, *start[:4], 1, {**hyper, "wd": 0.0},
                            read=lambda steps: np.asarray(steps[-1][0], dtype=np.float64))
    with explained(lambda: decay_hint(without_decay())):
        assert_close(final_w[1], final_w[0], what="final w of the small-gradient row vs the large-gradient row", scenario=scenario,
                     rtol=1e-3, atol=1e-3, hint="equal weights must decay by the same amount whatever their gradients.")
    compare_trajectory(sub, got, want, scenario=scenario, dtypes=("float64",) * 3, start=start, scales=(1.0, 100.0, 1e4))


@check("tiny gradients where eps dominates")
def tiny_gradients(sub, ctx):
    hyper = {"lr": 1e-3, "eps": 1e-8, "wd": 0.01}
    w = zeros = np.zeros_like(TINY_G)  # w starts at 0, so it shows the sum of the steps, undiluted
    grads = tiny_case(ctx)
    scenario = "torch float64, w = 0 at the start, gradients of size 1e-12 to 1e-7 (eps = 1e-8), lr=0.001, wd=0.01, 20 steps"
    got, start = run_trajectory(sub, w, zeros, zeros, grads, 1, hyper, "torch", "float64")
    want = torch_adamw_steps(w, zeros, zeros, grads, 1, hyper, torch.float64)
    # Absolute tolerances at the scale of these tiny m and v, so that they are really compared.
    compare_trajectory(sub, got, want, scenario=scenario, dtypes=("float64",) * 3, start=start, scales=(1e-3, 1e-10, 1e-20))


@check("matches torch.optim.AdamW over 200 float64 steps")
def lockstep_float64(sub, ctx):
    lockstep(sub, ctx, LOCKSTEP64, "float64")


@check("matches torch.optim.AdamW over 200 float32 steps")
def lockstep_float32(sub, ctx):
    lockstep(sub, ctx, LOCKSTEP32, "float32")


@check("torch tensors on the device", devices=("cpu", "cuda"))
def torch_devices(sub, ctx):
    hyper = {"lr": 1e-2, "wd": 0.1}
    for dtype, w, grads in device_cases(ctx):
        zeros = np.zeros_like(w)
        scenario = f"torch {dtype} on {ctx.device}, shape (3, 5), lr=0.01, wd=0.1, 10 steps"
        with shrinking_steps(sub, ["torch"], dtype, [hyper]):
            got, start = run_trajectory(sub, w, zeros, zeros, grads, 1, hyper, "torch", dtype)
            want = torch_adamw_steps(w, zeros, zeros, grads, 1, hyper, getattr(torch, dtype))
            compare_trajectory(sub, got, want, scenario=scenario, dtypes=(dtype,) * 3, start=start, device=ctx.device)


def fp16_gradients(sub, ctx, lib):
    """float16 g of 300 (g*g overflows float16) and 1e-3 ((1 - b2) * g*g underflows), float32 m and v.
    The same step with g already in float32 goes first: if that one fails, the problem is not the
    float16 handling, and the upcast hint would mislead."""
    lr, wd = 1e-3, 0.01
    device = f" on {ctx.device}" if lib == "torch" else ""
    # m and v span 1e-10 to 1e2 here: compare them relatively, so that the small ones count too.
    tolerances = {"w": {"dtype": "float32"}, "m": {"rtol": 1e-5, "atol": 0.0}, "v": {"rtol": 1e-5, "atol": 0.0}}
    for t, w, m, v in fp16_cases(ctx):
        g = FP16_G.astype(np.float64)
        (want,) = torch_adamw_steps(w.astype(np.float32), m, v, [g], t, {"lr": lr, "wd": wd}, torch.float32)
        for g_dtype, hint in (("float32", ""), ("float16", UPCAST_HINT)):
            scenario = (f"{LIB[lib]}{device}: {g_dtype} g = [{', '.join(f'{x:.4g}' for x in g)}], float32 w, m, v"
                        f"{', m = v = 0' if t == 1 else ''}, t = {t}, lr={lr:g}, wd={wd:g}")
            got = sub.call("adamw", as_input(w, lib, "float32"), as_input(FP16_G, lib, g_dtype), as_input(m, lib, "float32"),
                           as_input(v, lib, "float32"), t, lr=lr, wd=wd)
            # v first: it holds the square, where float16 breaks; w only shows the consequence.
            judge_state(got, want, like=as_input(w, lib, "float32"), dtypes=("float32",) * 3, scenario=scenario, device=sub.device, order="vmw",
                        dtype_hint=lambda name, got: "w, m and v are float32 here: they stay float32 whatever g's dtype",
                        close=lambda name, hint=hint: {"hint": hint, **tolerances[name]})


@check("float16 gradients with float32 state (NumPy)")
def fp16_gradients_numpy(sub, ctx):
    fp16_gradients(sub, ctx, "numpy")


@check("float16 gradients with float32 state (torch)", devices=("cpu", "cuda"))
def fp16_gradients_torch(sub, ctx):
    fp16_gradients(sub, ctx, "torch")


@check("w, m, v of mixed dtypes keep their own dtypes")
def mixed_dtypes(sub, ctx):
    hyper = {"lr": 1e-2, "wd": 0.1}
    for lib, dtypes, (w, g, m, v) in mixed_cases(ctx):
        w_dt, g_dt, m_dt, v_dt = dtypes
        scenario = f"{LIB[lib]}: w {w_dt}, g {g_dt}, m {m_dt}, v {v_dt}, t = 3, lr=0.01, wd=0.1"
        got = sub.call("adamw", as_input(w, lib, w_dt), as_input(g, lib, g_dt), as_input(m, lib, m_dt), as_input(v, lib, v_dt), 3, **hyper)
        (want,) = torch_adamw_steps(w, m, v, [g], 3, hyper, torch.float64)
        judge_state(got, want, like=as_input(w, lib, w_dt), dtypes=(w_dt, m_dt, v_dt), scenario=scenario, close=lambda name: {"dtype": "float32"},
                    dtype_hint=lambda name, got, dtypes=dtypes: dtype_hint(name, got, dtypes))


def every_first_step(ctx):
    """(what, inputs, t, hyper) of the first adamw call of every check's scenarios, the extreme ones included: large, tiny and zero
    gradients, 0-d and 3-D arrays, float16 gradients, mixed dtypes."""
    zeros = np.zeros_like
    for lib in ("numpy", "torch"):
        yield (f"{LIB[lib]} float64, the first-step case", [as_input(x, lib, "float64") for x in (FIRST_STEP_W, FIRST_STEP_G, zeros(FIRST_STEP_G),
                                                                                              zeros(FIRST_STEP_G))], 1, {"lr": 1e-2, "wd": 0.0})
        yield (f"{LIB[lib]} float64, g = 0", [as_input(x, lib, "float64") for x in (DECAY_W, zeros(DECAY_W), zeros(DECAY_W), zeros(DECAY_W))], 1,
               {"lr": 0.1, "wd": 0.5})
    w, grads = decay_case(ctx)
    yield "NumPy float64, gradients ~ 100 and 0.01", [w, grads[0], zeros(w), zeros(w)], 1, {"lr": 1e-2, "wd": 0.1}
    yield ("torch float64, gradients of 1e-12 to 1e-7", [as_input(x, "torch", "float64") for x in (zeros(TINY_G), tiny_case(ctx)[0], zeros(TINY_G),
                                                                                                   zeros(TINY_G))], 1, {"lr": 1e-3, "eps": 1e-8, "wd": 0.01})
    for configs, dtype in ((LOCKSTEP64, "float64"), (LOCKSTEP32, "float32")):
        for lib, shape, hyper, _, w0, grads in lockstep_cases(ctx, configs, steps=1):
            yield describe(lib, dtype, shape, hyper), [as_input(x, lib, dtype) for x in (w0, grads[0], np.zeros(shape), np.zeros(shape))], 1, hyper
    for dtype, w, grads in device_cases(ctx):
        yield f"torch {dtype}, shape (3, 5)", [as_input(x, "torch", dtype) for x in (w, grads[0], zeros(w), zeros(w))], 1, {"lr": 1e-2, "wd": 0.1}
    for t, w, m, v in fp16_cases(ctx):
        for lib in ("numpy", "torch"):
            for g_dtype in ("float32", "float16"):
                yield (f"{LIB[lib]}: {g_dtype} g with float32 w, m, v, t = {t}",
                       [as_input(w, lib, "float32"), as_input(FP16_G, lib, g_dtype), as_input(m, lib, "float32"), as_input(v, lib, "float32")], t,
                       {"lr": 1e-3, "wd": 0.01})
    for lib, dtypes, values in mixed_cases(ctx):
        yield f"{LIB[lib]}: w, g, m, v of dtypes {', '.join(dtypes)}", [as_input(x, lib, dt) for x, dt in zip(values, dtypes)], 3, {"lr": 1e-2, "wd": 0.1}


@check("inputs are left unchanged")
def inputs_left_unchanged(sub, ctx):
    rng = ctx.rng(8)
    w, g, m = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), 0.1 * rng.standard_normal((3, 4))
    v = 0.01 * rng.random((3, 4))
    for lib, dtype in (("numpy", "float64"), ("torch", "float32")):
        inputs_unchanged(sub, "adamw", *(as_input(x, lib, dtype) for x in (w, g, m, v)), 3, lr=1e-2, wd=0.1,
                         scenario=f"{LIB[lib]} {dtype}, shape (3, 4), t = 3")
    for what, inputs, t, hyper in every_first_step(ctx):  # the inputs of every other check
        inputs_unchanged(sub, "adamw", *inputs, t, **hyper, scenario=what)
