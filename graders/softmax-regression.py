"""Checks for `softmax-regression`: softmax_ce's loss and gradient, and full-batch gradient descent.

The loss is compared with torch's F.cross_entropy in float64; the gradient with central differences of the
true mean cross-entropy, and at logits of +-1e4, where differences lose their digits, with torch autograd's
gradient of F.cross_entropy. `train` is compared with the contract's gradient descent run here; then it must
fit separable data (every training point classified right), which is behaviour, not a trajectory.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from mlprep.grading import (Call, GraderDefect, all_finite, array_of, as_float, assert_close, assert_finite, assert_keeps_precision, assert_shape, central_differences,
                            check, expect_sequence, explained, fail, grid, inputs_from_code, inputs_unchanged, log_softmax, logsumexp, matrix,
                            mistake_hint, scenario, shifted_logits_hint, shrink_on_failure, sized)

FD_STEP = 1e-5
FD_RTOL, FD_ATOL = 1e-6, 1e-8  # central differences at h = 1e-5 are good to ~1e-10 here
OVERFLOW_FIX = "subtract each row's maximum from the logits before exp, for the loss and for the softmax in the gradient"


# -- expected values and known mistakes (judge side) -----------------------------------------------
def torch_loss_and_grad(logits, y):
    z = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    loss = F.cross_entropy(z, torch.as_tensor(y, dtype=torch.long))
    loss.backward()
    return float(loss.detach()), z.grad.numpy()


def mean_ce(logits, y):
    return float(np.mean(logsumexp(logits, axis=1) - logits[np.arange(len(y)), y]))


def loss_mistakes(logits, y):
    k, rows = logits.shape[1], np.arange(len(y))
    logp = logits - logsumexp(logits, axis=1, keepdims=True)
    logp_y = logp[rows, y]
    found = {"the loss is summed over the rows; it is their mean": -logp_y.sum(),
             "the loss is -log(p + 1e-12), which caps a row's loss near -log(1e-12) = 27.6; compute it from the log-probabilities,"
             " logsumexp(z) - z[y]": -np.log(np.exp(logp_y) + 1e-12).mean(),
             "the label's log-probability is taken one class off (at y - 1)": -logp[rows, (y - 1) % k].mean()}
    if k > 2:  # with 2 classes, y + 1 and y - 1 are the same column
        found["the label's log-probability is taken one class off (at y + 1)"] = -logp[rows, (y + 1) % k].mean()
    return found


def grad_mistakes(logits, y):
    n, k = logits.shape
    p, rows = np.exp(log_softmax(logits, axis=1)), np.arange(n)

    def minus_one_hot(labels):
        out = p.copy()
        out[rows, labels % k] -= 1
        return out

    found = {"the gradient is not divided by n: the loss is a mean over the rows": minus_one_hot(y),
             "the gradient has the wrong sign: d(loss)/d(logits) is softmax - one_hot, not one_hot - softmax": -minus_one_hot(y) / n,
             "the one-hot is one class off (at y - 1): subtract 1 at column y of each row": minus_one_hot(y - 1) / n,
             "the one-hot is missing: the gradient is softmax - one_hot, divided by n": p / n}
    if k > 2:  # with 2 classes, y + 1 and y - 1 are the same column
        found["the one-hot is one class off (at y + 1): subtract 1 at column y of each row"] = minus_one_hot(y + 1) / n
    return found


def gradient_descent(X, y, k, lr, epochs, *, b_step="sum", w_divisor=1.0, g_scale=1.0, sign=1.0):
    """The contract's training run (by default), or a known mistake's."""
    W, b = np.zeros((X.shape[1], k)), np.zeros(k)
    n, rows = len(y), np.arange(len(y))
    for _ in range(max(epochs, 0)):
        g = np.exp(log_softmax(X @ W + b, axis=1))
        g[rows, y] -= 1
        g *= g_scale / n
        W = W - sign * lr * (X.T @ g) / w_divisor
        b = b - sign * lr * {"sum": g.sum(axis=0), "mean": g.mean(axis=0), "none": 0.0}[b_step]
    return W, b


def train_mistakes(X, y, k, lr, epochs):
    n = len(y)
    return {"one epoch too few was run": gradient_descent(X, y, k, lr, epochs - 1),
            "one epoch too many was run": gradient_descent(X, y, k, lr, epochs + 1),
            "b steps by lr * g.mean(0); the contract's step is lr * g.sum(0)": gradient_descent(X, y, k, lr, epochs, b_step="mean"),
            "b is never updated": gradient_descent(X, y, k, lr, epochs, b_step="none"),
            "W's step is divided by N again, but g is already the gradient of the mean loss": gradient_descent(X, y, k, lr, epochs, w_divisor=n),
            "the gradient is not divided by N": gradient_descent(X, y, k, lr, epochs, g_scale=n),
            "the steps go uphill (+= instead of -=)": gradient_descent(X, y, k, lr, epochs, sign=-1.0)}


def shifted_control(sub, logits, y, part):
    """Why softmax_ce's loss (part 0) or gradient (part 1) is not finite at large logits, or ""."""
    return shifted_logits_hint(sub, "softmax_ce", logits, y, finite=lambda got: all_finite(got[part]), what=("loss", "gradient")[part],
                               fix=OVERFLOW_FIX, logs=part == 0)


