"""Checks for `esmm`: the ESMM loss, pCTR and pCTCVR = pCTR * pCVR supervised on every impression.

Expected values are computed here in float64 from the inputs' values, by another route than the
reference's logaddexp: log(1 - pCTCVR) from log pCTCVR by the two-branch log1mexp. Gradients are
compared with the reference's in float64 (gradcheck_float64).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from mlprep.grading import (CheckFailed, as_float, assert_close, assert_keeps_precision, assert_returns_like, check, control_value, explained, fail,
                            gradcheck_float64, inputs_unchanged, mistake_hint, plural, same_values, tolerance_for, value_and_grad)

DEVICES = ("cpu", "cuda")
FLOAT64_RTOL, FLOAT64_ATOL = 1e-7, 1e-8  # a softplus with torch's threshold of 20 is off by at most e^-20 per term
CTR_DETACHED = ("Your gradient with respect to ctr_logit is exactly the one the CTR term alone gives, as if pCTR were detached inside"
                " pCTCVR = pCTR * pCVR (a .detach(), .item(), NumPy or no_grad on the way): the CTCVR term depends on ctr_logit too, through"
                " pCTR, and that gradient is what ESMM's CTR tower learns from.")
CTR_HIDDEN = ("Your loss value is right here but its gradient with respect to ctr_logit is not, so what autograd differentiates is not your"
              " value: part of it is hidden from autograd (a .detach(), .item(), NumPy or no_grad on the way) or has a hand-written backward.")
# Single impressions (ctr_logit, cvr_logit, click, buy) for telling apart which term breaks when computed from rounded
# probabilities. At the first only the CTR term can: sigmoid(50) rounds to 1 against click = 0 (log(1 - pCTR) = log(0)), while
# pCTCVR = sigmoid(50) * sigmoid(-50) is about 2e-22. At the second the product rounds to 1 against the label 0 (log(1 - pCTCVR) =
# log(0)), and a CTR term from sigmoid(50) breaks there too when it takes 0 * log(1 - pCTR): so the product is named only when the
# first impression comes back finite.
CTR_BREAKS, PRODUCT_BREAKS = (50.0, -50.0, 0.0, 0.0), (50.0, 50.0, 1.0, 0.0)


# -- expected values and known mistakes (judge side, float64 on the CPU) ---------------------------
def _log1mexp(L):
    """log(1 - exp(L)) for L <= 0, the two-branch form (Maechler 2012)."""
    return torch.where(L > -math.log(2), torch.log(-torch.expm1(L.clamp(max=-1e-300))), torch.log1p(-torch.exp(L.clamp(max=-math.log(2)))))


def _bce(z, log_p, log_not_p):
    return -(z * log_p + (1 - z) * log_not_p)


def _f64(*tensors):
    return [t.detach().cpu().double() for t in tensors]


def expected(a, b, click, buy):
    a, b, click, buy = _f64(a, b, click, buy)
    log_ctcvr = F.logsigmoid(a) + F.logsigmoid(b)
    return float(_bce(click, F.logsigmoid(a), F.logsigmoid(-a)).mean() + _bce(click * buy, log_ctcvr, _log1mexp(log_ctcvr)).mean())


def mistakes(a, b, click, buy):
    """{what the code does wrong: the loss it then gives}, float64."""
    a, b, click, buy = _f64(a, b, click, buy)
    ctr = _bce(click, F.logsigmoid(a), F.logsigmoid(-a))
    log_ctcvr = F.logsigmoid(a) + F.logsigmoid(b)
    ctcvr = _bce(click * buy, log_ctcvr, _log1mexp(log_ctcvr))
    clicked = click > 0
    found = {
        "the CTCVR term uses buy as its label; it is click AND buy (click * buy): a purchase without a click is a negative":
            ctr.mean() + _bce(buy, log_ctcvr, _log1mexp(log_ctcvr)).mean(),
        "the two terms are summed over the impressions; each is a mean over all N": ctr.sum() + ctcvr.sum(),
        "the CVR head is trained with its own BCE against click * buy; ESMM supervises the product pCTR * pCVR":
            ctr.mean() + _bce(click * buy, F.logsigmoid(b), F.logsigmoid(-b)).mean(),
        "the loss is computed from the probabilities with F.binary_cross_entropy, which clamps each log at -100: where"
        " pCTR * pCVR rounds to 1 (or to 0) the loss is capped instead of right; stay in log space (logsigmoid)":
            F.binary_cross_entropy(torch.sigmoid(a), click) + F.binary_cross_entropy(torch.sigmoid(a) * torch.sigmoid(b), click * buy),
    }
    if clicked.any():
        found["pCVR is supervised by buy on the clicked impressions only: that is the sample-selection bias ESMM removes;"
              " supervise pCTCVR = pCTR * pCVR by click * buy on every impression"] = (
            ctr.mean() + _bce(buy[clicked], F.logsigmoid(b[clicked]), F.logsigmoid(-b[clicked])).mean())
    return {text: float(value) for text, value in found.items()}


def nonfinite_hint(sub, a, b, click, buy):
    """Why the loss is not finite, told by the single impressions CTR_BREAKS and PRODUCT_BREAKS: a term computed from rounded
    probabilities is named only when your loss breaks where that term does, and not where only the other one would."""
    def breaks(impression):
        return control_value(sub, "esmm_loss", *tensors(*([v] for v in impression), dtype=a.dtype), read=lambda got: not math.isfinite(float(got)))

    dtype, (a, b, click, buy) = a.dtype, _f64(a, b, click, buy)
    p_ctr = torch.sigmoid(a.to(dtype))
    ctr_breaks = breaks(CTR_BREAKS)
    rounds = (p_ctr == 1).nonzero()
    if ctr_breaks and len(rounds):
        i = int(rounds[0])
        return (f"At impression {i} (ctr_logit = {a[i].item():g}, click = {click[i].item():g}) sigmoid(a) rounds to exactly 1, so log(1 - pCTR) is"
                " log(0) = -inf (and 0 * -inf is NaN where click = 1); your loss is not finite either at a = 50, b = -50, click 0, buy 0, where"
                " only a CTR term computed from sigmoid(a) breaks. Take log(1 - pCTR) as logsigmoid(-a), and log pCTR as logsigmoid(a).")
    rounds = ((p_ctr * torch.sigmoid(b.to(dtype)) == 1) & (click * buy == 0)).nonzero()
    if ctr_breaks is False and len(rounds) and breaks(PRODUCT_BREAKS):
        i = int(rounds[0])
        return (f"At impression {i} (ctr_logit = {a[i].item():g}, cvr_logit = {b[i].item():g}, click * buy = 0) sigmoid(a) * sigmoid(b) rounds to"
                " exactly 1, so log(1 - pCTCVR) of that product is log(0) = -inf (your loss is not finite either at a = b = 50, click 1, buy 0,"
                " and it is at a = 50, b = -50, click 0, where a CTR term computed from sigmoid(a) would break). Stay in log space:"
                " log pCTCVR = logsigmoid(a) + logsigmoid(b), and log(1 - pCTCVR) = log(sigmoid(-a) + sigmoid(a) sigmoid(-b)) (torch.logaddexp"
                " of two logsigmoids), or log1mexp of log pCTCVR.")
    return ""


def _ctr_detached_loss(a, b, click, buy):
    """The loss with pCTR detached inside pCTCVR: its gradient with respect to ctr_logit is the CTR term's alone."""
    log_ctr, log_not_ctr = F.logsigmoid(a), F.logsigmoid(-a)
    log_ctcvr = log_ctr.detach() + F.logsigmoid(b)
    log_not_ctcvr = torch.logaddexp(log_not_ctr.detach(), log_ctr.detach() + F.logsigmoid(-b))
    return _bce(click, log_ctr, log_not_ctr).mean() + _bce(click * buy, log_ctcvr, log_not_ctcvr).mean()


