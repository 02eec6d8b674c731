"""Checks for `deep-sets`: SetClassifier(d, h, n_cls), a Deep Sets classifier with padding and missing features.

Architectures are free, so the learner's numbers are never compared with the reference's: every check is behavioural, on
the learner's own model, built in the sandbox after torch.manual_seed by the scenarios below and compared with itself:
invariances (shuffled points, pad contents, extra pads, the other sets of the batch, every point doubled), sensitivities
at the random initialisation (a NaN feature against a real 0, which feature is missing, a present feature of a point with
a missing one, one point repeated: "moves" means by more than DIFFER_ATOL), finiteness (an all-padded set, missing
features), and d(logits)/d(x) in float64 by autograd against central differences.
"""

from functools import partial

import torch

from mlprep.grading import (Call, Snapshot, assert_close, assert_finite, assert_keeps_precision, assert_returns_like, assert_shape, check, control_value,
                            dtype_name, explained, fail, fail_if_changed, invariance_probe, literal, on_input, same_values, scenario)
from mlprep.grading.attention import f64

NAN, BIG = float("nan"), 1e30
D, H, N_CLS = 3, 16, 4  # the model most checks build: SetClassifier(3, 16, 4)
DIFFER_ATOL = 1e-5  # logits that must differ must differ by more than this (a correct model: ~1e-2)
FD_EPS = 1e-6  # central differences, float64

# Points of d = 3 features (exactly representable), NaN where a feature is missing.
P0, P1, P2, P3 = [0.5, -1.0, 1.5], [NAN, 0.25, -0.5], [2.0, 0.75, -1.25], [-0.75, 1.0, NAN]
PAD_NAN, PAD_BIG = [NAN, NAN, NAN], [BIG, -BIG, BIG]


# -- The scenarios (run in the sandbox) and their learner-facing code ------------------------------
def _build(module, spec, device):
    d, h, n_cls, seed, dtype = spec
    torch.manual_seed(seed)
    return module.SetClassifier(d, h, n_cls).to(device=device, dtype=getattr(torch, dtype))


def _model_line(spec, on):
    d, h, n_cls, seed, dtype = spec
    return f"torch.manual_seed({seed})\nmodel = SetClassifier({d}, {h}, {n_cls}).to({on}.device{', torch.float64' if dtype == 'float64' else ''})"


def _forward_repro(interface, spec, inputs, grads=False, show=""):
    lines = [f"x{i}, keep{i} = {literal(x)}, {literal(keep)}" for i, (x, keep) in enumerate(inputs, start=1)]
    lines.append(_model_line(spec, "x1"))
    if grads:
        lines.append("w = torch.randn(len(x1), model(x1, keep1).shape[-1], generator=torch.Generator().manual_seed(0))  # fixed weights")
    lines.append(show or "model(x1, keep1)")
    return Call.code("\n".join(lines))


@scenario(repro=_forward_repro)
def forward_sets(module, spec, inputs, grads=False, show=""):
    """Scenario: SetClassifier(*spec) built after torch.manual_seed, run on each (x, keep) of `inputs`. Per input:
    the logits, which of x and keep it changed in place, and with `grads` the gradient of sum(logits * w) with
    respect to each parameter (w fixed random weights). `show` is only for the failing input's code."""
    model = _build(module, spec, inputs[0][0].device)
    seen = []
    for x, keep in inputs:
        before = Snapshot(x=x, keep=keep)
        model.zero_grad(set_to_none=True)
        out = model(x, keep)
        result = {"logits": out.detach().clone() if isinstance(out, torch.Tensor) else out, "changed": before.changed()}
        if grads and isinstance(out, torch.Tensor) and out.requires_grad:
            w = torch.randn(out.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float32).to(device=out.device, dtype=out.dtype)
            (out * w).sum().backward()
            result["grads"] = {name: None if p.grad is None else p.grad.detach().clone() for name, p in model.named_parameters()}
        seen.append(result)
    return seen