# -- judging softmax_ce ----------------------------------------------------------------------------
def describe(logits):
    return f"float64 logits of shape {logits.shape}, max |logit| {np.abs(logits).max():g}"


def softmax_ce_result(sub, logits, y):
    """The learner's (loss as a float, grad) for this input, shapes and dtypes checked."""
    scenario = describe(logits)
    got = sub.call("softmax_ce", logits, y)
    loss, grad = expect_sequence(got, 2, what="softmax_ce's result (loss, grad)", scenario=scenario)
    value = as_float(loss, what="the loss", scenario=scenario)
    assert_keeps_precision(loss, "float64", what="the loss", scenario=scenario)
    assert_shape(grad, logits.shape, what="grad", scenario=scenario)
    assert_keeps_precision(grad, "float64", what="grad", scenario=scenario)
    return value, np.asarray(grad, dtype=np.float64)


def judge_loss(sub, value, logits, y):
    want, _ = torch_loss_and_grad(logits, y)
    with explained(lambda: mistake_hint(value, loss_mistakes(logits, y), want=want, rtol=1e-9, atol=1e-10) if math.isfinite(value) else
                   shifted_control(sub, logits, y, 0)):
        assert_close(value, want, what="the loss", scenario=describe(logits) + ", against F.cross_entropy", dtype="float64")


def judge_grad(sub, grad, logits, y, want, against, **tolerance):
    with explained(lambda: mistake_hint(grad, grad_mistakes(logits, y), want=want, rtol=1e-6, atol=1e-9) if np.isfinite(grad).all() else
                   shifted_control(sub, logits, y, 1)):
        assert_close(grad, want, what="grad", scenario=f"{describe(logits)}, against {against}", dtype="float64", **tolerance)


def verify_loss(sub, case):
    logits, y = case
    value, _ = softmax_ce_result(sub, logits, y)
    judge_loss(sub, value, logits, y)


def verify_gradient(sub, case):
    logits, y = case
    _, grad = softmax_ce_result(sub, logits, y)
    want = central_differences(lambda z: mean_ce(z, y), logits, h=FD_STEP)
    _, exact = torch_loss_and_grad(logits, y)
    if not np.allclose(exact, want, rtol=FD_RTOL, atol=FD_ATOL):
        raise GraderDefect(f"central differences disagree with torch autograd ({describe(logits)})")
    judge_grad(sub, grad, logits, y, want, f"central differences (h = {FD_STEP:g})", rtol=FD_RTOL, atol=FD_ATOL)


def random_logits(rng, n, k, scale=3.0):
    """Short numbers (2 decimals), so the failing input reads well; labels in range."""
    return np.round(scale * rng.standard_normal((n, k)), 2), rng.integers(0, k, n)


def _cases_of(n, k):
    from hypothesis import strategies as st

    return st.tuples(matrix(n, k, grid(-8, 8, 2)), array_of((n,), st.integers(0, k - 1), dtype="int64"))


def small_cases():
    """Hypothesis cases (logits, y): 1-3 rows, 2-4 classes, logits -4 to 4 in halves."""
    return sized((1, 3), (2, 4), then=_cases_of)


# -- the scenario (runs in the sandbox): train on data built from code, so the failing input reads as that code
@scenario(repro=lambda interface, code, k, lr, epochs: Call.code(f"{code}\ntrain(X, y, {k}, {lr!r}, {epochs})"))
def train_on_data(module, code, k, lr, epochs):
    X, y = inputs_from_code(code, "X", "y")
    return module.train(X, y, k, lr, epochs)