def ctr_gradient_hint(sub, a, b, click, buy):
    """The loss is right but d/d(ctr_logit) is not: name the detached pCTR when the gradient is exactly that one's."""
    got = control_value(sub, value_and_grad, "esmm_loss", [a, b, click, buy], [0, 1], read=lambda seen: seen[1][0])
    detached = value_and_grad(type("Detached", (), {"esmm_loss": staticmethod(_ctr_detached_loss)}), "esmm_loss", _f64(a, b, click, buy), [0, 1])[1][0]
    return CTR_DETACHED if got is not None and same_values(got, detached, rtol=1e-6, atol=1e-10) else CTR_HIDDEN


# -- inputs and judging one call -------------------------------------------------------------------
def batch(rng, N, scale=2.0, dtype=torch.float64, click_rate=0.4, buy_rate=0.5):
    """(ctr_logit, cvr_logit, click, buy): logits N(0, scale) at odd multiples of 1/16 (exact, short, never 0, where the
    max(a, 0) and |a| forms have a kink under autograd), buy possible without a click."""
    logits = lambda: torch.from_numpy((np.floor(8 * scale * rng.standard_normal(N)) + 0.5) / 8).to(dtype)  # noqa: E731
    click = torch.from_numpy((rng.random(N) < click_rate).astype(np.float64)).to(dtype)
    buy = torch.from_numpy((rng.random(N) < buy_rate).astype(np.float64)).to(dtype)
    return logits(), logits(), click, buy


