"""Checks for `mlp-backprop`. Every case is a few lines of NumPy code, run in the sandbox before the learner's
forward and backward (always together: the cache is the learner's business) and here for the numbers; its failing
input is that code and the two calls. Gradients are judged in float64 against central differences of the mean
softmax cross-entropy (random cases keep every pre-activation 1e-3 from ReLU's kink) and against torch autograd
(torch.relu: the derivative at exactly 0 is 0); the two must agree, or the grader reports its own defect."""

import numpy as np
import torch

from mlprep.grading import (Call, CheckFailed, GraderDefect, Snapshot, array_of, assert_close, assert_keeps_precision, central_differences, check,
                            describe_value, expect_record, explained, fail, fail_if_changed, grid, logsumexp, mistake_hint, on_input, outcome, run_code,
                            same_values, scenario, shrink_on_failure, sized)

KEYS = ("W1", "b1", "W2", "b2")
FD_STEP = 1e-5
FD_TOL = {"rtol": 1e-6, "atol": 1e-8}  # central differences at h = 1e-5 are good to ~1e-10 here
FLOAT32_TOL = {"rtol": 1e-4, "atol": 1e-5}
KINK_MARGIN = 1e-3  # random cases keep every pre-activation this far from 0 (central differences need it)


# ---------------------------------------------------------------------------------------------
# Cases: NumPy code that defines params, X and dout (and y, for a cross-entropy dout)
# ---------------------------------------------------------------------------------------------
CE_DOUT_CODE = ("logits = np.maximum(X @ params['W1'] + params['b1'], 0) @ params['W2'] + params['b2']\n"
                "p = np.exp(logits - logits.max(axis=1, keepdims=True))\np /= p.sum(axis=1, keepdims=True)\n"
                "p[np.arange(len(y)), y] -= 1\ndout = p / len(y)  # d(mean softmax cross-entropy)/d(scores)")


def random_case(seed, N, D, H, C, dout="ce", dtype="float64"):
    cast = "" if dtype == "float64" else f".astype(np.{dtype})"
    lines = [f"rng = np.random.default_rng({seed})",
             f"params = {{'W1': rng.standard_normal(({D}, {H})){cast}, 'b1': rng.standard_normal({H}){cast},",
             f"          'W2': rng.standard_normal(({H}, {C})){cast}, 'b2': rng.standard_normal({C}){cast}}}",
             f"X = rng.standard_normal(({N}, {D})){cast}"]
    if dout == "ce":
        lines += [f"y = rng.integers(0, {C}, {N})", CE_DOUT_CODE + ("" if dtype == "float64" else f"\ndout = dout{cast}")]
    else:
        lines.append(f"dout = rng.standard_normal(({N}, {C})){cast}  # any upstream gradient")
    return "\n".join(lines)


KINK_CASE = """params = {'W1': np.array([[1.0, -1.0, 0.5], [0.5, 0.25, -0.25]]), 'b1': np.array([-2.0, 1.0, 0.0]),
          'W2': np.array([[1.0, -0.5, 0.5], [2.0, 0.5, -1.0], [-1.0, 1.5, 0.25]]), 'b2': np.array([0.25, -0.25, 0.0])}
X = np.array([[1.0, 2.0], [0.5, -1.0]])  # X @ W1 + b1 = [[0, 0.5, 0], [-2, 0.25, 0.5]]: two pre-activations exactly 0
dout = np.array([[0.25, -0.5, 0.25], [-0.25, 0.25, 0.0]])"""

HAND_CASE = """params = {'W1': np.array([[1.0, -2.0], [0.5, 1.0]]), 'b1': np.array([0.5, -0.5]),
          'W2': np.array([[2.0, -1.0], [1.0, 3.0]]), 'b2': np.array([0.0, 1.0])}
X = np.array([[1.0, 1.0], [2.0, -1.0], [-1.0, 0.5]])  # X @ W1 + b1 = [[2, -1.5], [2, -5.5], [-0.25, 2]]
dout = np.array([[0.5, -0.5], [-0.25, 0.25], [0.25, -0.25]])"""


def build(code):
    case = run_code(code)
    return case["params"], case["X"], case["dout"], case.get("y")


def _plain(result):
    """The graded part of backward's result: the four keys (the rest is ignored), or what came back."""
    return {k: result[k] for k in KEYS if k in result} if isinstance(result, dict) else result


