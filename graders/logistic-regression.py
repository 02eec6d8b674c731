"""Checks for `logistic-regression`: a sigmoid that never overflows, and gradient descent on the mean log-loss.

sigmoid is compared with the logistic function computed here in float64 as exp(-logaddexp(0, -z)), which
agrees with torch.sigmoid on float64 to within a few ulp. train is judged against the reference's trajectory,
by a gradient check that needs no trajectory (the step a learner's train takes from its own (w, b) after k
steps, (w_k - w_k+1) / lr, against central differences of the mean log-loss at that (w, b)), and by
convergence to the optimum that Newton's method finds here.
"""

from functools import partial

import numpy as np

from mlprep.grading import (Call, array_of, as_float, assert_close, assert_keeps_precision, assert_returns_like, assert_shape, central_differences, check, control_value,
                            expect_sequence, explained, fail, grid, inputs_from_code, inputs_unchanged, literal, matrix, mistake_hint, on_input,
                            same_values, scenario, shrink_on_failure, sized, when_raised)

NO_WARNINGS = {"over": "raise", "divide": "raise", "invalid": "raise"}
NO_WARNINGS_TEXT = 'np.errstate(over="raise", divide="raise", invalid="raise")'
# (rtol, atol) per input dtype; integers are computed and graded as float64.
SIGMOID_TOLERANCE = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5), "float16": (2e-3, 2e-5)}
GRADIENT_RTOL, GRADIENT_ATOL = 1e-6, 1e-8  # the learner's step against central differences
FD_STEP = 1e-6
FLOAT32_X_RTOL, FLOAT32_X_ATOL = 1e-4, 1e-5  # float32 X may be computed in float32

STABLE_HINT = ("compute exp only of numbers <= 0: 1 / (1 + exp(-z)) where z >= 0 and exp(z) / (1 + exp(z)) where z < 0,"
               " each branch on its own elements (boolean indexing); np.where evaluates both branches on every element")
RESHAPE_HINT = "flatten y first (y = y.reshape(-1)): p has shape (N,), and p - y with y of shape (N, 1) broadcasts to an (N, N) matrix"

CONVERGENCE_SEED, CONVERGENCE_N, CONVERGENCE_LR = 7, 200, 1.0
# The lines that build the convergence data: 3 features, labels drawn from a logistic model (not separable).
CONVERGENCE_CODE = (f"rng = np.random.default_rng({CONVERGENCE_SEED})\nX = rng.standard_normal(({CONVERGENCE_N}, 3))\n"
                    f"y = (rng.random({CONVERGENCE_N}) < 1 / (1 + np.exp(-(X @ np.array([1.5, -2.0, 0.5]) + 0.3)))).astype(float)")
STEP_COUNTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


# -- the math, judge side --------------------------------------------------------------------------
def logistic(z):
    """The logistic function in float64, without overflow: exp(-log(1 + exp(-z)))."""
    return np.exp(-np.logaddexp(0.0, -np.asarray(z, dtype=np.float64)))


def mean_log_loss(X, y, w, b):
    """Mean log-loss of (w, b) on (X, y), stably: log(1 + exp(z)) - y z per row."""
    z = np.asarray(X, dtype=np.float64) @ w + b
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def central_gradient(X, y, w, b):
    """(d loss/dw, d loss/db) of the mean log-loss at (w, b), by central differences in float64."""
    grad = central_differences(lambda theta: mean_log_loss(X, y, theta[:-1], theta[-1]), np.append(np.asarray(w, dtype=np.float64), b), h=FD_STEP)
    return grad[:-1], float(grad[-1])