def _jacobian_repro(interface, spec, x, keep):
    return Call.code(f"x, keep = {literal(x)}, {literal(keep)}\n{_model_line(spec, 'x')}\n"
                     "torch.autograd.functional.jacobian(lambda x: model(x, keep), x)  # d(logits)/d(x): compare with central differences")


@scenario(repro=_jacobian_repro)
def jacobian_check(module, spec, x, keep):
    """Scenario: d(logits)/d(x) of the learner's model by autograd and by central differences (FD_EPS), both
    (B * n_cls, B * N * d); NaN entries of x are perturbed too (and stay NaN: their columns are not compared)."""
    model = _build(module, spec, x.device)
    out = model(x, keep)
    if not isinstance(out, torch.Tensor):
        return {"type": type(out).__name__}
    analytic = torch.autograd.functional.jacobian(lambda inp: model(inp, keep), x).reshape(out.numel(), x.numel())
    numeric = torch.zeros_like(analytic)
    with torch.no_grad():
        for i in range(x.numel()):
            step = torch.zeros_like(x).reshape(-1)
            step[i] = FD_EPS
            step = step.reshape(x.shape)
            numeric[:, i] = ((model(x + step, keep) - model(x - step, keep)) / (2 * FD_EPS)).reshape(-1)
    return {"type": "Tensor", "dtype": dtype_name(out.dtype), "logits": out.detach(), "analytic": analytic.detach(), "numeric": numeric}


def _logits_repro(interface, spec, x, keep, against=None, show=""):
    return _forward_repro(interface, spec, [(x, keep)] + ([tuple(against)] if against is not None else []), show=show)


@scenario(repro=_logits_repro)
def set_logits(module, spec, x, keep, against=None, show=""):
    """Scenario for the invariance probes: SetClassifier(*spec) built after torch.manual_seed, its logits on (x, keep).
    `against` (the input they are compared with) and `show` only shape the failing input's code."""
    model = _build(module, spec, x.device)
    out = model(x, keep)
    return out.detach().clone() if isinstance(out, torch.Tensor) else out


def _probe(sub, spec, base, changed, *, what, scenario_text, show, hint="", graded=None, explain=None):
    """invariance_probe on set_logits: the logits of `changed` (x, keep) must be those of `base` (`explain`: a deferred hint);
    the failing input shows both inputs and the line `show`. Then both inputs go through the common rules (x and keep
    unchanged, pads of 1e30 and NaN included)."""
    with explained(explain or (lambda: "")):
        invariance_probe(sub, set_logits, (spec, *base, changed, show), (spec, *changed), what=what, scenario=scenario_text, hint=hint,
                         graded=graded)
    _run(sub, spec, [base, changed], scenario_text, show=show)