RANDOM_CODE = "rng = np.random.default_rng(4)\nX = rng.standard_normal((30, 4))\ny = rng.integers(0, 4, 30)"
BLOBS_CODE = ("rng = np.random.default_rng(7)\ncentres = np.array([[4.0, 0.0], [-2.0, 3.5], [-2.0, -3.5]])\n"
              "y = np.repeat([0, 1, 2], 30)\nX = centres[y] + 0.5 * rng.standard_normal((90, 2))  # three separable blobs")


def judge_train(got, X, y, k, lr, epochs, scenario):
    W, b = expect_sequence(got, 2, what="train's result (W, b)", scenario=scenario)
    D = X.shape[1]
    if np.ndim(W) == 2 and np.shape(W)[0] == D and np.shape(W)[1] != k and np.shape(W)[1] == int(y.max()) + 1:
        fail(f"W ({scenario}): expected shape {(D, k)}, got {np.shape(W)}; k = {k} is given, and y need not use every class"
             f" (here the largest label is {int(y.max())}): make W (D, k) and b (k,)")
    assert_shape(W, (D, k), what="W", scenario=scenario)
    assert_shape(b, (k,), what="b", scenario=scenario)
    for name, value in (("W", W), ("b", b)):
        assert_keeps_precision(value, "float64", what=name, scenario=scenario)
    want = gradient_descent(X, y, k, lr, epochs)
    with explained(lambda: mistake_hint((np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64)), train_mistakes(X, y, k, lr, epochs), want=want,
                                        rtol=1e-7, atol=1e-10)):
        for name, value, want_value in zip("Wb", (W, b), want):
            assert_close(value, want_value, what=name, scenario=scenario, dtype="float64")
    return np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64)


def train_scenario(X, k, lr, epochs, what=""):
    return f"{what or f'X {X.shape}'}, k = {k}, lr = {lr:g}, epochs = {epochs}"


# -- the checks' inputs, small to large (softmax_ce_inputs and train_inputs send every one of them again) --------
HAND_BUILT = (np.array([[0.0, 0.0], [1.0, -1.0], [0.0, 2.0]]), np.array([1, 1, 0]))
LARGE_LOGITS = [(np.array([[30.0, 0.0]]), np.array([1])),
                (np.array([[800.0, 0.0, -800.0]]), np.array([2])),
                # Row maxima 2e4 apart: one maximum for the whole batch underflows the second row (-inf where 0.1566 is right).
                (np.array([[1e4, 0.0], [-1e4, -9999.0]]), np.array([0, 1])),
                (np.array([[1e4, -1e4], [-1e4, 1e4], [1e4, 1e4]]), np.array([1, 1, 0]))]
TRAIN_X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0], [0.5, 2.0]])
TRAIN_Y = np.array([0, 1, 2, 1])
ABSENT_X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0], [0.5, 2.0], [2.0, -0.5]])
ABSENT_CASES = ((np.array([0, 1, 0, 1, 1]), 3), (np.array([0, 2, 2, 0, 2]), 4))


def loss_cases(rng):
    return [random_logits(rng, n, k) for n, k in ((1, 2), (4, 3), (2, 10), (64, 7))]


def gradient_cases(rng):
    return [random_logits(rng, n, k) for n, k in ((1, 2), (3, 4), (2, 10), (32, 10))]


# -- checks ----------------------------------------------------------------------------------------
@check("softmax_ce: loss and grad on a hand-built batch", uses=("softmax_ce",))
def hand_built(sub, ctx):
    logits, y = HAND_BUILT
    value, grad = softmax_ce_result(sub, logits, y)
    judge_loss(sub, value, logits, y)
    judge_grad(sub, grad, logits, y, torch_loss_and_grad(logits, y)[1], "torch autograd of F.cross_entropy")


@check("softmax_ce: the loss equals F.cross_entropy (random float64 logits)", uses=("softmax_ce",))
def loss_matches(sub, ctx):
    with shrink_on_failure(sub, small_cases, lambda case: verify_loss(sub, case)):
        for case in loss_cases(ctx.rng(1)):
            verify_loss(sub, case)


@check("softmax_ce: grad passes a float64 central-difference check", uses=("softmax_ce",))
def gradient_check(sub, ctx):
    with shrink_on_failure(sub, small_cases, lambda case: verify_gradient(sub, case)):
        for case in gradient_cases(ctx.rng(2)):
            verify_gradient(sub, case)