def mistaken_gradients(X, y, w, b):
    """{what the code does wrong: the gradient (grad_w, then grad_b, in one array) its step then uses} at (w, b)."""
    X = np.asarray(X, dtype=np.float64)
    N, D = X.shape
    z = X @ w + b
    p = logistic(z)
    err = p - y

    def grads(e, w_scale=1.0, b_scale=1.0):
        return np.append(w_scale * (X.T @ e / N), b_scale * e.mean())

    return {
        "the step goes up the gradient, not down: gradient descent subtracts it (w -= lr * ..., b -= lr * ...)": grads(err, -1.0, -1.0),
        "the step for w is N times too large: X.T @ (p - y) must be divided by N, the loss being a mean over the N rows": grads(err, N),
        f"the step for w is divided by D = {D} (the number of features) instead of N = {N} (the number of rows)": grads(err, N / D),
        "b never moves: it needs its own step, b -= lr * mean(p - y)": grads(err, b_scale=0.0),
        ("the gradient carries an extra factor p * (1 - p): with the log-loss, d(loss)/dz is exactly p - y (the sigmoid's"
         " derivative cancels against the log's); p * (1 - p) belongs to a squared-error loss"): grads(err * p * (1 - p)),
        ("the gradient carries a factor p * (1 - z): the sigmoid's derivative is s * (1 - s), not s * (1 - z), and with the"
         " log-loss it cancels anyway: d(loss)/dz is exactly p - y"): grads(err * p * (1 - z)),
    }


def step_hint(X, y, w, b, got_w, got_b):
    """The known mistake whose gradient the learner's step used, or ""."""
    return mistake_hint(np.append(got_w, got_b), mistaken_gradients(X, y, w, b), want=np.append(*central_gradient(X, y, w, b)), rtol=GRADIENT_RTOL,
                        atol=GRADIENT_ATOL, apart=(1e-3, 1e-9), say="Your step matches a known mistake: {}.")


def newton_optimum(X, y, iterations=30):
    """The minimiser (w, b) of the mean log-loss, by Newton's method (here, on non-separable data)."""
    N, D = X.shape
    A = np.hstack([X, np.ones((N, 1))])
    theta = np.zeros(D + 1)
    for _ in range(iterations):
        p = logistic(A @ theta)
        hessian = (A * (p * (1 - p))[:, None]).T @ A / N
        theta -= np.linalg.solve(hessian, A.T @ (p - y) / N)
    return theta[:-1], float(theta[-1])


# -- scenarios (run in the sandbox) and how their inputs read as learner code ----------------------
def _consecutive_repro(interface, X, y, lr, k):
    return Call.code(f"X = {literal(X)}\ny = {literal(y)}\nw{k}, b{k} = train(X, y, {lr!r}, {k})\nw{k + 1}, b{k + 1} = train(X, y, {lr!r}, {k + 1})\n"
                     f"(w{k} - w{k + 1}) / {lr!r}, (b{k} - b{k + 1}) / {lr!r}  # the gradient step {k + 1} used, at (w{k}, b{k})")


@scenario(repro=_consecutive_repro)
def consecutive_steps(module, X, y, lr, k):
    """Scenario: train for k steps and for k + 1 steps (the k + 1st step starts where the first run ends)."""
    return module.train(X, y, lr, k), module.train(X, y, lr, k + 1)


def _step_counts_repro(interface, code, lr, counts):
    return Call.code(f"{code}\nloss = lambda w, b: np.mean(np.logaddexp(0, X @ w + b) - y * (X @ w + b))\n"
                     f"[loss(*train(X, y, {lr!r}, steps)) for steps in {list(counts)}]  # must never rise")


@scenario(repro=_step_counts_repro)
def train_for_step_counts(module, code, lr, counts):
    """Scenario: train on the data `code` builds, once per step count."""
    X, y = inputs_from_code(code, "X", "y")
    return [module.train(X, y, lr, steps) for steps in counts]


# -- judging sigmoid -------------------------------------------------------------------------------
def describe_z(z):
    if z.size <= 3:
        return f"{z.dtype.name} z = {z.tolist()!r}" + (" (0-d)" if z.ndim == 0 else "")
    return f"{z.dtype.name} z of shape {z.shape}, values {float(z.min()):g} to {float(z.max()):g}"