def _repro(code, show="grads"):
    return Call.code(f"{code}\nscores, cache = forward(params, X)\ngrads = backward(params, cache, dout)\n{show}")


@scenario(repro=lambda interface, code: _repro(code))
def forward_backward(module, code):
    """Scenario: forward(params, X), backward on its cache; the scores (copied before backward runs), the
    gradients, and which inputs were modified."""
    params, X, dout, _ = build(code)
    changed = _changes(params, X, dout)
    out = module.forward(params, X)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return {"forward": out}
    scores, cache = out
    scores = np.array(scores, copy=True) if isinstance(scores, np.ndarray) else scores
    grads = module.backward(params, cache, dout)
    return {"scores": scores, "grads": _plain(grads), "changed": changed()}


def _changes(params, X, dout):
    """Sandbox side: a function naming the inputs changed since now: arrays written into, or else entries of params
    replaced by other values (or the dict's keys changed)."""
    entries, whole, objects = Snapshot(**{f"params[{k!r}]": v for k, v in params.items()}, X=X, dout=dout), Snapshot(params=params), dict(params)

    def changed():
        replaced = [f"params[{k!r}]" for k, v in objects.items() if params.get(k) is not v]
        return entries.changed() or (whole.changed() and replaced) or whole.changed()
    return changed


@scenario(repro=lambda interface, code: _repro(code, "params, X, dout"))
def changed_by_both(module, code):
    """Scenario: forward, then backward on its cache, whatever they return or raise; the inputs they changed."""
    params, X, dout, _ = build(code)
    changed = _changes(params, X, dout)
    outcome(lambda: module.backward(params, module.forward(params, X)[1], dout))
    return changed()


@scenario(repro=lambda interface, code: Call.code(f"{code}\nscores, cache = forward(params, X)\nscores"))
def forward_only(module, code):
    """Scenario: forward(params, X) alone; its scores (backward is not called)."""
    params, X, _, _ = build(code)
    out = module.forward(params, X)
    return {"scores": out[0]} if isinstance(out, (tuple, list)) and len(out) == 2 else {"forward": out}


@scenario(repro=lambda interface, first, extra: Call.code(
    f"{first}\nscores, cache = forward(params, X)\nfirst = (params, X, dout, cache)\n{extra}\nforward(params, X)  # a second forward"
    "\nparams, X, dout, cache = first\nbackward(params, cache, dout)  # must be the gradients of the FIRST forward"))
def two_forwards(module, first, extra):
    """Scenario: forward on the first case; forward on the case made by running `extra` after it (another batch
    for the same network); then backward on the first forward's cache."""
    params1, X1, dout1, _ = build(first)
    out = module.forward(params1, X1)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return {"forward": out}
    params2, X2, _, _ = build(f"{first}\n{extra}")
    module.forward(params2, X2)
    return _plain(module.backward(params1, out[1], dout1))


# ---------------------------------------------------------------------------------------------
# Expected values (here, float64) and the known mistakes
# ---------------------------------------------------------------------------------------------
def float64_case(code):
    params, X, dout, y = build(code)
    return {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}, np.asarray(X, dtype=np.float64), np.asarray(dout, dtype=np.float64), y


def true_forward(params, X):
    a = X @ params["W1"] + params["b1"]
    h = np.maximum(a, 0)
    return a, h, h @ params["W2"] + params["b2"]


