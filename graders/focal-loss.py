"""Grader for focal-loss: the mean sigmoid focal loss, computed from logits, in torch.

Expected values come from torchvision.ops.sigmoid_focal_loss's formula (restated below, torchvision
is not a dependency) and from F.binary_cross_entropy_with_logits, both in float64.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from mlprep.grading import (CheckFailed, as_float, assert_close, assert_finite, check, expect_sequence, fail,
                            gradcheck_float64, inputs_unchanged, tolerance_for, value_and_grad)

DEVICES = ("cpu", "cuda")

# A correct implementation that computes in float16 / bfloat16 rounds at each of its half a dozen
# elementwise steps, and (1 - p_t) ** gamma multiplies the relative error of 1 - p_t by gamma. Over
# a thousand random cases, vectorised ones (|z| form, logsigmoid, torchvision's sigmoid form,
# softplus) stayed within 1.5x assert_close's tolerance for that dtype of the float32 result, and a
# Python loop that accumulates the sum in float16 within 2.7x. So 4x; an underflowed
# log(sigmoid(z)) or an overflowed exp(-z) is inf and fails at any multiple.
LOW_PRECISION_TOLERANCE_MULTIPLE = 4.0

NONFINITE_HINT = ("sigmoid(z) rounds to exactly 0 or 1 for large |z| (in float16 already near z = -17), so a log of a "
                  "sigmoid output is -inf, and exp(-z) overflows for large negative z; compute the cross-entropy from "
                  "the logits in a form where exp never sees a large positive number.")

SATURATED_GRADIENT_HINT = ("the gradient of a saturated element's loss is about alpha_t * sign(z) for a confident mistake and "
                           "about 0 for a confident hit; it must stay finite: avoid log(0), 0 * inf and inf - inf, also in the "
                           "backward pass.")

GRADIENT_HINT = ("Every factor depends on z, the modulating factor (1 - p_t) ** gamma included: keep the whole computation in "
                 "torch autograd (no .detach(), .item(), NumPy or torch.no_grad() on the way).")


def torchvision_focal_loss(z, y, alpha, gamma):
    """torchvision.ops.sigmoid_focal_loss(z, y, alpha, gamma, reduction="mean"), restated."""
    p = torch.sigmoid(z)
    ce = F.binary_cross_entropy_with_logits(z, y, reduction="none")
    p_t = p * y + (1 - p) * (1 - y)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    return (alpha_t * ce * (1 - p_t) ** gamma).mean()


def per_element_losses(module, z, y, alpha, gamma):
    """Scenario: the learner's loss of each element on its own (a shape-(1,) input), in flat order."""
    flat_z, flat_y = z.reshape(-1), y.reshape(-1)
    return [module.focal_loss(flat_z[i:i + 1], flat_y[i:i + 1], alpha=alpha, gamma=gamma) for i in range(flat_z.numel())]


def _logits_and_labels(rng, shape, scale):
    z = torch.from_numpy(np.asarray(rng.normal(0.0, scale, size=shape), dtype=np.float64))
    y = torch.from_numpy(np.asarray(rng.random(size=shape) < 0.5, dtype=np.float64))
    return z, y


def _describe_config(z, alpha, gamma, extra=""):
    text = f"shape {tuple(z.shape)}, {str(z.dtype).removeprefix('torch.')}, alpha = {alpha:g}, gamma = {gamma:g}"
    return f"{text}, {extra}" if extra else text