def judge_sigmoid(got, z, scenario, explain=None):
    """The learner's sigmoid(z): a float array of z's shape, at least z's precision, close to the logistic function
    (`explain`: the hint for values that are not, worked out only then)."""
    if z.ndim:
        assert_returns_like(got, z, what="sigmoid's result", scenario=scenario)
    assert_shape(got, z.shape, what="sigmoid's result", scenario=scenario)
    got_dtype = np.asarray(got).dtype
    if got_dtype.kind != "f":
        fail(f"sigmoid's result ({scenario}): expected floats, got an array of dtype {got_dtype.name}."
             + (" It has z's integer dtype, which cannot hold values between 0 and 1: create the result as a float array"
                " (np.empty(z.shape, dtype=np.float64)) or let NumPy promote z (1 / (1 + np.exp(-z)) is float64)" if got_dtype == z.dtype else ""),
             got_dtype=got_dtype.name)
    dtype = z.dtype.name if z.dtype.kind == "f" else "float64"
    assert_keeps_precision(got, dtype, what="sigmoid's result", scenario=scenario)
    rtol, atol = SIGMOID_TOLERANCE[dtype]
    with explained(explain or (lambda: "")):
        assert_close(got, logistic(z), what="sigmoid's result", scenario=scenario, rtol=rtol, atol=atol)


def float16_hint(sub, z):
    """For a float16 z whose sigmoid is wrong: when the same values as float32 come back right, float16 arithmetic lost them."""
    got = control_value(sub, "sigmoid", z.astype(np.float32), read=lambda got: np.asarray(got, dtype=np.float64))
    rtol, atol = SIGMOID_TOLERANCE["float16"]
    if got is None or not same_values(got, logistic(z), rtol=rtol, atol=atol):
        return ""
    return ("The same values as float32 come back right, so it is float16 arithmetic that loses them: compute float16 in float32"
            " (z.astype(np.float32)), as torch does.")


def sigmoid_without_warnings(sub, z, scenario):
    """sigmoid(z) under np.errstate(over/divide/invalid = raise). A warning is a wrong answer here (the contract allows
    none), so it fails the check, with the input that warned and what that input shows about the cause."""
    def warned(message):
        head, _, trace = message.partition("\n")
        why = STABLE_HINT  # a divide or invalid warning, or z of both signs: what z holds says nothing about which exp overflowed
        if "overflow" in head and (z > 0).any() and not (z < 0).any():
            why = (f"z holds only large positive values here, so your code took exp of a large positive number (exp(1000) overflows)"
                   f" somewhere; {STABLE_HINT}")
        elif "overflow" in head and (z < 0).any() and not (z > 0).any():
            why = f"z holds only large negative values here, so exp(-z) overflowed (1 / (1 + np.exp(-z)) is the naive sigmoid); {STABLE_HINT}"
        return f"sigmoid ({scenario}): {head}. {why}." + (f"\nWhere it warned:\n{trace}" if trace else "")

    with when_raised("floating_point", fail_with=warned, what="sigmoid's warning", got=lambda warning: f"FloatingPointError: {warning}"):
        with sub.errstate(**NO_WARNINGS):
            return sub.call("sigmoid", z)


# -- judging train ---------------------------------------------------------------------------------
def read_model(got, D, scenario, precision="float64"):
    """(w as a float64 array of shape (D,), b as a float) from train's result, or a clean fail."""
    w, b = expect_sequence(got, 2, what="train's result (w, b)", scenario=scenario)
    assert_shape(w, (D,), what="w", scenario=scenario)
    if np.asarray(w).dtype.kind != "f":
        fail(f"w ({scenario}): expected floats, got dtype {np.asarray(w).dtype.name}")
    b_value = as_float(b, what="b", scenario=scenario)
    assert_keeps_precision(w, precision, what="w", scenario=scenario)
    assert_keeps_precision(b, precision, what="b", scenario=scenario)
    return np.asarray(w, dtype=np.float64), b_value


def describe_data(X, y, lr, steps):
    return f"{X.dtype.name} X of shape {X.shape}, {y.dtype.name} y of shape {y.shape}, lr={lr!r}, steps={steps}"


def judge_trajectory(got, ctx, X, y, lr, steps, scenario, rtol=None, atol=None, precision="float64"):
    """train(X, y, lr, steps) against the reference's (w, b) on the same input, y flattened."""
    w, b = read_model(got, X.shape[1], scenario, precision)
    want_w, want_b = ctx.reference.train(X.copy(), y.reshape(-1).copy(), lr, steps)
    b_right = np.isclose(b, want_b, rtol=1e-7, atol=1e-7) and b != 0.0
    with explained(lambda: "(b is right, so the step for w is where it differs: w -= lr * X.T @ (p - y) / N.)" if b_right else ""):
        assert_close(w, want_w, what=f"w after {steps} steps", scenario=scenario, rtol=rtol, atol=atol)
    hint = "w is right but b is not: b starts at 0.0 and takes its own step every time, b -= lr * mean(p - y)"
    assert_close(b, want_b, what=f"b after {steps} steps", scenario=scenario, rtol=rtol, atol=atol, hint=hint)