# -- Judging what came back ------------------------------------------------------------------------
def _t(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


def _k(*rows):
    return torch.tensor(rows, dtype=torch.bool)


def _spec(seed, d=D, h=H, n_cls=N_CLS, dtype="float32"):
    return (d, h, n_cls, seed, dtype)


def _run(sub, spec, inputs, scenario_text, *, grads=False, show=""):
    """The learner's per-input observations, after the common rules: logits a tensor of shape (B, n_cls) on the
    device, x and keep unchanged."""
    seen = sub.run(forward_sets, spec, inputs, grads=grads, show=show)
    n_cls = spec[2]
    for (x, _), result in zip(inputs, seen):
        logits = result["logits"]
        if not isinstance(logits, torch.Tensor):
            fail(f"SetClassifier.forward ({scenario_text}): expected a tensor of logits, got {type(logits).__name__}")
        assert_returns_like(logits, x, what="SetClassifier logits", scenario=scenario_text, device=sub.device)
        assert_shape(logits, (x.shape[0], n_cls), what="SetClassifier logits (B, n_cls)", scenario=scenario_text)
        fail_if_changed(result["changed"], who="SetClassifier.forward", where=scenario_text,
                        fix="torch.where / masked_fill without the trailing underscore make new tensors")
        if grads and "grads" not in result:
            fail(f"SetClassifier logits ({scenario_text}) are not connected to the model's parameters in autograd: build them"
                 " with torch operations on the parameters (no .detach(), .item() or torch.no_grad())")
    return seen


def _differ(sub, spec, inputs, what, scenario_text, *, show, hint, explain=None):
    """The two inputs' logits, after the common rules (_run), must be finite and differ by more than DIFFER_ATOL
    (`explain`: a deferred hint for when they do not)."""
    a, b = (result["logits"] for result in _run(sub, spec, inputs, scenario_text, show=show))
    with explained(explain or (lambda: "")):
        assert_finite(a, what="SetClassifier logits", scenario=scenario_text)
        assert_finite(b, what="SetClassifier logits", scenario=scenario_text)
        gap = float((a.detach().cpu().double() - b.detach().cpu().double()).abs().max())
        if gap <= DIFFER_ATOL:
            fail(f"{what} ({scenario_text}): the logits should differ, but they are the same (largest difference {gap:.3g}; a"
                 f" correct model at its random initialisation moves them by ~1e-2). {hint}", largest_difference=gap)


def _grads_same(got, want, scenario_text, hint=""):
    for name, want_grad in want.items():
        got_grad = got.get(name)
        if (got_grad is None) != (want_grad is None):
            fail(f"the gradient of parameter {name!r} ({scenario_text}) is None in one run and not in the other. {hint}")
        if want_grad is not None:
            assert_close(got_grad, want_grad, what=f"gradient of sum(logits * w) w.r.t. parameter {name!r}", scenario=scenario_text, equal_nan=True, hint=hint)


def _grads_finite(grads, scenario_text, hint):
    for name, grad in grads.items():
        if grad is not None:
            assert_finite(grad, what=f"gradient of sum(logits * w) w.r.t. parameter {name!r}", scenario=scenario_text, hint=hint)


GRADS_SHOW = "(model(x1, keep1) * w).sum().backward()\n{n: p.grad for n, p in model.named_parameters()}"
FILL_FIRST = ("Replace the pads and the missing features by 0 BEFORE phi, with torch.where (0 * NaN is NaN), and feed"
              " phi the missing flags next to them.")


# -- Checks ----------------------------------------------------------------------------------------
@check("forward returns (B, n_cls) logits on the input's device", devices=("cpu", "cuda"))
def logits_shape(sub, ctx):
    cases = [  # small to large
        (_spec(0, d=2, h=8, n_cls=3), _t([[[0.5, -1.0], [1.5, 0.25]]]), _k([True, True])),
        (_spec(0), _t([P0 + P2, P2 + P0]).reshape(2, 2, 3), _k([True, True], [True, True])),
    ]
    for spec, x, keep in cases:
        scenario_text = f"SetClassifier{spec[:3]}, x shape {tuple(x.shape)}, no pads, nothing missing, {ctx.device}"
        seen = _run(sub, spec, [(x, keep)], scenario_text)
        assert_finite(seen[0]["logits"], what="SetClassifier logits", scenario=scenario_text)


@check("shuffling the points of a set gives the same logits", devices=("cpu", "cuda"))
def permutation(sub, ctx):
    cases = [  # small to large
        (_t([[P0, P2, P1]]), _k([True, True, True]), [2, 0, 1]),
        (_t([[P0, P1, PAD_BIG, P2, P3]]), _k([True, True, False, True, True]), [4, 2, 0, 3, 1]),
    ]
    for x, keep, perm in cases:
        scenario_text = f"x shape {tuple(x.shape)} with a missing feature (NaN) and pads, points reordered by {perm}, {ctx.device}"
        _probe(sub, _spec(1), (x, keep), (x[:, perm], keep[:, perm]), what="logits of the shuffled set", scenario_text=scenario_text,
               show=f"model(x1, keep1) - model(x2, keep2)  # x2 = x1[:, {perm}]: must be ~0",
               hint="Encode each point on its own and pool with a symmetric function (the mean over the real points).")


@check("pad contents (NaN, +-1e30) change neither logits nor parameter gradients", devices=("cpu", "cuda"))
def pad_contents(sub, ctx):
    keep = _k([True, True, False, True])
    variants = [("0", [0.0, 0.0, 0.0]), ("NaN", PAD_NAN), ("+-1e30", PAD_BIG), ("-1e30", [-BIG, -BIG, -BIG]), ("mixed", [3.5, NAN, 1e6])]
    inputs = [(_t([[P0, P1, pad, P2]]), keep) for _, pad in variants]
    texts = [f"x shape (1, 4, 3), keep {keep.tolist()}, the pad at position 2 set to {name} against 0, {ctx.device}" for name, _ in variants]
    for i in range(1, len(variants)):
        _probe(sub, _spec(2), inputs[0], inputs[i], what="logits", scenario_text=texts[i], show="model(x1, keep1) - model(x2, keep2)  # must be ~0",
               hint="A pad must never reach the pooled vector: exclude it from the sum and from the count.")
    # The parameter gradients: a pad that enters phi and is masked out afterwards leaves the logits alone, not the gradients.
    scenario_text = f"x shape (1, 4, 3), keep {keep.tolist()}, the pad at position 2 set to each of {[name for name, _ in variants]}, {ctx.device}"
    seen = _run(sub, _spec(2), inputs, scenario_text, grads=True)
    for i in range(1, len(variants)):
        with on_input(_grads_repro(_spec(2), [inputs[0], inputs[i]])):
            _grads_same(seen[i]["grads"], seen[0]["grads"], texts[i], hint=FILL_FIRST)


def _grads_repro(spec, inputs):
    show = ("grads = []\nfor x, keep in ((x1, keep1), (x2, keep2)):\n    model.zero_grad()\n    (model(x, keep) * w).sum().backward()\n"
            "    grads.append([p.grad.clone() for p in model.parameters()])\n[(a - b).abs().max() for a, b in zip(*grads)]  # must be ~0")
    return _forward_repro(None, spec, inputs, grads=True, show=show)


@check("a set padded to N gives the logits of the same set unpadded", devices=("cpu", "cuda"))
def extra_pads(sub, ctx):
    cases = [  # small to large
        (_t([[P0, P2]]), _t([[P0, P2, PAD_NAN]]), _k([True, True, False])),
        (_t([[P0, P1, P2]]), _t([[P0, PAD_NAN, P1, P2, [0.0, 0.0, 0.0]]]), _k([True, False, True, True, False])),
    ]
    for alone, padded, keep in cases:
        pads = int((~keep).sum())
        scenario_text = (f"{alone.shape[1]} real points alone, then with {pads} pad{'s' if pads != 1 else ''} among them (x shape"
                         f" {tuple(padded.shape)}), {ctx.device}")
        _probe(sub, _spec(3), (alone, torch.ones(1, alone.shape[1], dtype=torch.bool)), (padded, keep), what="logits of the padded set",
               scenario_text=scenario_text, show="model(x1, keep1) - model(x2, keep2)  # must be ~0",
               explain=partial(_extra_pads_hint, sub, _spec(3), padded, keep))


def _extra_pads_hint(sub, spec, padded, keep):
    """Control: the padded set with other (finite) values in its pads. The logits move: the pads' values reach them; they
    stay put: only the pads' number does (a mean over N)."""
    other = torch.where(keep[..., None], padded, _t([1.5, -2.0, 0.25]))
    logits = [control_value(sub, set_logits, spec, x, keep, read=f64) for x in (padded, other)]
    if any(value is None for value in logits):
        return ""
    if same_values(*logits, rtol=1.3e-6, atol=1e-5, equal_nan=True):
        return ("Other values in the same pads leave the logits as they are, so the pads' number moves them: pool with the mean over the REAL"
                " points, the masked sum divided by the number of True in keep, not by N.")
    return ("Other values in the same pads move the logits, so the pads' values reach them: keep the pads out of phi and out of the sum"
            f" (torch.where before phi), and divide by the number of True in keep. {FILL_FIRST}")


# The other sets of the batch, replaced: other values and another number of real points (one each instead of two and one).
OTHER_SETS = (_t([[[0.25, -0.5, 1.0], PAD_BIG]]), _k([True, False])), (_t([[PAD_NAN, [NAN, 1.5, -0.25]]]), _k([False, True]))


@check("a set's logits do not depend on the other sets in the batch", devices=("cpu", "cuda"))
def batch_independence(sub, ctx):
    x = _t([[P0, P1], [P2, PAD_NAN], [P3, P0]])
    keep = _k([True, True], [True, False], [True, True])
    for i in range(3):
        others = iter(OTHER_SETS)
        parts = [(x[j:j + 1], keep[j:j + 1]) if j == i else next(others) for j in range(3)]
        changed = (torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]))
        scenario_text = (f"a batch of 3 sets (x shape {tuple(x.shape)}, keep {keep.tolist()}), then the same batch with the other two"
                         f" sets replaced by others (keep {changed[1].tolist()}), {ctx.device}")
        _probe(sub, _spec(4), (x, keep), changed, what=f"logits of set {i} when the other sets of the batch change", scenario_text=scenario_text,
               show=f"model(x1, keep1)[{i}] - model(x2, keep2)[{i}]  # set {i} is the same in both batches: must be ~0",
               graded=lambda out, i=i: out[i] if out.dim() >= 1 and out.shape[0] > i else out,
               hint="Each set is pooled on its own: count and average over dim=1 (the points of one set), never over the"
                    " whole batch, and use no layer that mixes the sets (batch normalisation in training mode).")