def _likely_cause(got, z, y, alpha, gamma):
    """A hint naming the known mistake that reproduces `got` exactly, or "" when none does."""
    try:
        value = float(torch.as_tensor(got).double().reshape(()))
    except (TypeError, ValueError, RuntimeError):
        return ""
    p = torch.sigmoid(z)
    ce = F.binary_cross_entropy_with_logits(z, y, reduction="none")
    p_t = p * y + (1 - p) * (1 - y)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    per_element = alpha_t * ce * (1 - p_t) ** gamma
    variants = {
        "the per-element losses are summed; the loss is their mean over every element":
            per_element.sum(),
        "the sum is divided by the number of positives; the loss is the mean over every element":
            per_element.sum() / y.sum().clamp(min=1),
        "alpha and 1 - alpha are swapped: alpha weighs the positives (y = 1), 1 - alpha the negatives":
            ((1 - alpha_t) * ce * (1 - p_t) ** gamma).mean(),
        "every element is weighted by alpha; negatives (y = 0) get 1 - alpha":
            (alpha * ce * (1 - p_t) ** gamma).mean(),
        "p_t is sigmoid(z) for both labels; for y = 0 the probability of the true class is 1 - sigmoid(z)":
            (alpha_t * ce * (1 - p) ** gamma).mean(),
        "the modulating factor is 1 - p_t ** gamma; it is (1 - p_t) ** gamma":
            (alpha_t * ce * (1 - p_t ** gamma)).mean(),
        "the modulating factor is p_t ** gamma, which weighs easy examples most; it is (1 - p_t) ** gamma":
            (alpha_t * ce * p_t ** gamma).mean(),
    }
    true_value = float(per_element.mean())
    matches = [text for text, v in variants.items()
               if abs(float(v) - true_value) > 1e-6 * abs(true_value) and math.isclose(value, float(v), rel_tol=1e-9, abs_tol=1e-12)]
    return f"Your result matches a loss where {matches[0]}." if len(matches) == 1 else ""


def _saturated_hint(value, want, z, y):
    if not math.isfinite(value):
        return NONFINITE_HINT
    confident_mistake = (z > 0) != (y == 1)
    if confident_mistake and 1e-3 * want < value < 0.5 * want:
        return ("a confident mistake costs about alpha_t * |z|: the BCE grows linearly with the logit and must not be capped "
                "(clamping probabilities to [eps, 1 - eps] caps it near -log(eps)).")
    return ("at a saturated logit p_t is about 0 (a confident mistake, loss about alpha_t * |z|) or 1 (a confident hit, loss "
            "about 0); check which probability p_t is for this label, the modulating factor, and alpha_t.")


def _scalar(got, *, what, scenario):
    """`got` if it is one number (0-d); a clean fail for a per-row or per-element result."""
    shape = tuple(getattr(got, "shape", ()))
    if shape != ():
        fail(f"{what} ({scenario}): expected one number (a 0-d tensor or a Python number), got shape {shape}; the loss is "
             "the mean over every element, not over one axis.", expected_shape=[], got_shape=list(shape))
    return got


# ---------------------------------------------------------------------------------------------
@check("matches the torchvision focal loss in float64", devices=DEVICES)
def torchvision_formula_float64(sub, ctx):
    rng = ctx.rng(0)
    configs = [  # shape, alpha, gamma; None: call with the default arguments (0.25, 2.0)
        ((7,), None, None),
        ((), 0.25, 2.0),
        ((3, 5), 0.8, 0.5),
        ((2, 3, 4), 0.4, 3.3),
        ((16,), 1.0, 1.0),
        ((4, 4), 0.0, 2.5),
    ]
    for shape, alpha, gamma in configs:
        z, y = _logits_and_labels(rng, shape, scale=3.0)
        kwargs = {} if alpha is None else {"alpha": alpha, "gamma": gamma}
        a, g = (0.25, 2.0) if alpha is None else (alpha, gamma)
        scenario = _describe_config(z, a, g, "default arguments" if alpha is None else "")
        scenario += f", {ctx.device}"
        got = inputs_unchanged(sub, "focal_loss", z, y, scenario=scenario, **kwargs)
        got = _scalar(got, what="focal loss", scenario=scenario)
        want = torchvision_focal_loss(z, y, a, g)
        hint = _likely_cause(got, z, y, a, g) or "the loss is the mean over every element of alpha_t * (1 - p_t) ** gamma * BCE."
        assert_close(got, want, what="focal loss", scenario=scenario, dtype=torch.float64, hint=hint)


@check("gamma = 0 is alpha-weighted BCE", devices=DEVICES)
def gamma_zero_is_weighted_bce(sub, ctx):
    rng = ctx.rng(1)
    for alpha in (0.25, 0.9):
        z, y = _logits_and_labels(rng, (6, 5), scale=4.0)
        alpha_t = alpha * y + (1 - alpha) * (1 - y)
        want = F.binary_cross_entropy_with_logits(z, y, weight=alpha_t)
        scenario = _describe_config(z, alpha, 0.0, ctx.device)
        what = "focal loss with gamma = 0"
        got = _scalar(sub.call("focal_loss", z, y, alpha=alpha, gamma=0.0), what=what, scenario=scenario)
        hint = _likely_cause(got, z, y, alpha, 0.0) or (
            "with gamma = 0 the modulating factor is 1: what is left is each element's BCE weighted by alpha (y = 1) or "
            "1 - alpha (y = 0), averaged, as F.binary_cross_entropy_with_logits(z, y, weight=alpha_t) computes it.")
        assert_close(got, want, what=what, scenario=scenario, dtype=torch.float64, hint=hint)