def small_data(rng, N, D, y_dtype="float64"):
    """X of halves (-4 to 4, exact in binary, short in the failing input) and 0/1 labels, both classes present."""
    X = rng.integers(-8, 9, (N, D)) / 2
    y = rng.integers(0, 2, N)
    y[:2] = (0, 1)
    return X, y.astype(y_dtype)


def _trajectories_of(N, D):
    from hypothesis import strategies as st

    return st.tuples(matrix(N, D, grid(-8, 8, 2)), array_of((N,), st.integers(0, 1)), st.sampled_from((0.5, 1.0, 0.1)), st.integers(1, 5))


def small_trajectories():
    """Hypothesis cases (X, y, lr, steps): N 1-6, D 1-3, halves, labels 0/1, a few steps."""
    return sized((1, 6), (1, 3), then=_trajectories_of)


# -- checks: sigmoid -------------------------------------------------------------------------------
def float64_cases(rng):
    return [np.array(0.5), np.array(-3.0), np.array([-30.0, -8.5, -1.0, -0.25, 0.0, 0.25, 1.0, 8.5, 30.0]),
            rng.integers(-16, 17, (3, 4)) / 2, (rng.integers(-16, 17, (5, 1)) / 2), 10 * rng.standard_normal((2, 3, 4))]


DTYPE_CASES = [np.array([-3, -1, 0, 1, 3]), np.array([[-5, 2, 0], [7, -1, 4]], dtype=np.int32),
               np.array([-12.5, -2.0, -0.5, 0.0, 0.5, 2.0, 12.5], dtype=np.float32),
               np.array([-12.0, -8.0, -2.5, 0.0, 2.5, 8.0, 12.0], dtype=np.float16), np.array(-4.0, dtype=np.float16)]


@check("sigmoid matches the logistic function on float64 arrays of any shape", uses=("sigmoid",))
def sigmoid_float64(sub, ctx):
    for z in float64_cases(ctx.rng(1)):
        judge_sigmoid(sub.call("sigmoid", z), z, describe_z(z))


@check("sigmoid of float32, float16 and integer arrays: floats, at the input's precision", uses=("sigmoid",))
def sigmoid_dtypes(sub, ctx):
    for z in DTYPE_CASES:
        half = z.dtype == np.float16
        judge_sigmoid(sub.call("sigmoid", z), z, describe_z(z) + (", graded at rtol 2e-3, atol 2e-5" if half else ""),
                      explain=(lambda z=z: float16_hint(sub, z)) if half else None)


EXTREME_CASES = [  # small first; +1000 alone, then -1000 alone, so the failing input shows which side overflows
    np.array([1000.0]), np.array([-1000.0]), np.array(-1000.0),
    np.array([-1000.0, -745.0, -50.0, -1.0, 0.0, 1.0, 50.0, 745.0, 1000.0]),
    np.array([-1000.0, -100.0, -1.0, 1.0, 100.0, 1000.0], dtype=np.float32),
    np.array([-1000.0, -20.0, 0.0, 20.0, 1000.0], dtype=np.float16),
    np.array([[-1000, -800], [800, 1000]]),
]


@check("sigmoid(±1000) is exactly 1.0 and 0.0, with no overflow, divide or invalid warning", uses=("sigmoid",))
def sigmoid_extremes(sub, ctx):
    for z in EXTREME_CASES:
        scenario = f"{describe_z(z)}, under {NO_WARNINGS_TEXT}"
        got = sigmoid_without_warnings(sub, z, scenario)
        judge_sigmoid(got, z, scenario)
        got_arr, want = np.asarray(got, dtype=np.float64), logistic(z)
        exact = np.abs(z.astype(np.float64)) == 1000
        wrong = exact & (got_arr != want)
        if wrong.any():
            at = np.unravel_index(int(np.flatnonzero(wrong.ravel())[0]), z.shape) if z.ndim else ()
            z_at, got_at = float(z[at]), float(got_arr[at])
            fail(f"sigmoid({z_at:g}) ({scenario}): expected exactly {float(want[at])!r} (the true value, {'5e-435' if z_at < 0 else '1 - 5e-435'},"
                 f" rounds to it), got {got_at!r} at index {tuple(int(i) for i in at) if at else '(scalar)'}.{clipping_hint(z_at, got_at)}",
                 what="sigmoid's result", first_index=str(tuple(int(i) for i in at)), expected=repr(float(want[at])), got=repr(got_at))