@check("softmax_ce: confident mistakes at logits up to 1e4 (finite, exact loss and grad)", uses=("softmax_ce",))
def large_logits(sub, ctx):
    for logits, y in LARGE_LOGITS:
        value, grad = softmax_ce_result(sub, logits, y)
        judge_loss(sub, value, logits, y)
        with explained(lambda: shifted_control(sub, logits, y, 1)):  # noqa: B023 - the loop ends on a failure
            assert_finite(grad, what="grad", scenario=describe(logits))
        judge_grad(sub, grad, logits, y, torch_loss_and_grad(logits, y)[1], "torch autograd of F.cross_entropy")


@check("softmax_ce: inputs are left unchanged", uses=("softmax_ce",))
def softmax_ce_inputs(sub, ctx):
    # Every input the other checks send, the large logits included: a shift written into the caller's logits only
    # where they are large changes nothing at ordinary ones.
    for logits, y in [random_logits(ctx.rng(3), 4, 3), HAND_BUILT, *loss_cases(ctx.rng(1)), *gradient_cases(ctx.rng(2)), *LARGE_LOGITS]:
        inputs_unchanged(sub, "softmax_ce", logits, y, scenario=describe(logits))


@check("train: the first epochs are exact gradient-descent steps", uses=("train",))
def train_exact(sub, ctx):
    X, y = TRAIN_X, TRAIN_Y
    for epochs in (0, 1, 2, 5):
        got = sub.call("train", X, y, 3, 0.5, epochs)
        judge_train(got, X, y, 3, 0.5, epochs, train_scenario(X, 3, 0.5, epochs))
    X, y = inputs_from_code(RANDOM_CODE, "X", "y")
    got = sub.run(train_on_data, RANDOM_CODE, 4, 0.3, 50)
    judge_train(got, X, y, 4, 0.3, 50, train_scenario(X, 4, 0.3, 50, "random X (30, 4)"))


@check("train: W has k columns even when a class is absent from y", uses=("train",),
       edge="`k` is the number of classes even when `y` does not use all of them (W and b then still have k columns).")
def absent_class(sub, ctx):
    X = ABSENT_X
    for y, k in ABSENT_CASES:
        got = sub.call("train", X, y, k, 0.5, 3)
        judge_train(got, X, y, k, 0.5, 3, train_scenario(X, k, 0.5, 3, f"X (5, 2), labels {sorted(set(y.tolist()))} only"))


@check("train fits separable data (every training point classified right)", uses=("train",))
def fits_separable(sub, ctx):
    X, y = inputs_from_code(BLOBS_CODE, "X", "y")
    scenario = "three well-separated 2-D blobs of 30 points, k = 3, lr = 0.5, epochs = 100"
    got = sub.run(train_on_data, BLOBS_CODE, 3, 0.5, 100)
    W, b = expect_sequence(got, 2, what="train's result (W, b)", scenario=scenario)
    assert_shape(W, (2, 3), what="W", scenario=scenario)
    assert_shape(b, (3,), what="b", scenario=scenario)
    assert_finite([W, b], what="(W, b)", scenario=scenario)
    logits = X @ np.asarray(W, dtype=np.float64) + np.asarray(b, dtype=np.float64)
    wrong = np.flatnonzero(logits.argmax(axis=1) != y)
    loss, start = mean_ce(logits, y), math.log(3)
    if len(wrong) or not loss < start:
        rose = f"it rose from {start:.4g}: step against the gradient" if loss > start else "step"
        fail(f"training ({scenario}): {len(wrong)} of {len(y)} training points misclassified (first: point {wrong[0] if len(wrong) else '-'}),"
             f" mean cross-entropy {loss:.4g} after training vs {start:.4g} at W = 0, b = 0; gradient descent must lower the loss"
             f" and separate these blobs: {rose}, W -= lr * X.T @ g and b -= lr * g.sum(0)", misclassified=int(len(wrong)), loss=loss)


@check("train: inputs are left unchanged", uses=("train",))
def train_inputs(sub, ctx):
    runs = [(TRAIN_X, TRAIN_Y, 3, 0.5, 2), *((ABSENT_X, labels, k, 0.5, 3) for labels, k in ABSENT_CASES),
            (*inputs_from_code(RANDOM_CODE, "X", "y"), 4, 0.3, 50), (*inputs_from_code(BLOBS_CODE, "X", "y"), 3, 0.5, 100)]
    for X, y, k, lr, epochs in runs:
        inputs_unchanged(sub, "train", X, y, k, lr, epochs, scenario=train_scenario(X, k, lr, epochs))