@check("pooling is a mean: duplicating every point leaves the logits unchanged", devices=("cpu", "cuda"))
def duplication(sub, ctx):
    x = _t([[P0, P1, P2]])
    twice = torch.cat([x, x], dim=1)
    scenario_text = f"the set x shape {tuple(x.shape)} against the same points twice (x shape {tuple(twice.shape)}), {ctx.device}"
    seen = _run(sub, _spec(5), [(x, _k([True] * 3)), (twice, _k([True] * 6))], scenario_text,
                show="model(x1, keep1) - model(x2, keep2)  # x2 is x1 twice over: must be ~0")
    assert_close(seen[1]["logits"], seen[0]["logits"], what="logits of the doubled set", scenario=scenario_text, equal_nan=True,
                 hint="Doubling every point doubles a sum but leaves a mean alone: divide the pooled sum by the number of real points.")


@check("pooling is a mean: repeating one point weighs it more", devices=("cpu", "cuda"))
def multiplicity(sub, ctx):
    a, b = [1.5, -1.0, 0.5], [-1.0, 2.0, -0.5]
    x1, x2 = _t([[a, b]]), _t([[a, a, b]])
    scenario_text = f"the set {{a, b}} against {{a, a, b}}, a = {a}, b = {b}, {ctx.device}"
    _differ(sub, _spec(6), [(x1, _k([True, True])), (x2, _k([True, True, True]))], "logits of {a, b} and {a, a, b}", scenario_text,
            show="model(x1, keep1) - model(x2, keep2)  # the mean moves toward a: must not be ~0",
            hint="A mean of (a, a, b) is (2 phi(a) + phi(b)) / 3, not (phi(a) + phi(b)) / 2; a max over the points gives the same"
                 " vector for both: pool with the mean over the real points.")