def clipping_hint(z, got):
    """The bound z was clipped to, when the learner's value is the sigmoid at a common clipping bound; else ""."""
    for bound in (10, 15, 20, 30, 35, 40, 50, 60, 88, 100, 250, 300, 500, 700, 708, 709):
        for dtype in (np.float64, np.float32):  # the bound's sigmoid as either dtype holds it
            if got != 0.0 and np.isclose(got, float(logistic(np.copysign(bound, z)).astype(dtype)), rtol=1e-6, atol=0.0):
                return (f" That is sigmoid({np.copysign(bound, z):g}): z was clipped to ±{bound}, which keeps exp finite but leaves a wrong"
                        " tail; the two-branch formula gives the exact value without clipping.")
    return ""


@check("sigmoid leaves z unchanged", uses=("sigmoid",))
def sigmoid_inputs_unchanged(sub, ctx):
    # Then every input the other checks send, ±1000 included: a clip written into z (np.clip(z, -800, 800, out=z)) changes
    # nothing at ordinary values, and sigmoid(±800) is as exact as sigmoid(±1000).
    for z in (np.array([-2.0, -0.5, 0.0, 1.5, 3.0]), np.array([[-1.0, 4.0], [2.5, -6.0]], dtype=np.float32), *float64_cases(ctx.rng(1)), *DTYPE_CASES,
              *EXTREME_CASES):
        inputs_unchanged(sub, "sigmoid", z, scenario=describe_z(z))


# -- checks: train ---------------------------------------------------------------------------------
def judge_step(got_before, got_after, X, y, lr, scenario, k):
    """The step from (w_k, b_k) to (w_k+1, b_k+1), as a gradient, against central differences at (w_k, b_k)."""
    D = X.shape[1]
    w0, b0 = read_model(got_before, D, scenario) if got_before is not None else (np.zeros(D), 0.0)
    w1, b1 = read_model(got_after, D, scenario)
    for steps, w, b in ((k, w0, b0), (k + 1, w1, b1)):
        if not (np.isfinite(w).all() and np.isfinite(b)):
            fail(f"train's result ({scenario}): expected finite w and b after {steps} steps, got w = {w.tolist()}, b = {b!r}")
    got_w, got_b = (w0 - w1) / lr, (b0 - b1) / lr
    want_w, want_b = central_gradient(X, y, w0, b0)
    where = "w = 0, b = 0" if k == 0 else f"your (w, b) after {k} steps"
    with explained(lambda: step_hint(X, y, w0, b0, got_w, got_b)):
        assert_close(got_w, want_w, what=f"the gradient for w that step {k + 1} used, (w_before - w_after) / lr, against central differences"
                     f" of the mean log-loss at {where}", scenario=scenario, rtol=GRADIENT_RTOL, atol=GRADIENT_ATOL)
        assert_close(got_b, want_b, what=f"the gradient for b that step {k + 1} used, (b_before - b_after) / lr, against central differences"
                     f" at {where}", scenario=scenario, rtol=GRADIENT_RTOL, atol=GRADIENT_ATOL)


# The train checks' inputs, (X, y, lr, steps), small to large (train_inputs_unchanged sends every one of them again).
def first_step_cases(rng):
    return [(*small_data(rng, N, D, y_dtype), lr, 1) for N, D, lr, y_dtype in ((6, 2, 0.5, "float64"), (5, 3, 1.0, "int64"))]


def later_step_cases(rng):
    """(X, y, lr, k): step k + 1 is judged."""
    return [(*small_data(rng, N, D), lr, k) for N, D, lr, k in ((6, 2, 1.0, 3), (6, 3, 2.0, 10), (40, 4, 1.0, 25))]