@check("logits of +-100 and +-1e4: finite, correct values and gradients", devices=DEVICES)
def saturated_logits(sub, ctx):
    magnitudes = [100.0, -100.0, 1e4, -1e4]
    z64 = torch.tensor(magnitudes * 2, dtype=torch.float64)
    y64 = torch.tensor([1.0] * 4 + [0.0] * 4, dtype=torch.float64)
    # gamma >= 1 or 0: with 0 < gamma < 1, d/dx x**gamma is infinite at x = 1 - p_t = 0, which
    # torchvision's formula turns into NaN too.
    for dtype in (torch.float64, torch.float32):
        z, y = z64.to(dtype), y64.to(dtype)
        for alpha, gamma in ((0.25, 2.0), (0.6, 0.0)):
            scenario = _describe_config(z, alpha, gamma, ctx.device).replace("shape (8,)", "8 saturated logits")
            got = sub.run(per_element_losses, z, y, alpha, gamma)
            if not isinstance(got, list) or len(got) != len(magnitudes) * 2:
                fail(f"per-element losses ({scenario}): the scenario did not return one loss per element")
            for z_i, y_i, got_i in zip(z64.tolist(), y64.tolist(), got):
                want_i = float(torchvision_focal_loss(torch.tensor([z_i]).double(), torch.tensor([y_i]).double(), alpha, gamma))
                what = f"loss of the single element z = {z_i:g}, y = {y_i:g}"
                value = as_float(got_i, what=what, scenario=scenario)
                # Compared as a number: the shape of the result is graded by the first check.
                assert_close(value, want_i, what=what, scenario=scenario, dtype=dtype, hint=_saturated_hint(value, want_i, z_i, y_i))
            kwargs = {"alpha": alpha, "gamma": gamma}
            got = sub.run(value_and_grad, "focal_loss", [z, y], [0], kwargs)
            value, grads = expect_sequence(got, 2, what="loss and gradient", scenario=scenario)
            grad = expect_sequence(grads, 1, what="gradients", scenario=scenario)[0]
            want_value, want_grads = ctx.run_reference(value_and_grad, "focal_loss", [z64, y64], [0], kwargs)
            assert_close(value, want_value, what="mean loss over the 8 saturated elements", scenario=scenario, dtype=dtype)
            what = "gradient of the mean loss w.r.t. z"
            assert_finite(grad, what=what, scenario=scenario, hint=SATURATED_GRADIENT_HINT)
            assert_close(grad, want_grads[0], what=what, scenario=scenario, dtype=dtype, hint=SATURATED_GRADIENT_HINT)