@check("a missing feature (NaN) is told apart from a real 0, feature by feature", devices=("cpu", "cuda"))
def missing_flag(sub, ctx):
    spec = _spec(7)
    for j in range(D):  # small to large: one feature at a time
        missing, zero = [0.75, -0.5, 1.25], [0.75, -0.5, 1.25]
        missing[j], zero[j] = NAN, 0.0
        x1, x2 = _t([[P0, missing]]), _t([[P0, zero]])
        scenario_text = f"a set of two real points, feature {j} of the second NaN (missing) against 0.0, {ctx.device}"
        _differ(sub, spec, [(x1, _k([True, True])), (x2, _k([True, True]))], f"logits with feature {j} missing and with feature {j} = 0",
                scenario_text, show="model(x1, keep1) - model(x2, keep2)  # a missing value is not a 0: must not be ~0",
                hint="Filling NaN with 0 alone makes a missing value look like a measured 0: give phi a missing flag per feature"
                     " as well, e.g. torch.cat([x filled with 0, torch.isnan(x)], dim=-1) (2 * d inputs).")
    x1, x2 = _t([[P0, [NAN, 0.0, 1.25]]]), _t([[P0, [0.0, NAN, 1.25]]])
    scenario_text = f"a set of two real points, the second [nan, 0.0, 1.25] against [0.0, nan, 1.25], {ctx.device}"
    _differ(sub, spec, [(x1, _k([True, True])), (x2, _k([True, True]))], "logits with feature 0 missing and with feature 1 missing", scenario_text,
            show="model(x1, keep1) - model(x2, keep2)  # which feature is missing matters: must not be ~0", hint="",
            explain=lambda: _which_feature_hint(sub, spec))