def reference_cases(rng):
    cases = []
    for N, D, lr, steps in ((4, 2, 0.5, 3), (7, 3, 1.0, 20), (50, 4, 0.3, 200), (300, 6, 0.1, 500)):
        X, y = small_data(rng, N, D)
        cases.append((rng.standard_normal((N, D)) if N > 10 else X, y, lr, steps))
    return cases


def column_cases(rng):
    """(X, y of shape (N,), lr, steps): sent with y of shape (N, 1)."""
    return [(*small_data(rng, N, D, y_dtype), lr, steps) for N, D, lr, steps, y_dtype in ((6, 2, 0.5, 5, "float64"), (7, 3, 1.0, 10, "int64"),
                                                                                          (40, 3, 0.5, 50, "float64"))]


def dtype_cases(rng):
    """Integer X and y, then float32 X."""
    X_int, y_int = rng.integers(0, 6, (6, 2)), np.array([0, 1, 1, 0, 1, 0])
    X32 = rng.standard_normal((30, 3)).astype(np.float32)
    return [(X_int, y_int, 0.5, 10), (X32, (rng.random(30) < 0.5).astype(np.float64), 0.5, 50)]


@check("one step from w = 0, b = 0 is -lr times the log-loss gradient (central differences)", uses=("train",))
def first_step(sub, ctx):
    for X, y, lr, _ in first_step_cases(ctx.rng(2)):
        scenario = describe_data(X, y, lr, 1) + f", relative tolerance {GRADIENT_RTOL:g}"
        judge_step(None, sub.call("train", X, y, lr, 1), X, y.astype(np.float64), lr, scenario, 0)


@check("every later step follows the log-loss gradient p - y (central differences at your own w, b)", uses=("train",))
def later_steps(sub, ctx):
    for X, y, lr, k in later_step_cases(ctx.rng(3)):
        scenario = f"{describe_data(X, y, lr, k + 1)}, relative tolerance {GRADIENT_RTOL:g}"
        before, after = expect_sequence(sub.run(consecutive_steps, X, y, lr, k), 2, what="the two runs", scenario=scenario)
        judge_step(before, after, X, y, lr, scenario, k)


@check("train matches the reference's (w, b): float64, several N, D, lr and steps", uses=("train",))
def matches_reference(sub, ctx):
    def verify(case):
        X, y, lr, steps = case
        judge_trajectory(sub.call("train", X, y, lr, steps), ctx, X, y, lr, steps, describe_data(X, y, lr, steps))

    with shrink_on_failure(sub, small_trajectories, verify):
        for case in reference_cases(ctx.rng(4)):
            verify(case)


def flattened_hint(sub, X, y, lr, steps, scenario, head):
    """For train raising on y of shape (N, 1): the error's first line, and why, when the same call with y flattened returns."""
    if sub.control("train", X, y, lr, steps) is None:
        return head
    return f"{scenario}: {head}; the same call with y of shape ({len(y)},) returns, so {RESHAPE_HINT}."


@check("y of shape (N, 1) gives the same w, of shape (D,), and float b as y of shape (N,)", uses=("train",),
       edge="`y`: a NumPy array of N labels 0 and 1, int or float, of shape (N,) or (N, 1): both give the same (w, b).")
def column_labels(sub, ctx):
    for X, y, lr, steps in column_cases(ctx.rng(5)):
        N, D = X.shape
        y_col = y.reshape(-1, 1)
        scenario = describe_data(X, y_col, lr, steps)
        with when_raised(reword=partial(flattened_hint, sub, X, y, lr, steps, scenario)):
            got = sub.call("train", X, y_col, lr, steps)
        w = expect_sequence(got, 2, what="train's result (w, b)", scenario=scenario)[0]
        shape = np.shape(w) if isinstance(w, np.ndarray) else None
        if shape is not None and len(shape) == 2 and shape[-1] == N:
            fail(f"w ({scenario}): expected shape ({D},), got shape {shape}; {RESHAPE_HINT}", expected_shape=[D], got_shape=list(shape))
        judge_trajectory(got, ctx, X, y_col, lr, steps, scenario)


@check("integer X and y, float32 X: w of shape (D,) and float b, at X's precision", uses=("train",),
       edge="`X`: an (N, D) NumPy array of float64, float32 or integer dtype.")