def tensors(*rows, dtype=torch.float64):
    return [torch.tensor(row, dtype=dtype) for row in rows]


def describe(a, click, buy, device, extra=""):
    n_clicks, n_both, orphans = int(click.sum()), int((click * buy).sum()), int(((click == 0) & (buy != 0)).sum())
    return (f"N = {a.numel()}, {str(a.dtype).removeprefix('torch.')}, {plural(n_clicks, 'click')}, {plural(n_both, 'click-and-buy')},"
            f" {plural(orphans, 'buy')} without a click{extra}, {device}")


def judge(sub, a, b, click, buy, scenario=None):
    scenario = scenario or describe(a, click, buy, sub.device)
    got = inputs_unchanged(sub, "esmm_loss", a, b, click, buy, scenario=scenario)
    assert_returns_like(got, a, what="esmm_loss's result", scenario=scenario, device=sub.device)
    value = as_float(got, what="esmm_loss's result", scenario=scenario)
    assert_keeps_precision(got, a.dtype, what="esmm_loss's result", scenario=scenario)
    want = expected(a, b, click, buy)
    rtol, atol = (FLOAT64_RTOL, FLOAT64_ATOL) if a.dtype == torch.float64 else tolerance_for(a.dtype)
    match = 1e-9 if a.dtype == torch.float64 else 1e-5
    with explained(lambda: mistake_hint(value, mistakes(a, b, click, buy), want=want, rtol=match, apart=(10 * match, 1e-12),
                                        say="Your loss matches one where {}.") if math.isfinite(value) else nonfinite_hint(sub, a, b, click, buy)):
        assert_close(value, want, what="esmm_loss's result", scenario=scenario, rtol=rtol, atol=atol)
    return value


def judge_gradients(sub, ctx, a, b, click, buy, scenario):
    judge(sub, a, b, click, buy, scenario)  # a wrong loss has wrong gradients too: the value first, so it is right below
    try:
        gradcheck_float64(sub, ctx, "esmm_loss", [a, b, click, buy], [0, 1], scenario=scenario)
    except CheckFailed as failure:
        if "ctr_logit" in str(failure.details.get("what", "")):
            failure.explain = lambda: ctr_gradient_hint(sub, a, b, click, buy)
        raise