def _which_feature_hint(sub, spec):
    """Control: change a PRESENT feature of the point with a missing one. If the logits stay put too, the point's
    values are lost altogether (NaN through phi); if they move, the flags cannot say which feature is missing."""
    keep = _k([True, True])
    gap = control_value(sub, forward_sets, spec, [(_t([[P0, [NAN, 0.0, 1.25]]]), keep), (_t([[P0, [NAN, 2.0, 1.25]]]), keep)],
                        read=lambda got: float((f64(got[0]["logits"]) - f64(got[1]["logits"])).abs().max()))
    if gap is None:
        return ""
    if gap <= DIFFER_ATOL:
        return ("Changing feature 1 of [nan, 0.0, 1.25] to 2.0 leaves the logits unchanged as well: a point with a missing feature"
                f" loses all its values. {FILL_FIRST}")
    return "One flag per point cannot say WHICH feature is missing: the flag is per feature, torch.isnan(x) of shape (B, N, d)."


@check("a point with a missing feature still counts its other features", devices=("cpu", "cuda"))
def other_features_count(sub, ctx):
    x1, x2 = _t([[P0, [NAN, 0.25, -0.5]]]), _t([[P0, [NAN, 2.0, -0.5]]])
    keep = _k([True, True])
    scenario_text = f"a set of two real points, the second with feature 0 missing and feature 1 = 0.25 against 2.0, {ctx.device}"
    _differ(sub, _spec(8), [(x1, keep), (x2, keep)], "logits when only a present feature of a point with a missing one changes", scenario_text,
            show="model(x1, keep2) - model(x2, keep2)  # feature 1 is present in both and differs: must not be ~0",
            hint="The point's present features do not reach the logits: it is dropped or zeroed as a whole (a NaN that"
                                " enters phi turns every unit of that point into NaN, and zeroing NaN afterwards zeroes all of"
                                f" them). {FILL_FIRST}")


@check("an all-padded set gives finite logits and gradients", devices=("cpu", "cuda"),
       edge="An all-padded set (no real point) gives finite logits and finite gradients.")
def all_padded(sub, ctx):
    cases = [  # small to large
        (_t([[[0.0, 0.0, 0.0]]]), _k([False])),
        (_t([[PAD_NAN, PAD_BIG, [0.5, 0.0, -2.0]], [P0, P2, PAD_NAN]]), _k([False, False, False], [True, True, False])),
    ]
    for x, keep in cases:
        scenario_text = f"x shape {tuple(x.shape)}, keep {keep.tolist()} (set 0 has no real point), {ctx.device}"
        seen = _run(sub, _spec(9), [(x, keep)], scenario_text, grads=True)
        with explained(partial(_empty_set_hint, sub, x, keep)):
            assert_finite(seen[0]["logits"], what="SetClassifier logits", scenario=scenario_text)
        with on_input(_forward_repro(None, _spec(9), [(x, keep)], grads=True, show=GRADS_SHOW)):
            _grads_finite(seen[0]["grads"], scenario_text, hint="Gradients must stay finite too: no 0/0 on the way, also in masked branches.")