def torch_grads(params, X, dout):
    """torch autograd of sum(scores * dout), torch.relu's derivative at 0 being 0."""
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    scores = torch.relu(torch.tensor(X) @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    (scores * torch.tensor(dout)).sum().backward()
    return {k: p[k].grad.numpy() for k in KEYS}


def difference_grads(params, X, y):
    """Central differences of the mean softmax cross-entropy, every entry of every parameter."""
    def mean_ce(key, value):
        _, _, logits = true_forward({**params, key: value}, X)
        return float(np.mean(logsumexp(logits, axis=1) - logits[np.arange(len(y)), y]))

    return {key: central_differences(lambda value, key=key: mean_ce(key, value), params[key], FD_STEP) for key in KEYS}


def mistakes(params, X, dout):
    """{what went wrong: the gradients it gives} for the known mistakes that apply to these shapes."""
    a, h, scores = true_forward(params, X)
    N, D = X.shape
    H, C = params["W2"].shape
    W2 = params["W2"]

    def grads(dout=dout, dh=None, mask=None, dW2=None, dW1_input=X, bias=np.sum, dW1_transposed=False):
        dh = dout @ W2.T if dh is None else dh
        da = dh * ((a > 0) if mask is None else mask)
        dW1 = (da.T @ dW1_input) if dW1_transposed else dW1_input.T @ da
        return {"W1": dW1, "b1": bias(da, axis=0), "W2": h.T @ dout if dW2 is None else dW2, "b2": bias(dout, axis=0)}

    found = {
        "the ReLU mask is all ones (h >= 0 holds everywhere, since h = relu(a)): mask the gradient with a > 0": grads(mask=np.ones_like(a)),
        "the ReLU mask is a >= 0, which lets the gradient through at a pre-activation of exactly 0; ReLU's derivative there is 0"
        " (as in torch): use a > 0": grads(mask=(a >= 0)),
        "dout was divided by N again; it is already the gradient of the mean loss": grads(dout=dout / N),
        "dW2 was computed from the pre-activation a instead of h = relu(a): dW2 = h.T @ dout": grads(dW2=a.T @ dout),
        "the bias gradients are averaged over the batch; b is added to every row, so its gradient is the sum over the rows":
            grads(bias=np.mean),
    }
    if H == C:
        found["a transpose is missing: the gradient flowing into the hidden layer is dout @ W2.T (N, H), not dout @ W2"] = grads(dh=dout @ W2)
        found["the ReLU mask comes from the scores (the second layer's output); it must come from the first layer's pre-activation,"
              " a = X @ W1 + b1"] = grads(mask=(scores > 0))
    if D == H:
        found["dW1 was computed from the pre-activation a instead of the input X: dW1 = X.T @ da"] = grads(dW1_input=a)
        found["dW1 was computed from the hidden activation h instead of the input X: dW1 = X.T @ da"] = grads(dW1_input=h)
        found["dW1 is transposed (da.T @ X): dW1 = X.T @ da has W1's shape (D, H)"] = grads(dW1_transposed=True)
    return found


def gradient_hint(key, got, want, params, X, dout):
    return mistake_hint(got, {text: g[key] for text, g in mistakes(params, X, dout).items()}, want=want, rtol=1e-6, atol=1e-9, first=True,
                        say=f"Your {key} gradient is exactly what you get when {{}}.")


# ---------------------------------------------------------------------------------------------
# Judging one forward-backward run
# ---------------------------------------------------------------------------------------------
def describe(params, X, dtype="float64"):
    N, D = X.shape
    H, C = params["W2"].shape
    return f"{dtype}, N={N}, D={D}, H={H}, C={C}"


def run(sub, code, scenario_fn=forward_backward):
    got = sub.run(scenario_fn, code)
    params, X, _, _ = float64_case(code)
    scenario = describe(params, X, np.asarray(build(code)[1]).dtype.name)
    with on_input(Call.code(f"{code}\nforward(params, X)")):
        expect_record(got, what="forward/backward", scenario=scenario)
        if "forward" in got:
            fail(f"forward(params, X) ({scenario}): expected a pair (scores, cache), got {describe_value(got['forward'])}")
    return got, scenario


def judge_scores(got, code, scenario, tolerance=None):
    params, X, _, _ = float64_case(code)
    _, _, want = true_forward(params, X)
    with on_input(Call.code(f"{code}\nscores, cache = forward(params, X)\nscores")):
        scores = got["scores"]
        if not isinstance(scores, np.ndarray):
            fail(f"scores from forward ({scenario}): expected a NumPy array of shape {want.shape}, got {describe_value(scores)}")
        assert_keeps_precision(scores, np.asarray(build(code)[1]).dtype.name, what="scores from forward", scenario=scenario)
        hint = ""
        if scores.shape == want.shape and np.allclose(scores, np.maximum(want, 0), rtol=1e-6, atol=1e-9) and (want < 0).any():
            hint = "Your scores are relu(h @ W2 + b2): the second layer is linear; the scores are not passed through ReLU."
        assert_close(scores, want, what="scores from forward", scenario=scenario, hint=hint, **(tolerance or {}))


def judge_grads(got, code, scenario, want, against, tolerance=None, shown=None):
    params, X, dout, _ = float64_case(code)
    input_dtype = np.asarray(build(code)[1]).dtype.name
    grads = got["grads"] if isinstance(got, dict) and "grads" in got else got
    with on_input(shown or _repro(code, "grads")):
        if not isinstance(grads, dict):
            fail(f"backward ({scenario}): expected a dict of gradients with keys {list(KEYS)}, got {describe_value(grads)}")
        missing = [k for k in KEYS if k not in grads]
        if missing:
            fail(f"backward ({scenario}): the gradients dict has no {', '.join(map(repr, missing))}; return one gradient per parameter,"
                 f" keyed as in params: {list(KEYS)}")
        for key in KEYS:
            what, g = f"d(loss)/d({key}) from backward", grads[key]
            if not isinstance(g, np.ndarray):
                fail(f"{what} ({scenario}): expected a NumPy array of shape {want[key].shape}, got {describe_value(g)}")
            if g.shape != want[key].shape:
                fail(f"{what} ({scenario}): expected shape {want[key].shape}, the shape of {key}, got {g.shape}.{_shape_hint(key, g.shape, params, X)}",
                     expected_shape=list(want[key].shape), got_shape=list(g.shape))
            assert_keeps_precision(g, input_dtype, what=what, scenario=scenario)
            with explained(lambda key=key, g=g: gradient_hint(key, g, want[key], params, X, dout)):
                try:
                    assert_close(g, want[key], what=what, scenario=f"{scenario}, against {against}", **(tolerance or {"dtype": "float64"}))
                except CheckFailed as failure:
                    failure.details["numbers"] = int(X.size + dout.size + sum(v.size for v in params.values()))  # see large_case
                    raise


def _shape_hint(key, shape, params, X):
    want = params[key].shape
    if len(want) == 1 and shape == (X.shape[0],) + want:
        return f" It has one row per example: {key} is added to every row, so its gradient is the sum over the batch (axis 0)."
    if len(want) == 2 and shape == want[::-1]:
        return f" It is transposed: the gradient of {key} has {key}'s own shape."
    return " A gradient has the shape of the thing it is the gradient of."


def verify_against_torch(sub, code):
    got, scenario = run(sub, code)
    params, X, dout, _ = float64_case(code)
    judge_grads(got, code, scenario, torch_grads(params, X, dout), "torch autograd")


def verify_against_differences(sub, code):
    params, X, dout, y = float64_case(code)
    a, _, _ = true_forward(params, X)
    if np.abs(a).min() < KINK_MARGIN:
        raise GraderDefect(f"a random case has a pre-activation within {KINK_MARGIN:g} of ReLU's kink; choose another seed ({code[:40]})")
    want, exact = difference_grads(params, X, y), torch_grads(params, X, dout)
    if not all(np.allclose(exact[key], want[key], **FD_TOL) for key in KEYS):
        raise GraderDefect(f"central differences disagree with torch autograd ({describe(params, X)})")
    got, scenario = run(sub, code)
    judge_grads(got, code, scenario, want, f"central differences of the mean softmax cross-entropy (h = {FD_STEP:g})", FD_TOL)


def large_case(failure):
    """Worth shrinking: a failure on a case of more than 40 numbers (the hand-built ones and the first random ones are smaller)."""
    return failure.details.get("numbers", 0) > 40


def _case_code(arrays):
    W1, b1, W2, b2, X, dout = arrays
    return ("params = {" + ", ".join(f"'{k}': np.array({v.tolist()})" for k, v in zip(KEYS, (W1, b1, W2, b2))) + "}\n"
            f"X = np.array({X.tolist()})\ndout = np.array({dout.tolist()})")


def _arrays_of_sizes(N, D, H, C):
    from hypothesis import strategies as st

    halves = grid(-4, 4, 2)
    return st.tuples(*(array_of(shape, halves) for shape in ((D, H), (H,), (H, C), (C,), (N, D), (N, C)))).map(_case_code)


def small_cases():
    """Hypothesis cases: N, D, H, C from 1 to 4; params, X and dout in halves from -2 to 2 (so pre-activations
    are often exactly 0: judged against torch autograd, ReLU'(0) = 0)."""
    return sized((1, 4), (1, 4), (1, 4), (1, 4), then=_arrays_of_sizes)


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
FORWARD_CASES = (HAND_CASE, KINK_CASE, random_case(401, 5, 4, 6, 3), random_case(302, 32, 10, 16, 5))
DIFFERENCE_CASES = (random_case(110, 2, 3, 3, 3), random_case(11, 1, 2, 4, 3), random_case(112, 5, 4, 6, 3), random_case(14, 16, 10, 32, 6))
AUTOGRAD_CASES = (HAND_CASE, random_case(20, 3, 4, 4, 4, dout="random"), random_case(21, 1, 1, 1, 1, dout="random"),
                  random_case(322, 7, 3, 5, 2, dout="random"), random_case(23, 64, 8, 16, 10), random_case(24, 32, 8, 16, 10, dout="random"))
CACHE_CASE = random_case(330, 4, 3, 3, 3)
FLOAT32_CASES = (random_case(140, 3, 4, 4, 4, dtype="float32"), random_case(41, 16, 8, 12, 4, dtype="float32"))


@check("forward: scores = relu(X @ W1 + b1) @ W2 + b2")
def forward_scores(sub, ctx):
    for code in FORWARD_CASES:
        got, scenario = run(sub, code, forward_only)
        judge_scores(got, code, scenario)


@check("backward: every gradient passes a float64 central-difference check")
def gradient_check(sub, ctx):
    with shrink_on_failure(sub, small_cases, lambda code: verify_against_torch(sub, code), worth_shrinking=large_case):
        for code in DIFFERENCE_CASES:
            verify_against_differences(sub, code)


@check("backward matches torch autograd (random shapes, any upstream dout)")
def matches_autograd(sub, ctx):
    with shrink_on_failure(sub, small_cases, lambda code: verify_against_torch(sub, code), worth_shrinking=large_case):
        for code in AUTOGRAD_CASES:
            verify_against_torch(sub, code)


@check("ReLU kink: a pre-activation of exactly 0 passes no gradient",
       edge="At exactly `a = 0` the derivative is undefined; the convention (torch's autograd, and this exercise) is 0.")
def relu_kink(sub, ctx):
    params, X, dout, _ = float64_case(KINK_CASE)
    a, _, _ = true_forward(params, X)
    if (a == 0).sum() != 2:
        raise GraderDefect("the kink case no longer has pre-activations of exactly 0")
    got, scenario = run(sub, KINK_CASE)
    judge_grads(got, KINK_CASE, scenario + ", X @ W1 + b1 exactly 0 at (0, 0) and (0, 2)", torch_grads(params, X, dout),
                "torch autograd (torch.relu's derivative at 0 is 0)")


@check("backward uses the cache it is given (two forwards, then backward on the first)")
def cache_is_used(sub, ctx):
    first, extra = CACHE_CASE, "X = rng.standard_normal((4, 3))  # another batch for the same network"
    got = sub.run(two_forwards, first, extra)
    params, X, dout, _ = float64_case(first)
    if isinstance(got, dict) and "forward" in got:
        fail(f"forward(params, X) ({describe(params, X)}): expected a pair (scores, cache), got {describe_value(got['forward'])}",
             failing_input=Call.code(f"{first}\nforward(params, X)"))
    latest = torch_grads(params, float64_case(f"{first}\n{extra}")[1], dout)
    with explained(lambda: "These are the gradients for the SECOND forward call's X: backward must compute from the cache it is passed, not"
                           " from state kept from the latest forward call." if same_values(got, latest, rtol=1e-6, atol=1e-9) else ""):
        judge_grads(got, first, describe(params, X) + ", backward on the cache of the first of two forward calls", torch_grads(params, X, dout),
                    "torch autograd", shown=two_forwards.repro(None, first, extra))


@check("float32 inputs (rtol 1e-4, atol 1e-5)")
def float32_inputs(sub, ctx):
    for code in FLOAT32_CASES:
        got, scenario = run(sub, code)
        judge_scores(got, code, scenario, FLOAT32_TOL)
        params, X, dout, _ = float64_case(code)
        judge_grads(got, code, scenario, torch_grads(params, X, dout), "torch autograd in float64 on the same numbers", FLOAT32_TOL)


@check("params, X and dout are left unchanged")
def inputs_unchanged(sub, ctx):
    fix = "compute new arrays (a = X @ W1 + b1, not a += ...; no out=..., no writes into the inputs)"
    for code in (HAND_CASE, random_case(50, 4, 3, 3, 3)):
        got, scenario = run(sub, code)
        fail_if_changed(got.get("changed") or [], who="forward/backward", where=scenario, failing_input=_repro(code, "params, X, dout"), fix=fix)
    for code in dict.fromkeys(FORWARD_CASES + DIFFERENCE_CASES + AUTOGRAD_CASES + (CACHE_CASE,) + FLOAT32_CASES):  # every other check's cases
        params, X, _, _ = build(code)
        fail_if_changed(sub.run(changed_by_both, code), who="forward/backward", where=describe(params, X, np.asarray(X).dtype.name), fix=fix)