def _low_precision(sub, ctx, dtype, seed):
    rng = ctx.rng(seed)
    rtol, atol = tolerance_for(dtype)
    rtol, atol = rtol * LOW_PRECISION_TOLERANCE_MULTIPLE, atol * LOW_PRECISION_TOLERANCE_MULTIPLE
    name = str(dtype).removeprefix("torch.")
    # Confident mistakes (z = -17..-25 with y = 1, and the mirror) and confident hits, among
    # ordinary logits; then ordinary logits alone, where the value is all rounding.
    wrong = [(-17.0, 1.0), (-20.0, 1.0), (-25.0, 1.0), (17.0, 0.0), (20.0, 0.0), (25.0, 0.0)]
    right = [(20.0, 1.0), (-20.0, 0.0)]
    special = np.array(wrong + right)
    moderate = np.stack([rng.normal(0.0, 3.0, 20), rng.random(20) < 0.5], axis=1)
    mixed = np.concatenate([special, moderate])[rng.permutation(28)]
    ordinary = np.stack([rng.normal(0.0, 2.0, 28), rng.random(28) < 0.5], axis=1)
    cases = [
        (mixed, 0.25, 2.0, "random logits plus saturated ones (|z| 17 to 25, both labels)"),
        (ordinary, 0.4, 1.5, "random logits"),
    ]
    for data, alpha, gamma, words in cases:
        z = torch.from_numpy(data[:, 0].copy()).reshape(4, 7).to(dtype)
        y = torch.from_numpy(data[:, 1].copy()).reshape(4, 7).to(dtype)
        # The float32 loss on the same (already rounded) values.
        want = torchvision_focal_loss(z.float(), y.float(), alpha, gamma)
        scenario = _describe_config(z, alpha, gamma, f"{words}, {ctx.device}")
        got = inputs_unchanged(sub, "focal_loss", z, y, scenario=scenario, alpha=alpha, gamma=gamma)
        got = _scalar(got, what=f"focal loss of {name} inputs", scenario=scenario)
        value = as_float(got, what=f"focal loss of {name} inputs", scenario=scenario)
        if not math.isfinite(value):
            singles = expect_sequence(sub.run(per_element_losses, z, y, alpha, gamma), 28, what="per-element losses", scenario=scenario)
            for z_i, y_i, single in zip(z.reshape(-1).tolist(), y.reshape(-1).tolist(), singles):
                single_value = as_float(single, what=f"loss of the single {name} element z = {z_i:g}", scenario=scenario)
                if not math.isfinite(single_value):
                    want_i = float(torchvision_focal_loss(torch.tensor([z_i]), torch.tensor([y_i]), alpha, gamma))
                    fail(f"focal loss of {name} inputs ({scenario}): expected a finite loss close to {float(want):.6g}, got"
                         f" {value}; the element z = {z_i:g}, y = {y_i:g} alone already gives {single_value} (expected"
                         f" {want_i:.6g}). {NONFINITE_HINT}", expected=float(want), got=value, z=z_i, y=y_i)
        hint = (f"allowed: {LOW_PRECISION_TOLERANCE_MULTIPLE:g}x the {name} tolerance of torch.testing.assert_close. If your "
                f"float32 loss is right, look for a step that loses precision in {name}, such as a log of a probability that "
                "rounded to 0 or 1.")
        assert_close(got, want, what=f"focal loss of {name} inputs vs the float32 loss", scenario=scenario, rtol=rtol, atol=atol,
                     hint=hint)


@check("float16 inputs: finite, close to the float32 loss", devices=DEVICES)
def float16_inputs(sub, ctx):
    _low_precision(sub, ctx, torch.float16, seed=2)


@check("bfloat16 inputs: finite, close to the float32 loss", devices=DEVICES)
def bfloat16_inputs(sub, ctx):
    _low_precision(sub, ctx, torch.bfloat16, seed=3)


@check("gradient w.r.t. z matches gradcheck in float64", devices=DEVICES)
def gradient_float64(sub, ctx):
    rng = ctx.rng(4)
    for shape, alpha, gamma in (((4, 5), 0.25, 2.0), ((7,), 0.7, 0.5), ((2, 3, 2), 0.5, 3.0)):
        # |z| >= 0.1: the |z| and max(z, 0) forms have a kink at exactly z = 0 under autograd.
        magnitude = rng.uniform(0.1, 4.0, size=shape)
        sign = rng.choice([-1.0, 1.0], size=shape)
        z = torch.from_numpy(magnitude * sign)
        y = torch.from_numpy(np.asarray(rng.random(size=shape) < 0.5, dtype=np.float64))
        scenario = _describe_config(z, alpha, gamma, ctx.device)
        # A wrong loss has a wrong gradient too: say so, rather than blame the autograd graph.
        got = sub.call("focal_loss", z, y, alpha=alpha, gamma=gamma)
        want = float(torchvision_focal_loss(z, y, alpha, gamma))
        value = as_float(got, what="focal loss", scenario=scenario)
        hint = GRADIENT_HINT
        if not math.isclose(value, want, rel_tol=1e-7, abs_tol=1e-7):
            hint = (f"The loss value itself is already wrong at these logits (expected {want:.8g}, got {value:.8g}), so its "
                    "gradient is too: fix the value first (see the float64 check).")
        try:
            gradcheck_float64(sub, ctx, "focal_loss", [z, y], [0], kwargs={"alpha": alpha, "gamma": gamma}, scenario=scenario)
        except CheckFailed as failed:  # only a verdict, to add what to look at; sandbox errors pass through untouched
            raise CheckFailed(f"{failed.message} {hint}", failed.details) from None