def _empty_set_hint(sub, x, keep):
    """Control: the same sets with every pad set to 0. A set without a real point still non-finite: the 0/0 of an empty mean;
    finite: the pads' own values (NaN, 1e30) reach the logits."""
    logits = control_value(sub, set_logits, _spec(9), torch.where(keep[..., None], x, 0.0), keep, read=f64)
    if logits is None or logits.dim() != 2 or logits.shape[0] != len(keep):
        return ""
    if not bool(logits[~keep.any(dim=1)].isfinite().all()):
        return ("With every pad set to 0 the set without a real point is still not finite: the mean over no point is 0/0; divide by the number"
                " of real points clamped to at least 1.")
    if bool(logits.isfinite().all()):
        return f"With every pad set to 0 the logits are finite: the pads' own values (NaN, 1e30) reach them. {FILL_FIRST}"
    return ""


@check("parameter gradients stay finite with missing features", devices=("cpu", "cuda"))
def finite_gradients(sub, ctx):
    x = _t([[P1, P0, [NAN, NAN, 0.5]], [P3, PAD_NAN, P2]])
    keep = _k([True, True, True], [True, False, True])
    scenario_text = f"x shape {tuple(x.shape)} with missing features (NaN) in real points and NaN pads, keep {keep.tolist()}, {ctx.device}"
    seen = _run(sub, _spec(10), [(x, keep)], scenario_text, grads=True, show=GRADS_SHOW)
    assert_finite(seen[0]["logits"], what="SetClassifier logits", scenario=scenario_text)
    with explained(lambda: _nan_gradient_hint(sub, x, keep)):
        _grads_finite(seen[0]["grads"], scenario_text, hint="")


def _nan_gradient_hint(sub, x, keep):
    """Control: the same sets with every NaN replaced by 0. Finite gradients there put the NaN on the missing values."""
    finite = control_value(sub, forward_sets, _spec(10), [(x.nan_to_num(nan=0.0), keep)], grads=True,
                           read=lambda got: bool(got[0]["grads"]) and all(g is None or bool(g.isfinite().all()) for g in got[0]["grads"].values()))
    if not finite:
        return ""
    return ("With every NaN replaced by 0 the gradients are finite: the NaN values reach phi's input, and then the gradient of"
            f" phi's weights is NaN (NaN * 0 is NaN) even when its output is cleaned afterwards. {FILL_FIRST}")


@check("gradients w.r.t. x match central differences (float64)", devices=("cpu", "cuda"))
def gradcheck_x(sub, ctx):
    x = _t([[P0, P1, [0.25, 0.5, -1.0]], [[1.0, -0.5, 2.0], [3.0, -2.5, 0.75], P2]], torch.float64)
    keep = _k([True, True, True], [True, False, True])
    spec = _spec(11, dtype="float64")
    scenario_text = (f"model.to(torch.float64), x float64 shape {tuple(x.shape)} (a missing feature, a pad), keep {keep.tolist()};"
                     f" autograd against central differences with step {FD_EPS:g}, at every present feature and pad, {ctx.device}")
    seen = sub.run(jacobian_check, spec, x, keep)
    if seen["type"] != "Tensor":
        fail(f"SetClassifier.forward ({scenario_text}): expected a tensor of logits, got {seen['type']}")
    assert_returns_like(seen["logits"], x, what="SetClassifier logits", scenario=scenario_text, device=sub.device)
    assert_keeps_precision(seen["logits"], torch.float64, what="logits of a float64 model on float64 x", scenario=scenario_text)
    graded = ~x.isnan().reshape(1, -1)  # the derivative w.r.t. a missing value is not graded
    analytic, numeric = (torch.where(graded, seen[name].cpu(), 0.0) for name in ("analytic", "numeric"))
    cut_off = bool((analytic == 0).all()) and bool((numeric != 0).any())
    assert_close(analytic, numeric, what="d(logits)/d(x) by autograd (rows: logits, columns: entries of x)", scenario=scenario_text, rtol=1e-5, atol=1e-7,
                 hint="Autograd finds no dependence on x at all: the logits are cut off from x (a .detach(), .data, NumPy round trip or torch.no_grad()"
                      " on the way from x to phi)." if cut_off else "")
