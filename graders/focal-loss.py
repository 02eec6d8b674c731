"""Grader for focal-loss: the mean sigmoid focal loss, computed from logits, in torch.

Expected values come from torchvision.ops.sigmoid_focal_loss's formula (restated below: torchvision is not a
dependency), in float64, and in float32 for the half-precision checks, graded against the float32 loss of the
same rounded values.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from mlprep.grading import (Call, CheckFailed, array_of, as_float, assert_close, assert_finite, assert_keeps_precision, check, control_value, dtype_name,
                            expect_sequence, explained, fail, gradcheck_float64, inputs_unchanged, literal, mistake_hint, on_input, same_values, scenario,
                            shrink_on_failure, tolerance_for, value_and_grad)

DEVICES = ("cpu", "cuda")

# A correct implementation that computes in float16 / bfloat16 rounds at each of its half a dozen
# elementwise steps, and (1 - p_t) ** gamma multiplies the relative error of 1 - p_t by gamma. Over
# a thousand random cases, vectorised ones (|z| form, logsigmoid, torchvision's sigmoid form,
# softplus) stayed within 1.5x assert_close's tolerance for that dtype of the float32 result, and a
# Python loop that accumulates the sum in float16 within 2.7x. So 4x; an underflowed
# log(sigmoid(z)) or an overflowed exp(-z) is inf and fails at any multiple.
LOW_PRECISION_TOLERANCE_MULTIPLE = 4.0

# A confident mistake whose loss needs float64's digits: 0.6 * 512.28 computed in float32 (z and
# 0.6 rounded to float32, then their product rounded) is 1.36x float64's tolerance away from the
# float64 loss (measured on the CPU, IEEE-exact roundings only: exp(-512.28) is 0 in float32). Every
# float32 formulation tried (the |z| form, torchvision's, logsigmoid, softplus of the signed
# margin, a log-space modulating factor) fails it, whether it returns float32 or casts back to
# float64. No case can fail all float32 arithmetic: the float32 number nearest to the loss is
# within 2^-24 (6e-8) relative of it, under float64's rtol of 1e-7.
FLOAT32_DIGITS_CASE = (512.28, 0.0, 0.4, 2.0)  # z, y, alpha, gamma

# (z, y) pairs, exactly representable in float16 and bfloat16: 8 elements, small enough to be shown in
# full. z = -20 with y = 1 breaks a log of sigmoid(z) in float16 (sigmoid rounds to 0) and z = 20
# with y = 0 in both (1 - sigmoid rounds to 0); the ordinary ones catch formula and reduction bugs.
SMALL_HALF_CASE = np.array([(-20.0, 1.0), (20.0, 0.0), (20.0, 1.0), (-20.0, 0.0), (1.5, 1.0), (-0.75, 0.0), (0.5, 0.0), (-2.0, 1.0)])

# A float16 batch whose per-element losses are ordinary numbers (up to 75) but whose summed loss,
# about 99,000, exceeds float16's largest number, 65504; the mean is about 24.3. torch's .mean()
# of a float16 tensor accumulates in float32 (CPU and CUDA) and passes; a float16 .sum() / n is inf.
LARGE_BATCH_CODE = ("z = torch.linspace(-100.0, 100.0, 4096).half()\n"
                    "y = (z < 20).half()  # mostly confident mistakes: y = 1 for z < 0, y = 0 for z >= 20\n"
                    "focal_loss(z, y, alpha=0.25, gamma=2.0)")
LARGE_BATCH_WORDS = "4096 logits from -100 to 100, y = 1 where z < 20 (mostly confident mistakes)"

GRADIENT_HINT = ("Your loss values are right at these logits but the gradient is not, so what autograd differentiates is not "
                 "your value: part of the computation is hidden from it (a .detach(), .item(), NumPy or torch.no_grad() on the "
                 "way) or has a hand-written backward. Every factor depends on z, the modulating factor (1 - p_t) ** gamma included.")


# -- expected values (judge side) ------------------------------------------------------------------
def focal_parts(z, y, alpha):
    """p = sigmoid(z), the BCE, p_t and alpha_t of each element, as torchvision computes them."""
    p = torch.sigmoid(z)
    return p, F.binary_cross_entropy_with_logits(z, y, reduction="none"), p * y + (1 - p) * (1 - y), alpha * y + (1 - alpha) * (1 - y)


def torchvision_per_element(z, y, alpha, gamma):
    """torchvision.ops.sigmoid_focal_loss(z, y, alpha, gamma, reduction="none"), restated."""
    _, ce, p_t, alpha_t = focal_parts(z, y, alpha)
    return alpha_t * ce * (1 - p_t) ** gamma


def torchvision_focal_loss(z, y, alpha, gamma):
    """torchvision.ops.sigmoid_focal_loss(z, y, alpha, gamma, reduction="mean"), restated."""
    return torchvision_per_element(z, y, alpha, gamma).mean()


def single_loss(z_i, y_i, alpha, gamma, dtype=torch.float64):
    """The torchvision loss of one element, computed in `dtype` (float64 for float64 and float32 inputs' checks)."""
    return float(torchvision_focal_loss(torch.tensor([z_i], dtype=dtype), torch.tensor([y_i], dtype=dtype), alpha, gamma))


# -- scenarios (run in the sandbox) and how their inputs read as learner code ----------------------
def _per_element_repro(interface, z, y, alpha, gamma):
    n = z.numel()
    return Call.code(f"z = {literal(z.reshape(-1))}\ny = {literal(y.reshape(-1))}\n"
                     f"[focal_loss(z[i:i + 1], y[i:i + 1], alpha={alpha!r}, gamma={gamma!r}) for i in range({n})]")


@scenario(repro=_per_element_repro)
def per_element_losses(module, z, y, alpha, gamma):
    """Scenario: the learner's loss of each element on its own (a shape-(1,) input), in flat order."""
    flat_z, flat_y = z.reshape(-1), y.reshape(-1)
    return [module.focal_loss(flat_z[i:i + 1], flat_y[i:i + 1], alpha=alpha, gamma=gamma) for i in range(flat_z.numel())]


def single_call(z_i, y_i, alpha, gamma, dtype):
    """One element as the learner's call: the smallest input that shows a per-element failure."""
    return Call("focal_loss", torch.tensor([z_i], dtype=dtype), torch.tensor([y_i], dtype=dtype), alpha=alpha, gamma=gamma)


GRADIENT_WEIGHT = float(torch.randn((), generator=torch.Generator().manual_seed(0), dtype=torch.float64))  # value_and_grad's, seed 0


def gradient_code(z, y, alpha, gamma):
    """The gradient the check compares, as code: value_and_grad weighs the (scalar) loss by a fixed random number."""
    z_text = literal(z)
    z_text = z_text[:-1] + ", requires_grad=True)"
    return Call.code(f"z = {z_text}\nfocal_loss(z, {literal(y)}, alpha={alpha!r}, gamma={gamma!r}).backward()\n"
                     f"z.grad  # the check compares {GRADIENT_WEIGHT:.4f} * z.grad (the loss times a fixed random weight)")


# -- hints, each chosen from what the failure shows ------------------------------------------------
def _describe_config(z, alpha, gamma, extra=""):
    text = f"shape {tuple(z.shape)}, {dtype_name(z.dtype)}, alpha = {alpha:g}, gamma = {gamma:g}"
    return f"{text}, {extra}" if extra else text


def _likely_cause(got, z, y, alpha, gamma, rel_tol=1e-9):
    """A hint naming the known mistakes that reproduce `got` (to rel_tol), or "" when none does."""
    p, ce, p_t, alpha_t = focal_parts(z.double(), y.double(), alpha)
    y = y.double()
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
    return mistake_hint(got, {text: float(v) for text, v in variants.items()}, want=float(per_element.mean()), rtol=rel_tol, atol=1e-12, apart=(1e-6, 0.0),
                        say="Your result matches a loss where {}.", two="Your result matches a loss where {}, and also one where {}.")


def _float32_sized_error_hint(sub, value, want, z, y, alpha, gamma):
    """A float64 result off by about float32 rounding, which is what the learner's code gives for the same values in float32
    (a control call), far closer than to the right loss: it was computed in float32."""
    if not (math.isfinite(value) and want != 0) or not 1e-7 < abs(value - want) / abs(want) <= 1e-6:
        return ""
    in_float32 = control_value(sub, "focal_loss", z.float(), y.float(), alpha=alpha, gamma=gamma, read=lambda got: float(torch.as_tensor(got).double().reshape(())))
    if in_float32 is None or abs(in_float32 - value) > 1e-3 * abs(value - want):
        return ""
    return (f"Your result is off by a relative {abs(value - want) / abs(want):.2g}, the size of float32 rounding (2^-24, about 6e-8, per operation), and"
            " it is what your code gives for the same values in float32: compute float64 inputs in float64 throughout (no .float(), float32"
            " tensors or dtype=torch.float32 on the way, and no cast back at the end).")


def _unstable_forms_break(z_i, y_i, dtype):
    """Which known unstable forms of the BCE are inf/NaN at this element in this dtype: (the BCE from a rounded
    probability, -(y log p + (1 - y) log(1 - p)); its label's own term alone, -log(p) for y = 1 or -log(1 - p) for
    y = 0 (as a torch.where would pick it); exp of +-z without the |z|, (1 - y) z + log(1 + exp(-z)) or its mirror)."""
    z, y = torch.tensor([z_i], dtype=dtype), torch.tensor([y_i], dtype=dtype)
    p = torch.sigmoid(z)
    log_form = -(y * torch.log(p) + (1 - y) * torch.log(1 - p))
    label_term = -torch.log(p) if y_i == 1 else -torch.log(1 - p)
    exp_form = torch.maximum((1 - y) * z + torch.log1p(torch.exp(-z)), -y * z + torch.log1p(torch.exp(z)))
    return tuple(not bool(torch.isfinite(form).all()) for form in (log_form, label_term, exp_form))


def _nonfinite_hint(z_i, y_i, alpha, gamma, dtype, control=None):
    """Why one element's loss is inf/NaN: which of the two known unstable forms breaks at this logit in this dtype.
    When both do, `control(z)` (the learner's loss of one element z, same label and dtype, or None) tells them apart
    at a logit where only one of them breaks: every log form of this label and no exp (z = 10, 20 or 40; none exists
    for y = 1), or else an exp and no log (z = -12, -89 or -710)."""
    name = dtype_name(dtype)
    log_breaks, _, exp_breaks = _unstable_forms_break(z_i, y_i, dtype)
    evidence = ""
    if log_breaks and exp_breaks and control is not None:
        candidates = [(c, "log") for c in (10.0, 20.0, 40.0)] + [(c, "exp") for c in (-12.0, -89.0, -710.0)]
        z_c, only = next(((c, kind) for c, kind in candidates
                          if _unstable_forms_break(c, y_i, dtype) == ((True, True, False) if kind == "log" else (False, False, True))), (None, None))
        got_c = control(z_c) if z_c is not None else None
        if got_c is not None:
            breaks_there = not math.isfinite(got_c)
            if only == "log":
                where = f"z = {z_c:g}, where sigmoid(z) rounds to 1 in {name} but exp({z_c:g}) does not overflow"
            else:
                where = f"z = {z_c:g}, where exp({-z_c:g}) overflows {name} but sigmoid(z) does not round to 0"
            log_breaks, exp_breaks = (breaks_there, not breaks_there) if only == "log" else (not breaks_there, breaks_there)
            evidence = f" (Your loss is {'also ' + str(got_c) if breaks_there else 'finite'} at {where}.)"
    parts = []
    if log_breaks:
        rounded = int(torch.sigmoid(torch.tensor(z_i, dtype=dtype)).item())
        which = "sigmoid(z)" if rounded == 0 else "1 - sigmoid(z)"
        parts.append(f"at z = {z_i:g} in {name}, sigmoid(z) rounds to exactly {rounded}, so log({which}) is -inf (and 0 * -inf is NaN)")
    if exp_breaks:
        parts.append(f"{'at z = ' + format(z_i, 'g') + ', ' if not parts else ''}exp({abs(z_i):g}) overflows {name} (its largest "
                     f"number is {torch.finfo(dtype).max:.4g}), so a log(1 + exp(-z)) or log(1 + exp(z)) is inf")
    if not parts:
        return (f"This element's loss is an ordinary number ({single_loss(z_i, y_i, alpha, gamma):.6g}); some step of your "
                f"computation overflows or takes log(0) at z = {z_i:g} in {name}.")
    text = "; and ".join(parts)
    return (text[0].upper() + text[1:] + "." + evidence + " Compute the cross-entropy from the logits in a form where exp only "
            "sees -|z|: max(z, 0) - z*y + log(1 + exp(-|z|)).")


def first_number(got):
    return float(torch.as_tensor(got).double().reshape(-1)[0])


def single_element_control(sub, y_i, alpha, gamma, dtype):
    """control(z) for _nonfinite_hint: the learner's loss of the single element z (label y_i, this dtype), None if unusable."""
    return lambda z_c: control_value(sub, "focal_loss", torch.tensor([z_c], dtype=dtype), torch.tensor([y_i], dtype=dtype), alpha=alpha, gamma=gamma,
                                     read=first_number)


def _capped_hint(z_a, value_a, z_b, value_b, want_a):
    """Evidence of a capped BCE: a confident mistake whose loss is positive, too small, and about the same at two
    logits of the same sign and label that differ only in |z| (where the true loss grows with |z|)."""
    if not (0 < value_a < 0.9 * want_a and math.isfinite(value_b) and math.isclose(value_a, value_b, rel_tol=0.05)):
        return ""
    (z_1, v_1), (z_2, v_2) = sorted([(abs(z_a), value_a), (abs(z_b), value_b)])
    return (f"Your loss is about the same at |z| = {z_1:g} ({v_1:.4g}) and at |z| = {z_2:g} ({v_2:.4g}) for this label, so it stops "
            "growing with |z|: a confident mistake costs about alpha_t * |z|, so the BCE must not be capped (clamping "
            "probabilities to [eps, 1 - eps] caps it near -log(eps)).")


def _single_element_hint(value, want, z_i, y_i, alpha, gamma, dtype, partner=None, control=None):
    """The hint for one element's wrong loss, from what it shows: inf/NaN (which unstable form breaks here), a known
    mistake that reproduces it, a capped BCE (`partner`: (z, value) of the same label at another |z|), or else what
    this element's loss should be."""
    if not math.isfinite(value):
        return _nonfinite_hint(z_i, y_i, alpha, gamma, dtype, control)
    cause = _likely_cause(value, torch.tensor([z_i]), torch.tensor([y_i]), alpha, gamma, rel_tol=1e-9 if dtype == torch.float64 else 1e-5)
    if cause:
        return cause
    confident_mistake = (z_i > 0) != (y_i == 1)
    if confident_mistake and partner is not None:
        capped = _capped_hint(z_i, value, partner[0], partner[1], want)
        if capped:
            return capped
    if confident_mistake and abs(z_i) > 30:
        return f"This is a confident mistake: p_t is about 0, so the loss is about alpha_t * |z| = {want:.6g}."
    if abs(z_i) > 30:
        return "This is a confident hit: p_t is about 1, so the loss is about 0."
    return ""


def _gradient_hint(sub, z, y, alpha, gamma):
    """The loss value is right but the gradient is not: name the detached modulating factor when the learner's
    gradient is exactly the one it gives, else say only what the evidence shows."""
    got = control_value(sub, value_and_grad, "focal_loss", [z, y], [0], {"alpha": alpha, "gamma": gamma}, read=lambda seen: seen[1][0])
    leaf = z.detach().clone().requires_grad_(True)
    _, ce, p_t, alpha_t = focal_parts(leaf, y, alpha)
    (GRADIENT_WEIGHT * (alpha_t * (1 - p_t.detach()) ** gamma * ce).mean()).backward()
    if got is not None and same_values(got, leaf.grad, rtol=1e-6, atol=1e-10):
        return ("Your gradient is exactly the one you get with the modulating factor (1 - p_t) ** gamma held constant (detached "
                "from z): p_t depends on z, and autograd must see that dependence.")
    return GRADIENT_HINT


def _saturated_gradient_hint(got_i, want_i, z_i, y_i):
    """For a gradient failure at one saturated element whose loss values were already checked right."""
    if not math.isfinite(got_i):
        return ("Your loss values are right here, so the inf/NaN comes from the backward pass alone, most often from a branch that "
                "torch.where or a mask discards: it still backpropagates, and 0 times its inf/NaN derivative is NaN. Make every branch "
                "finite for every z (exp only of -|z|), the one not taken included.")
    if (z_i > 0) != (y_i == 1):
        shape = "a confident mistake: the loss is about alpha_t * |z|, so its derivative is about alpha_t * sign(z)"
    else:
        shape = "a confident hit: the loss is about 0, and so is its derivative"
    return (f"Your loss values are right here but this derivative is not (expected {want_i:.6g}, got {got_i:.6g}, in the check's "
            f"weighting). At z = {z_i:g}, y = {y_i:g} this is {shape}; look for a clamp or a branch that cuts or changes the gradient.")


# -- judging one result ----------------------------------------------------------------------------
def _scalar(got, *, what, scenario):
    """`got` if it is one number (0-d); a clean fail for a per-row or per-element result."""
    shape = tuple(getattr(got, "shape", ()))
    if shape != ():
        fail(f"{what} ({scenario}): expected one number (a 0-d tensor or a Python number), got shape {shape}; the loss is "
             "the mean over every element, not over one axis.", expected_shape=[], got_shape=list(shape))
    return got


def judge_float64(sub, got, z, y, alpha, gamma, *, call, what, scenario, want=None, fallback_hint=""):
    """A float64 loss of the learner's `call`: one number, float64 precision, the torchvision value at float64
    tolerance. A one-element input that fails gets control cases for its hint (the same label at another logit)."""
    with on_input(call):  # named here: a hint's control case is a later call
        got = _scalar(got, what=what, scenario=scenario)
        assert_keeps_precision(got, torch.float64, what=what, scenario=scenario)
        want = float(torchvision_focal_loss(z, y, alpha, gamma) if want is None else want)
        value = as_float(got, what=what, scenario=scenario)

        def explain():
            hint = _likely_cause(got, z, y, alpha, gamma) or _float32_sized_error_hint(sub, value, want, z, y, alpha, gamma)
            if not hint and z.numel() == 1:
                z_i, y_i = float(z.reshape(-1)[0]), float(y.reshape(-1)[0])
                control = single_element_control(sub, y_i, alpha, gamma, torch.float64)
                partner = None
                if math.isfinite(value) and (z_i > 0) != (y_i == 1) and abs(z_i) > 30:  # a confident mistake: capped?
                    partner = (2 * z_i, control(2 * z_i))
                    partner = partner if partner[1] is not None else None
                hint = _single_element_hint(value, want, z_i, y_i, alpha, gamma, torch.float64, partner=partner, control=control)
            return hint or fallback_hint

        with explained(explain):
            assert_close(got, want, what=what, scenario=scenario, dtype=torch.float64)


def verify_float64_case(sub, device, case):
    """One tiny float64 case (for shrinking): the learner's loss against the torchvision formula."""
    shape, alpha, gamma, z, y = case
    z, y = torch.from_numpy(z.copy()), torch.from_numpy(y.copy())
    scenario = f"{_describe_config(z, alpha, gamma)}, {device}"
    got = inputs_unchanged(sub, "focal_loss", z, y, scenario=scenario, alpha=alpha, gamma=gamma)
    judge_float64(sub, got, z, y, alpha, gamma, call=Call("focal_loss", z, y, alpha=alpha, gamma=gamma), what="focal loss",
                  scenario=scenario, fallback_hint="The loss is the mean over every element of alpha_t * (1 - p_t) ** gamma * BCE.")


def _float64_case_of(shape):
    from hypothesis import strategies as st

    return st.tuples(st.just(shape), st.sampled_from([0.25, 0.5, 0.8, 0.0, 1.0]), st.sampled_from([2.0, 1.0, 0.0, 0.5, 3.3]),
                     array_of(shape, st.floats(-10.0, 10.0)), array_of(shape, st.sampled_from([0.0, 1.0])))


def tiny_float64_cases():
    """Hypothesis cases (shape, alpha, gamma, z, y): shapes (), (1,), (2,); z in [-10, 10]; 0/1 labels. Shrinks toward
    a 0-d case with the default alpha and gamma, z = 0 and y = 0."""
    from hypothesis import strategies as st

    return st.sampled_from([(), (1,), (2,)]).flatmap(_float64_case_of)


def _logits_and_labels(rng, shape, scale):
    z = torch.from_numpy(np.asarray(rng.normal(0.0, scale, size=shape), dtype=np.float64))
    y = torch.from_numpy(np.asarray(rng.random(size=shape) < 0.5, dtype=np.float64))
    return z, y


# -- checks ----------------------------------------------------------------------------------------
def float64_cases(rng):
    """(z, y, kwargs, words) from small to large, so that the first that fails is the smallest; kwargs {} means
    the call uses the default arguments (alpha = 0.25, gamma = 2)."""
    z, y = _logits_and_labels(rng, (), scale=3.0)
    cases = [(z, y, {"alpha": 0.25, "gamma": 2.0}, "")]
    z_0, y_0, alpha, gamma = FLOAT32_DIGITS_CASE
    cases.append((torch.tensor(z_0, dtype=torch.float64), torch.tensor(y_0, dtype=torch.float64), {"alpha": alpha, "gamma": gamma},
                  "a confident mistake whose loss needs float64's digits"))
    for shape, alpha, gamma in (((7,), None, None), ((16,), 1.0, 1.0), ((3, 5), 0.8, 0.5), ((4, 4), 0.0, 2.5), ((2, 3, 4), 0.4, 3.3)):
        z, y = _logits_and_labels(rng, shape, scale=3.0)
        cases.append((z, y, {} if alpha is None else {"alpha": alpha, "gamma": gamma}, "default arguments" if alpha is None else ""))
    return cases


@check("matches the torchvision focal loss in float64", devices=DEVICES)
def torchvision_formula_float64(sub, ctx):
    with shrink_on_failure(sub, tiny_float64_cases, lambda case: verify_float64_case(sub, ctx.device, case)):
        for z, y, kwargs, words in float64_cases(ctx.rng(0)):
            alpha, gamma = kwargs.get("alpha", 0.25), kwargs.get("gamma", 2.0)
            scenario = ", ".join(part for part in (_describe_config(z, alpha, gamma), words, ctx.device) if part)
            got = inputs_unchanged(sub, "focal_loss", z, y, scenario=scenario, **kwargs)
            judge_float64(sub, got, z, y, alpha, gamma, call=Call("focal_loss", z, y, **kwargs), what="focal loss", scenario=scenario,
                          fallback_hint="The loss is the mean over every element of alpha_t * (1 - p_t) ** gamma * BCE.")


@check("gamma = 0 is alpha-weighted BCE", devices=DEVICES)
def gamma_zero_is_weighted_bce(sub, ctx):
    rng = ctx.rng(1)
    for shape, alpha in (((5,), 0.25), ((3, 4), 0.9)):  # small to large, both written out in full
        z, y = _logits_and_labels(rng, shape, scale=4.0)
        alpha_t = alpha * y + (1 - alpha) * (1 - y)
        want = F.binary_cross_entropy_with_logits(z, y, weight=alpha_t)
        scenario = _describe_config(z, alpha, 0.0, ctx.device)
        got = inputs_unchanged(sub, "focal_loss", z, y, scenario=scenario, alpha=alpha, gamma=0.0)
        judge_float64(sub, got, z, y, alpha, 0.0, call=Call("focal_loss", z, y, alpha=alpha, gamma=0.0), what="focal loss with gamma = 0",
                      scenario=scenario, want=want, fallback_hint=(
            "With gamma = 0 the modulating factor is 1: what is left is each element's BCE weighted by alpha (y = 1) or "
            "1 - alpha (y = 0), averaged, as F.binary_cross_entropy_with_logits(z, y, weight=alpha_t) computes it."))


def _first_bad_index(failure):
    """The flat index of the first failing value, from assert_close / assert_finite's details ("(3,)")."""
    try:
        return int(str(failure.details.get("first_index", "")).strip("()").split(",")[0])
    except ValueError:
        return None


def _saturated_gradient(sub, ctx, grad, want_grad, z, y, z64, y64, kwargs, dtype, scenario):
    """The gradient of the mean over the 8 saturated elements; a failure is narrowed to the first failing element
    on its own when that element fails alone too (verified in the sandbox), the smallest input that shows it."""
    what = "d(output)/d(z) of focal_loss()"
    try:
        assert_finite(grad, what=what, scenario=scenario)
        assert_close(grad, want_grad, what=what, scenario=scenario, dtype=dtype)
    except CheckFailed as failure:
        i = _first_bad_index(failure)
        if i is None:
            raise
        z_i, y_i = float(z64[i]), float(y64[i])
        got_i = float(torch.as_tensor(grad).double().reshape(-1)[i])
        failure.notes.append(_saturated_gradient_hint(got_i, float(want_grad.reshape(-1)[i]), z_i, y_i))
        single_z, single_y = z[i:i + 1].clone(), y[i:i + 1].clone()
        got = sub.control(value_and_grad, "focal_loss", [single_z, single_y], [0], kwargs)
        if got is None:  # the element alone cannot show it: the whole batch is the input
            raise
        _, want_single = ctx.run_reference(value_and_grad, "focal_loss", [z64[i:i + 1].clone(), y64[i:i + 1].clone()], [0], kwargs)
        single_what = f"d(output)/d(z) of focal_loss() at the single element z = {z_i:g}, y = {y_i:g}"
        with on_input(gradient_code(single_z, single_y, kwargs["alpha"], kwargs["gamma"])):
            single_grad = expect_sequence(expect_sequence(got, 2, what="loss and gradient")[1], 1, what="gradients")[0]
            single_hint = _saturated_gradient_hint(float(torch.as_tensor(single_grad).double().reshape(-1)[0]),
                                                   float(want_single[0].reshape(-1)[0]), z_i, y_i)
            assert_finite(single_grad, what=single_what, scenario=scenario, hint=single_hint)
            assert_close(single_grad, want_single[0], what=single_what, scenario=scenario, dtype=dtype, hint=single_hint)
        raise  # only the whole batch fails


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
            inputs_unchanged(sub, "focal_loss", z, y, scenario=scenario, alpha=alpha, gamma=gamma)  # the extreme logits must come back unchanged too
            got = expect_sequence(sub.run(per_element_losses, z, y, alpha, gamma), len(z), what="per-element losses", scenario=scenario)
            elements = list(zip(z64.tolist(), y64.tolist(), got))
            values = {}  # every element's value first: the hint of one compares it with its partner at the other |z|
            for z_i, y_i, got_i in elements:
                with on_input(single_call(z_i, y_i, alpha, gamma, dtype)):
                    values[(z_i, y_i)] = as_float(got_i, what=f"loss of the single element z = {z_i:g}, y = {y_i:g}", scenario=scenario)
            for z_i, y_i, got_i in elements:
                what = f"loss of the single element z = {z_i:g}, y = {y_i:g}"
                want_i, value = single_loss(z_i, y_i, alpha, gamma), values[(z_i, y_i)]
                other = math.copysign(1e4 if abs(z_i) == 100 else 100.0, z_i)  # the same label and sign at the other |z|
                with on_input(single_call(z_i, y_i, alpha, gamma, dtype)):
                    assert_keeps_precision(got_i, dtype, what=what, scenario=scenario)
                    # Compared as a number: the shape of the result is graded by the first check.
                    with explained(lambda: _single_element_hint(value, want_i, z_i, y_i, alpha, gamma, dtype,  # noqa: B023 - the loop ends on a failure
                                                                partner=(other, values[(other, y_i)]),  # noqa: B023
                                                                control=single_element_control(sub, y_i, alpha, gamma, dtype))):  # noqa: B023
                        assert_close(value, want_i, what=what, scenario=scenario, dtype=dtype)
            kwargs = {"alpha": alpha, "gamma": gamma}
            got = sub.run(value_and_grad, "focal_loss", [z, y], [0], kwargs)
            want_value, want_grads = ctx.run_reference(value_and_grad, "focal_loss", [z64, y64], [0], kwargs)
            value, grads = expect_sequence(got, 2, what="loss and gradient", scenario=scenario)
            with on_input(Call("focal_loss", z, y, alpha=alpha, gamma=gamma)), explained(
                    lambda: _likely_cause(value, z64, y64, alpha, gamma, rel_tol=1e-5) or (  # noqa: B023 - the loop ends on a failure
                        "Each element's loss alone is right (checked above) but their mean is not: look at how "
                        "the losses are combined; the loss is the mean over every element.")):
                assert_close(value, want_value, what="mean loss over the 8 saturated elements", scenario=scenario, dtype=dtype)
            with on_input(gradient_code(z, y, alpha, gamma)):
                grad = expect_sequence(grads, 1, what="gradients", scenario=scenario)[0]
                _saturated_gradient(sub, ctx, grad, want_grads[0], z, y, z64, y64, kwargs, dtype, scenario)


def _first_bad_element(sub, z, y, alpha, gamma, rtol, atol, nonfinite_first):
    """The first element whose loss alone is not finite or not within tolerance of its float32 loss (the first
    inf/NaN one, if any, when `nonfinite_first`): (z_i, y_i, got value, want value, every value), or None and
    every value when each element alone is fine; (None, None) when the elements alone cannot be graded."""
    singles = sub.control(per_element_losses, z, y, alpha, gamma)
    if not isinstance(singles, list) or len(singles) != z.numel():
        return None, None  # an element alone makes the code raise: no per-element evidence
    wants = torchvision_per_element(z.float().reshape(-1), y.float().reshape(-1), alpha, gamma).tolist()
    rows = []
    for z_i, y_i, single, want_i in zip(z.reshape(-1).tolist(), y.reshape(-1).tolist(), singles, wants):
        with on_input(single_call(z_i, y_i, alpha, gamma, z.dtype)):
            rows.append((z_i, y_i, as_float(single, what=f"loss of the single element z = {z_i:g}, y = {y_i:g}"), want_i))
    values = [row[2] for row in rows]
    bad = [row for row in rows if not same_values(row[2], row[3], rtol=rtol, atol=atol)]
    if nonfinite_first and any(not math.isfinite(row[2]) for row in bad):
        bad = [row for row in bad if not math.isfinite(row[2])]
    return (bad[0] if bad else None), values


def _explain_low_precision(sub, z, y, alpha, gamma, value, want, scenario, rtol, atol):
    """A half-precision loss was wrong: find the evidence. Per element first (the smallest failing input); then, for a
    finite but wrong element, the same element in float32 tells a precision problem from a wrong formula."""
    name = dtype_name(z.dtype)
    what = f"focal loss of {name} inputs"
    expected = f"{'a finite loss close to ' if not math.isfinite(value) else ''}{want:.6g}"
    allowed = f"Allowed: {LOW_PRECISION_TOLERANCE_MULTIPLE:g}x the {name} tolerance of torch.testing.assert_close."
    batch = Call("focal_loss", z, y, alpha=alpha, gamma=gamma)
    bad, values = _first_bad_element(sub, z, y, alpha, gamma, rtol, atol, nonfinite_first=not math.isfinite(value))
    if values is None:  # one element alone makes the code raise: no per-element evidence, the batch is the input
        fail(f"{what} ({scenario}): expected {expected}, got {value}. {allowed}", failing_input=batch, expected=want, got=value)
    if bad is None:
        own_mean = float(torch.tensor(values, dtype=torch.float64).mean())
        cause = _likely_cause(value, z.double(), y.double(), alpha, gamma, rel_tol=rtol)
        fail(f"{what} ({scenario}): expected {expected}, got {value}. Every element alone gives a finite loss within tolerance "
             f"(their mean is {own_mean:.6g}), so the way the per-element losses are combined is wrong. "
             f"{cause or 'The loss is their mean over every element.'} {allowed}", failing_input=batch, expected=want, got=value)
    z_i, y_i, got_i, want_i = bad
    single = single_call(z_i, y_i, alpha, gamma, z.dtype)
    head = (f"{what} ({scenario}): expected {expected}, got {value}; the element z = {z_i:g}, y = {y_i:g} alone already gives "
            f"{got_i:.6g} (expected {want_i:.6g}).")
    if not math.isfinite(got_i):
        fail(f"{head} {_nonfinite_hint(z_i, y_i, alpha, gamma, z.dtype, single_element_control(sub, y_i, alpha, gamma, z.dtype))}",
             failing_input=single, expected=want, got=value, z=z_i, y=y_i)
    control = control_value(sub, "focal_loss", torch.tensor([z_i]), torch.tensor([y_i]), alpha=alpha, gamma=gamma, read=first_number)
    if control is None:  # it raised, or it is not a number: no evidence
        fail(f"{head} {allowed}", failing_input=single, expected=want, got=value, z=z_i, y=y_i)
    if math.isclose(control, single_loss(z_i, y_i, alpha, gamma, torch.float32), rel_tol=1e-5, abs_tol=1e-6):
        hint = (f"The same element in float32 gives {control:.6g}, which is right, so a step of your computation loses precision "
                f"in {name}: compute from the logits (no log of a rounded probability, no 1 - p that cancels), or upcast inside.")
    else:
        cause = _likely_cause(control, torch.tensor([z_i]), torch.tensor([y_i]), alpha, gamma, rel_tol=1e-5)
        hint = (f"The same element in float32 gives {control:.6g}, wrong as well: the formula is wrong, not the precision. "
                f"{cause or 'See the float64 checks.'}")
    fail(f"{head} {allowed} {hint}", failing_input=single, expected=want, got=value, z=z_i, y=y_i)


def _low_precision_loss(sub, ctx, z, y, alpha, gamma, words):
    """The learner's loss of half-precision z, y as a number, its float32 loss, and the scenario text."""
    name = dtype_name(z.dtype)
    want = float(torchvision_focal_loss(z.float(), y.float(), alpha, gamma))  # the float32 loss of the same rounded values
    scenario = _describe_config(z, alpha, gamma, f"{words}, {ctx.device}")
    what = f"focal loss of {name} inputs"
    got = _scalar(inputs_unchanged(sub, "focal_loss", z, y, scenario=scenario, alpha=alpha, gamma=gamma), what=what, scenario=scenario)
    assert_keeps_precision(got, z.dtype, what=what, scenario=scenario)
    return as_float(got, what=what, scenario=scenario), want, scenario


def _explain_large_batch(sub, ctx, z, y, value, want, scenario, rtol, atol):
    """The 4096-element batch failed: a control of every 256th element (16 of the same kinds of logits) tells a
    reduction that breaks with the batch size from a per-element problem."""
    name = dtype_name(z.dtype)
    z_c, y_c = z[::256].clone(), y[::256].clone()
    want_c = float(torchvision_focal_loss(z_c.float(), y_c.float(), 0.25, 2.0))
    control_call = Call("focal_loss", z_c, y_c, alpha=0.25, gamma=2.0)
    control = control_value(sub, "focal_loss", z_c, y_c, alpha=0.25, gamma=2.0, read=lambda got: float(torch.as_tensor(got).double().reshape(())))
    if control is None:  # it raised, or it is not one number: no usable control, the failure as it is
        fail(f"focal loss of {name} inputs ({scenario}): expected {'a finite loss close to ' if not math.isfinite(value) else ''}"
             f"{want:.6g}, got {value}.", failing_input=Call.code(LARGE_BATCH_CODE), expected=want, got=value)
    if same_values(control, want_c, rtol=rtol, atol=atol):
        total, largest = float(torchvision_per_element(z.float(), y.float(), 0.25, 2.0).sum()), torch.finfo(z.dtype).max
        overflow = ""
        if not math.isfinite(value) and total > largest:
            overflow = f"their summed loss, about {total:,.0f}, exceeds {name}'s largest number {largest:g}, so a {name} sum is inf before the division. "
        fail(f"focal loss of {name} inputs ({scenario}): expected {'a finite loss close to ' if not math.isfinite(value) else ''}"
             f"{want:.6g}, got {value}. Every 256th of these logits alone (16 elements) gives {control:.6g}, which is right, so the "
             f"per-element losses are fine and the reduction over many elements breaks: {overflow}Reduce with .mean() (torch "
             f"computes the mean of a {name} tensor in float32 and rounds only the mean) or sum in float32 yourself "
             "(.sum(dtype=torch.float32)).",
             failing_input=Call.code(LARGE_BATCH_CODE), expected=want, got=value, control=control)
    with on_input(control_call):
        _explain_low_precision(sub, z_c, y_c, 0.25, 2.0, control, want_c,
                               _describe_config(z_c, 0.25, 2.0, f"every 256th of the {LARGE_BATCH_WORDS}, {ctx.device}"), rtol, atol)


def _low_precision(sub, ctx, dtype, seed, large_batch=False):
    rng = ctx.rng(seed)
    rtol, atol = tolerance_for(dtype)
    rtol, atol = rtol * LOW_PRECISION_TOLERANCE_MULTIPLE, atol * LOW_PRECISION_TOLERANCE_MULTIPLE
    # A small hand-picked case first (shown in full when it fails); then confident mistakes (z = -17..-25
    # with y = 1, and the mirror) and confident hits among random logits; then random logits alone,
    # where the value is all rounding; last, for float16, a batch whose summed loss overflows.
    wrong = [(-17.0, 1.0), (-20.0, 1.0), (-25.0, 1.0), (17.0, 0.0), (20.0, 0.0), (25.0, 0.0)]
    right = [(20.0, 1.0), (-20.0, 0.0)]
    special = np.array(wrong + right)
    moderate = np.stack([rng.normal(0.0, 3.0, 20), rng.random(20) < 0.5], axis=1)
    mixed = np.concatenate([special, moderate])[rng.permutation(28)]
    ordinary = np.stack([rng.normal(0.0, 2.0, 28), rng.random(28) < 0.5], axis=1)
    cases = [  # small to large: the first that fails is the smallest failing input
        (SMALL_HALF_CASE, (2, 4), 0.25, 2.0, "confident mistakes and hits at |z| = 20 among ordinary logits"),
        (mixed, (4, 7), 0.25, 2.0, "random logits plus saturated ones (|z| 17 to 25, both labels)"),
        (ordinary, (4, 7), 0.4, 1.5, "random logits"),
    ]
    for data, shape, alpha, gamma, words in cases:
        z = torch.from_numpy(data[:, 0].copy()).reshape(shape).to(dtype)
        y = torch.from_numpy(data[:, 1].copy()).reshape(shape).to(dtype)
        value, want, scenario = _low_precision_loss(sub, ctx, z, y, alpha, gamma, words)
        if not same_values(value, want, rtol=rtol, atol=atol):
            _explain_low_precision(sub, z, y, alpha, gamma, value, want, scenario, rtol, atol)
    if large_batch:  # last: the largest input
        z = torch.linspace(-100.0, 100.0, 4096).to(dtype)
        y = (z < 20).to(dtype)
        with on_input(Call.code(LARGE_BATCH_CODE)):
            value, want, scenario = _low_precision_loss(sub, ctx, z, y, 0.25, 2.0, LARGE_BATCH_WORDS)
        if not same_values(value, want, rtol=rtol, atol=atol):
            _explain_large_batch(sub, ctx, z, y, value, want, scenario, rtol, atol)


@check("float16 inputs: finite, close to the float32 loss", devices=DEVICES)
def float16_inputs(sub, ctx):
    _low_precision(sub, ctx, torch.float16, seed=2, large_batch=True)


@check("bfloat16 inputs: finite, close to the float32 loss", devices=DEVICES)
def bfloat16_inputs(sub, ctx):
    _low_precision(sub, ctx, torch.bfloat16, seed=3)


@check("gradient w.r.t. z matches gradcheck in float64", devices=DEVICES)
def gradient_float64(sub, ctx):
    rng = ctx.rng(4)
    for shape, alpha, gamma in (((7,), 0.7, 0.5), ((2, 3, 2), 0.5, 3.0), ((4, 5), 0.25, 2.0)):  # small to large
        # |z| >= 0.1: the |z| and max(z, 0) forms have a kink at exactly z = 0 under autograd.
        magnitude = rng.uniform(0.1, 4.0, size=shape)
        sign = rng.choice([-1.0, 1.0], size=shape)
        z = torch.from_numpy(magnitude * sign)
        y = torch.from_numpy(np.asarray(rng.random(size=shape) < 0.5, dtype=np.float64))
        scenario = _describe_config(z, alpha, gamma, ctx.device)
        # A wrong loss has a wrong gradient too: say so, rather than blame the autograd graph.
        got = _scalar(inputs_unchanged(sub, "focal_loss", z, y, scenario=scenario, alpha=alpha, gamma=gamma), what="focal loss", scenario=scenario)
        want = float(torchvision_focal_loss(z, y, alpha, gamma))
        value = as_float(got, what="focal loss", scenario=scenario)
        value_right = math.isclose(value, want, rel_tol=1e-7, abs_tol=1e-7)
        value_wrong = (f"The loss value itself is already wrong at these logits (expected {want:.8g}, got {value:.8g}), so its gradient is too:"
                       " fix the value first (see the float64 check).")
        with on_input(gradient_code(z, y, alpha, gamma)), explained(lambda: _gradient_hint(sub, z, y, alpha, gamma) if value_right else value_wrong):  # noqa: B023
            gradcheck_float64(sub, ctx, "focal_loss", [z, y], [0], kwargs={"alpha": alpha, "gamma": gamma}, scenario=scenario)