# -- checks ----------------------------------------------------------------------------------------
@check("matches mean BCE(pCTR, click) + mean BCE(pCTR * pCVR, click * buy) on small batches", devices=DEVICES)
def small_batches(sub, ctx):
    cases = [tensors([0.5], [-1.0], [1.0], [1.0]), tensors([1.5, -0.5, 2.0, -1.0], [0.25, 1.0, -2.0, 0.5], [1, 0, 1, 1], [1, 0, 0, 1]),
             tensors([0.0, 3.0, -2.5, 1.0, 0.75], [-1.5, 0.5, 2.0, 0.0, 4.0], [0, 1, 0, 1, 1], [0, 0, 0, 1, 1])]
    for a, b, click, buy in cases:
        judge(sub, a, b, click, buy)


@check("every impression counts, in both terms (random float64 batches)", devices=DEVICES)
def random_batches(sub, ctx):
    rng = ctx.rng(1)
    for N, click_rate in ((7, 0.5), (64, 0.1), (1000, 0.05)):
        judge(sub, *batch(rng, N, click_rate=click_rate))


@check("the CTCVR label is click AND buy: a purchase without a click is a negative", devices=DEVICES)
def click_and_buy(sub, ctx):
    for a, b, click, buy in (tensors([1.0, -0.5], [0.5, 2.0], [0, 1], [1, 1]), tensors([2.0, 0.0, -1.0, 1.5], [1.0, -1.0, 3.0, 0.5], [0, 0, 1, 1], [1, 1, 1, 0])):
        judge(sub, a, b, click, buy)


@check("logits of +-50: finite, correct loss and gradients", devices=DEVICES)
def saturated_logits(sub, ctx):
    # Every sign pair with every label pair: sigmoid(50) ** 2 rounds to 1 in float64 and float32.
    pairs = [(s * 50.0, t * 50.0, c, y) for s in (1, -1) for t in (1, -1) for c, y in ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))]
    a, b, click, buy = (list(column) for column in zip(*pairs))
    for dtype in (torch.float64, torch.float32):
        inputs = tensors(a, b, click, buy, dtype=dtype)
        scenario = describe(inputs[0], inputs[2], inputs[3], ctx.device, extra=", logits +-50 in every sign and label combination")
        if dtype == torch.float64:
            judge_gradients(sub, ctx, *inputs, scenario)
        else:
            judge(sub, *inputs, scenario)
    for a, b, click, buy in (tensors([50.0], [50.0], [1.0], [0.0]), tensors([-50.0], [-50.0], [1.0], [1.0])):
        judge(sub, a, b, click, buy)


@check("float32 inputs at float32 tolerance; float64 inputs keep float64", devices=DEVICES)
def dtypes(sub, ctx):
    rng = ctx.rng(2)
    for dtype in (torch.float32, torch.float64):
        judge(sub, *batch(rng, 50, scale=3.0, dtype=dtype))


@check("gradients with respect to ctr_logit and cvr_logit match in float64", devices=DEVICES)
def gradients(sub, ctx):
    rng = ctx.rng(3)
    for a, b, click, buy in (tensors([0.5, -1.0, 2.0], [1.0, 0.25, -1.5], [1, 0, 1], [1, 1, 0]), batch(rng, 40, click_rate=0.3)):
        judge_gradients(sub, ctx, a, b, click, buy, describe(a, click, buy, ctx.device))


@check("the result is a 0-d tensor on the inputs' device", devices=DEVICES, edge="The result is a 0-d tensor on the inputs' device.")
def result_kind(sub, ctx):
    a, b, click, buy = tensors([0.5, -1.0], [1.0, 0.25], [1, 0], [1, 0])
    scenario = describe(a, click, buy, ctx.device)
    got = inputs_unchanged(sub, "esmm_loss", a, b, click, buy, scenario=scenario)
    assert_returns_like(got, a, what="esmm_loss's result", scenario=scenario, device=sub.device)
    if tuple(got.shape) != ():
        fail(f"esmm_loss's result ({scenario}): expected a 0-d tensor (one scalar loss), got shape {tuple(got.shape)}; reduce each term with .mean().")