def input_dtypes(sub, ctx):
    (X_int, y_int, _, _), (X32, y, _, _) = dtype_cases(ctx.rng(6))
    judge_trajectory(sub.call("train", X_int, y_int, 0.5, 10), ctx, X_int, y_int, 0.5, 10, describe_data(X_int, y_int, 0.5, 10))
    scenario = describe_data(X32, y, 0.5, 50) + f", graded at rtol {FLOAT32_X_RTOL:g}, atol {FLOAT32_X_ATOL:g} (float32 arithmetic allowed)"
    judge_trajectory(sub.call("train", X32, y, 0.5, 50), ctx, X32, y, 0.5, 50, scenario, rtol=FLOAT32_X_RTOL, atol=FLOAT32_X_ATOL,
                     precision="float32")


@check("converges: the log-loss never rises with more steps and reaches the optimum", uses=("train",))
def converges(sub, ctx):
    code = CONVERGENCE_CODE
    X, y = inputs_from_code(code, "X", "y")
    scenario = f"the data of `{code.splitlines()[1]}` with labels from a logistic model (seed {CONVERGENCE_SEED}), lr={CONVERGENCE_LR!r}"
    runs = expect_sequence(sub.run(train_for_step_counts, code, CONVERGENCE_LR, STEP_COUNTS), len(STEP_COUNTS), what="the runs",
                           scenario=scenario)
    previous, previous_loss = 0, float(np.log(2.0))  # w = 0, b = 0: p = 0.5 everywhere
    for steps, got in zip(STEP_COUNTS, runs):
        w, b = read_model(got, X.shape[1], f"{scenario}, steps={steps}")  # the last: after STEP_COUNTS[-1] steps
        loss = mean_log_loss(X, y, w, b)
        if not np.isfinite(loss) or loss > previous_loss + 1e-12:
            hint = step_hint(X, y, np.zeros(3), 0.0, -w / CONVERGENCE_LR, -b / CONVERGENCE_LR) if steps == 1 else ""
            fail(f"mean log-loss ({scenario}): {previous_loss:.9g} after {previous} steps, {loss:.9g} after {steps}: it rose. Each step must"
                 f" go down the gradient of the mean log-loss, whose size lr = {CONVERGENCE_LR:g} keeps the steps stable here. {hint}".strip(),
                 what="mean log-loss", got=f"{loss:.9g}")
        previous, previous_loss = steps, loss
    want_w, want_b = newton_optimum(X, y)
    best = mean_log_loss(X, y, want_w, want_b)
    with on_input(Call.code(f"{code}\ntrain(X, y, {CONVERGENCE_LR!r}, {STEP_COUNTS[-1]})  # the optimum (Newton's method):"
                            f" w = {np.round(want_w, 6).tolist()}, b = {want_b:.6f}")):
        assert_close(w, want_w, what=f"w after {STEP_COUNTS[-1]} steps (the optimum, by Newton's method)", scenario=f"{scenario}, loss"
                     f" {previous_loss:.9g}, optimum {best:.9g}", rtol=0.0, atol=1e-6)
        assert_close(b, want_b, what=f"b after {STEP_COUNTS[-1]} steps (the optimum)", scenario=scenario, rtol=0.0, atol=1e-6)


@check("train leaves X and y unchanged", uses=("train",))
def train_inputs_unchanged(sub, ctx):
    X, y = small_data(ctx.rng(8), 6, 2)
    runs = [(X, y, 0.5, 5), (X, y.reshape(-1, 1), 0.5, 5)]
    # Then every input the other checks send.
    runs += [*first_step_cases(ctx.rng(2)), *((X, y, lr, k + 1) for X, y, lr, k in later_step_cases(ctx.rng(3))), *reference_cases(ctx.rng(4)),
             *((X, y.reshape(-1, 1), lr, steps) for X, y, lr, steps in column_cases(ctx.rng(5))), *dtype_cases(ctx.rng(6)),
             (*inputs_from_code(CONVERGENCE_CODE, "X", "y"), CONVERGENCE_LR, STEP_COUNTS[-1])]
    for X, y, lr, steps in runs:
        inputs_unchanged(sub, "train", X, y, lr, steps, scenario=describe_data(X, y, lr, steps))
