"""Checks for `batchnorm`. BatchNorm1d keeps state, so each case is a run in the sandbox (`bn_run`): the learner's
class is built there (moved with .to(device) when it is an nn.Module), its batches are made there from short specs
on the check's device, and the run records the output, running_mean and running_var after every call. The
expected run is the same scenario on nn.BatchNorm1d(affine=False) in float64 on the CPU, fed the same values; the
first call that differs is reported, with the run up to it as code. Tolerances: the prompt's (FLOAT32_TOL,
FP16_TOL), float64 at assert_close's default."""

import threading
import types
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from mlprep.grading import (Call, GraderDefect, Snapshot, assert_close, assert_keeps_precision, assert_returns_like, assert_shape, attribute_copy, check,
                            control_value, dtype_name, explained, fail, inputs_unchanged, invariance_probe, mistake_hint, on_input, outcome, same_values, scenario,
                            tolerance_for)

DEVICES = ("cpu", "cuda")
BN, LN = ("BatchNorm1d",), ("layer_norm",)
FP16_TOL = (1e-3, 1e-3)  # the contract's rtol, atol for float16 input at mean 1000
# float32 runs (outputs and running statistics): the prompt's rtol = atol = 1e-4. Correct float32 code (two-pass,
# Welford, torch's kernels) stays within 0.07x of it on these batches; a float32 sum-of-squares variance
# (E[x**2] - E[x]**2), inaccurate only under cancellation, within 0.16x (it is caught at mean 1000 in float16, where
# the contract asks for accuracy), while assert_close's float32 default (1.3e-6, 1e-5) would reject it at 1.6x on
# a channel of mean 4 and std 0.25. Every known mistake misses by 1e-3 relative or far more.
FLOAT32_TOL = (1e-4, 1e-4)


# ---------------------------------------------------------------------------------------------
# Batches: built from a spec, in the sandbox and here alike
# ---------------------------------------------------------------------------------------------
def make_batch(spec, dtype, device="cpu"):
    """{"values": rows} or {"n", "seed", "loc", "scale"}: N(loc, scale**2) per channel, drawn in float64 on the
    CPU from a private generator (the same numbers on every device), then rounded to `dtype`."""
    if "values" in spec:
        x = torch.tensor(spec["values"], dtype=torch.float64)
    else:
        generator = torch.Generator().manual_seed(spec["seed"])
        x = torch.randn(spec["n"], len(spec["loc"]), generator=generator, dtype=torch.float64)
        x = x * torch.tensor(spec["scale"], dtype=torch.float64) + torch.tensor(spec["loc"], dtype=torch.float64)
    return x.to(device=device, dtype=getattr(torch, dtype))


def _describe_batch(spec):
    if "values" in spec:
        return f"x = {spec['values']}"
    rows = "1 row" if spec["n"] == 1 else f"{spec['n']} rows"
    return f"{rows}, channel means {spec['loc']}, stds {spec['scale']}"


# ---------------------------------------------------------------------------------------------
# The scenario (runs in the sandbox) and its rendering as code
# ---------------------------------------------------------------------------------------------
@scenario(repro=lambda interface, *run, show=None: Call.code(bn_code(*run, show)))
def bn_run(module, C, kwargs, steps, dtype, device):
    """Scenario: BatchNorm1d(C, **kwargs), then per step bn.train(), bn.eval() or a call on a batch built from
    its spec. Records running_mean and running_var after construction, and after each call also the output
    and whether the call changed its input."""
    bn = _built(module, C, kwargs, device)
    records = [{"mean": attribute_copy(bn, "running_mean"), "var": attribute_copy(bn, "running_var")}]
    for out, changed in _calls(bn, steps, dtype, device):
        records.append({"out": out.detach().clone() if torch.is_tensor(out) else out, "mean": attribute_copy(bn, "running_mean"),
                        "var": attribute_copy(bn, "running_var"), "changed": changed})
    return records


def _built(module, C, kwargs, device):
    bn = module.BatchNorm1d(C, **kwargs)
    if isinstance(bn, torch.nn.Module):
        bn.to(device)  # as a user of an nn.Module does
    return bn


def _calls(bn, steps, dtype, device):
    """Sandbox side: the steps on bn (train(), eval(), a call on a batch built from its spec); per call, what bn
    returned and whether the call changed its input."""
    for step in steps:
        if step in ("train", "eval"):
            getattr(bn, step)()
            continue
        x = make_batch(step, dtype, device)
        before = Snapshot(x=x)
        out = bn(x)
        yield out, bool(before.changed())


@scenario(repro=lambda interface, *run: Call.code(bn_code(*run)))
def changed_calls(module, C, kwargs, steps, dtype, device):
    """Scenario: the run, whatever it returns or raises; the numbers of the calls that changed their input."""
    changed = []

    def run():
        changed.extend(k for k, (_, moved) in enumerate(_calls(_built(module, C, kwargs, device), steps, dtype, device), start=1) if moved)
    outcome(run)
    return changed


def bn_code(C, kwargs, steps, dtype, device, show=None):
    """The run as code, every batch built the way bn_run builds it; the last line shows `show`."""
    to = f'"{device}", torch.{dtype}' if device != "cpu" else f"torch.{dtype}"
    lines = []
    if any(isinstance(s, dict) and "values" not in s for s in steps):
        lines += ["def batch(n, seed, loc, scale):  # N(loc, scale**2) per channel, drawn in float64, then rounded",
                  "    g = torch.Generator().manual_seed(seed)",
                  "    x = torch.randn(n, len(loc), generator=g, dtype=torch.float64)",
                  "    return (x * torch.tensor(scale, dtype=torch.float64) + torch.tensor(loc, dtype=torch.float64))"
                  f".to({to})"]
    settings = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    lines.append(f"bn = BatchNorm1d({C}{settings})")
    if device != "cpu":
        lines.append(f'bn = bn.to("{device}") if isinstance(bn, torch.nn.Module) else bn')
    calls = 0
    for step in steps:
        if step in ("train", "eval"):
            lines.append(f"bn.{step}()")
            continue
        calls += 1
        if "values" in step:
            extras = "".join([f", dtype=torch.{dtype}" if dtype != "float32" else "", f', device="{device}"' if device != "cpu" else ""])
            lines.append(f"x{calls} = torch.tensor({step['values']!r}{extras})")
        else:
            lines.append(f"x{calls} = batch({step['n']}, {step['seed']}, {step['loc']!r}, {step['scale']!r})")
        lines.append(f"out{calls} = bn(x{calls})")
    lines.append(show or (f"out{calls}, bn.running_mean, bn.running_var" if calls else "bn.running_mean, bn.running_var"))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Expected runs: nn.BatchNorm1d in float64, on the CPU
# ---------------------------------------------------------------------------------------------
class TorchBatchNorm1d(torch.nn.BatchNorm1d):
    """torch.nn.BatchNorm1d without affine parameters, in float64, fed the learner's values."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=False, dtype=torch.float64)

    def forward(self, x):
        return super().forward(x.double())


TORCH = types.SimpleNamespace(BatchNorm1d=TorchBatchNorm1d)

_expected_cache = {}
_expected_lock = threading.Lock()


def expected(run):
    """nn.BatchNorm1d's records of this run, cross-checked once against `simulate` (which the hints use)."""
    key = repr(run)
    with _expected_lock:
        if key not in _expected_cache:
            want = bn_run(TORCH, run["C"], run["kwargs"], run["steps"], run["dtype"], "cpu")
            for k, (w, s) in enumerate(zip(want, simulate(run))):
                for name in w:
                    if name != "changed" and not same_values(w[name], s[name], rtol=1e-9, atol=1e-12):
                        raise GraderDefect(f"the grader's restatement of BatchNorm1d disagrees with nn.BatchNorm1d at record {k}, {name}")
            _expected_cache[key] = want
    return _expected_cache[key]


# ---------------------------------------------------------------------------------------------
# Known mistakes, restated in float64 NumPy (for hints that follow the evidence)
# ---------------------------------------------------------------------------------------------
MISTAKES = {
    "eval_batch_stats": "in eval mode the output must use running_mean and running_var, not the statistics of the batch it is given",
    "train_uses_running": "in training mode the output must use the batch's own mean and variance, not the running statistics",
    "biased_running_var": "running_var must be updated with the unbiased batch variance (divide by N - 1, as torch does), while the"
                          " output is normalised with the biased one (divide by N)",
    "unbiased_normalisation": "the training output must be normalised with the biased batch variance (divide by N); torch's"
                              " Tensor.var divides by N - 1 unless you pass correction=0 (unbiased=False)",
    "momentum_inverted": "momentum is the weight of the NEW batch in torch: running = (1 - momentum) * running + momentum * batch"
                         " (yours gives the batch the weight 1 - momentum, Keras's convention)",
    "eps_outside_sqrt": "eps goes inside the square root: (x - mean) / sqrt(var + eps)",
    "updates_in_eval": "eval mode must leave running_mean and running_var unchanged; update them only in training mode",
    "no_update": "the running statistics never changed: update running_mean and running_var on every training call",
    "first_batch_init": "the first batch replaced the running statistics; they start at 0 and 1 and move by momentum from the first"
                        " call on",
    "wrong_axis": "the statistics must be per channel: the mean and variance of each of the C columns, over the batch axis (dim 0);"
                  " yours normalises each row over its features (that is layer norm)",
    "var_starts_at_zero": "running_var must start at 1 (and running_mean at 0)",
}


def simulate(run, mistake=None):
    """The run's records (mean, var, and out per call) in float64 NumPy; with a `mistake`, as that mistake gives them."""
    C, kwargs = run["C"], run["kwargs"]
    eps, m = kwargs.get("eps", 1e-5), kwargs.get("momentum", 0.1)
    rm, rv = np.zeros(C), np.zeros(C) if mistake == "var_starts_at_zero" else np.ones(C)
    training, first = True, True
    records = [{"mean": rm.copy(), "var": rv.copy()}]
    for step in run["steps"]:
        if step in ("train", "eval"):
            training = step == "train"
            continue
        x = make_batch(step, run["dtype"]).double().numpy()  # exact: every value of the dtype is a float64
        n = len(x)
        b_mean, b_var = x.mean(axis=0), x.var(axis=0)
        u_var = x.var(axis=0, ddof=1) if n > 1 else np.full(C, np.nan)
        use_batch = (training and mistake != "train_uses_running") or (not training and mistake == "eval_batch_stats")
        mean, var = (b_mean, u_var if mistake == "unbiased_normalisation" else b_var) if use_batch else (rm, rv)
        if mistake == "wrong_axis" and use_batch:
            mean, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
        with np.errstate(all="ignore"):
            out = (x - mean) / (np.sqrt(var) + eps if mistake == "eps_outside_sqrt" else np.sqrt(var + eps))
            if training or mistake == "updates_in_eval":
                new_var = b_var if mistake == "biased_running_var" else u_var
                if mistake == "momentum_inverted":
                    rm, rv = m * rm + (1 - m) * b_mean, m * rv + (1 - m) * new_var
                elif mistake == "first_batch_init" and first:
                    rm, rv = b_mean, new_var
                elif mistake != "no_update":
                    rm, rv = (1 - m) * rm + m * b_mean, (1 - m) * rv + m * new_var
                first = False
        records.append({"out": out, "mean": rm.copy(), "var": rv.copy()})
    return records


ORDER = ("out", "mean", "var")  # the order compare_run compares a record's quantities in


def _hint(run, want, k, name, got, tols, stats):
    """The known mistakes whose run gives the learner's `name` at record k, differs from the right value there,
    and agrees with it on everything compared before (which the learner's run got right)."""
    compared = [(j, q) for j in range(k + 1) for q in ORDER if (q == "out" and j > 0) or (q != "out" and stats)]
    before = compared[:compared.index((k, name))]

    def close(a, b, q):
        return same_values(a, b, rtol=tols[q][0], atol=tols[q][1], equal_nan=True)

    def run_of(mistake):
        sim = simulate(run, mistake)
        return sim[k][name] if all(close(sim[j][q], want[j][q], q) for j, q in before) else None

    return mistake_hint(got, [(text, partial(run_of, mistake)) for mistake, text in MISTAKES.items()], join="; or ",
                        say="Your values are exactly what this mistake gives: {}.", same=lambda a, b: close(a, b, name),
                        is_right=lambda value: close(value, want[k][name], name))


# ---------------------------------------------------------------------------------------------
# Comparing a run
# ---------------------------------------------------------------------------------------------
def _call_numbers(steps):
    """For record k >= 1: the index in steps of the k-th call."""
    return [i for i, s in enumerate(steps) if isinstance(s, dict)]


def _headline(run, what):
    kwargs = run["kwargs"]
    settings = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "default eps and momentum"
    return f"{what}; BatchNorm1d({run['C']}), {settings}, {run['dtype']}"


def compare_run(sub, run, *, what, out_tol=None, stats=True, fallback=None):
    """Run `run` on the learner's class and compare it record by record with nn.BatchNorm1d's. A wrong output is
    explained by the known mistakes that give it, else by `fallback()` (a control run), if any."""
    got = sub.run(bn_run, run["C"], run["kwargs"], run["steps"], run["dtype"], sub.device)
    want = expected(run)
    if not isinstance(got, list) or len(got) != len(want):
        raise GraderDefect("bn_run returned an unexpected record list")
    steps, dtype = run["steps"], run["dtype"]
    calls = _call_numbers(steps)
    tols = {"out": out_tol or (FLOAT32_TOL if dtype == "float32" else tolerance_for(dtype)), "mean": FLOAT32_TOL, "var": FLOAT32_TOL}
    head = _headline(run, what)

    for k, (g, w) in enumerate(zip(got, want)):
        where = "right after BatchNorm1d(...)" if k == 0 else (
            f"after call {k} ({'training' if _mode_at(steps, calls[k - 1]) else 'eval'} mode, {_describe_batch(steps[calls[k - 1]])})")
        with on_input(Call.code(bn_code(run["C"], run["kwargs"], steps[:calls[k - 1] + 1] if k else [], dtype, sub.device))):
            if k:
                _compare_output(sub, g, w, run, where, head, tols["out"],
                                lambda k=k, g=g: _hint(run, want, k, "out", g["out"], tols, stats) or (fallback() if fallback else ""))
            for name, attr in (("mean", "running_mean"), ("var", "running_var")) if stats else ():
                _compare_stat(g[name], w[name], run, attr, where, head, tols[name], partial(_hint, run, want, k, name, g[name], tols, stats))


def _mode_at(steps, index):
    training = True
    for s in steps[:index]:
        if s in ("train", "eval"):
            training = s == "train"
    return training


def _compare_output(sub, g, w, run, where, head, tol, explain):
    out, want = g["out"], w["out"]
    what = f"bn(x) output {where}"
    assert_returns_like(out, torch.zeros(1), what=what, scenario=head, device=sub.device)
    assert_shape(out, tuple(want.shape), what=what, scenario=head)
    assert_keeps_precision(out, run["dtype"], what=what, scenario=head)
    with explained(explain):
        assert_close(out, want, what=what, scenario=head, rtol=tol[0], atol=tol[1])


def _compare_stat(got, want, run, attr, where, head, tol, explain):
    what = f"bn.{attr} {where}"
    if got is None:
        fail(f"{what} ({head}): the object has no attribute {attr}; keep it as a tensor of shape ({run['C']},), as"
             " nn.BatchNorm1d does (running_mean starts at 0, running_var at 1)")
    if isinstance(got, str):
        fail(f"{what} ({head}): expected a tensor of shape ({run['C']},), got {got}")
    with explained(explain):
        assert_close(got, want, what=what, scenario=head, rtol=tol[0], atol=tol[1])


def spec(n, seed, loc, scale):
    return {"n": n, "seed": seed, "loc": list(map(float, loc)), "scale": list(map(float, scale))}


def bn(C, steps, dtype="float32", **kwargs):
    return {"C": C, "kwargs": kwargs, "steps": steps, "dtype": dtype}


# ---------------------------------------------------------------------------------------------
# Checks: BatchNorm1d
# ---------------------------------------------------------------------------------------------
HAND = {"values": [[1.0, 2.0], [3.0, 6.0]]}  # per channel: mean (2, 4), biased var (1, 4), unbiased var (2, 8)
LOC3, SCALE3 = (3.0, -2.0, 0.0), (1.0, 2.0, 1e-3)  # channel 2 has variance 1e-6 < eps: where eps sits shows
LOCKSTEP_SIZES = (2, 4, 8, 16, 32, 5, 3, 64, 7, 10)


def lockstep_run(C, loc, scale, seed, dtype="float32", **kwargs):
    train = [spec(n, seed + i, loc, scale) for i, n in enumerate(LOCKSTEP_SIZES)]
    evals = [spec(1, seed + 20, loc, scale), spec(6, seed + 21, loc, scale)]
    return bn(C, train + ["eval"] + evals + ["train", spec(5, seed + 30, loc, scale), "eval", spec(3, seed + 31, loc, scale)],
              dtype=dtype, **kwargs)


# Each check's runs, as (run, what): also the inputs of the check of inputs left unchanged.
STARTS = [(bn(2, []), "nothing called yet"), (bn(2, [HAND]), "first call, no train() or eval() before it"),
          (bn(3, [spec(8, 1, LOC3, SCALE3)], eps=1e-3, momentum=0.2), "first call, no train() or eval() before it")]
TRAINING = [  # small to large
    (bn(2, [HAND], momentum=0.1), "x = [[1, 2], [3, 6]]: outputs +-1/sqrt(1 + eps) and +-2/sqrt(4 + eps)"),
    (bn(1, [{"values": [[0.5], [1.5], [2.0], [4.0]]}], eps=0.1), "one channel, 4 rows, eps = 0.1"),
    (bn(3, [spec(2, 2, LOC3, SCALE3)]), "N = 2"),
    (bn(3, [spec(16, 3, LOC3, SCALE3)], eps=1e-3), "N = 16, eps = 1e-3"),
    (bn(7, [spec(100, 4, [0, 1, -1, 0, 0.5, -3, 4], [1, 0.5, 3, 1e-3, 2, 1, 0.25])]), "N = 100, C = 7"),
]
ONE_STEP = [(bn(2, [HAND]), "x = [[1, 2], [3, 6]] (mean (2, 4), unbiased var (2, 8)): expected running_mean (0.2, 0.4), running_var (1.1, 1.7)"),
            (bn(2, [HAND], momentum=0.25), "x = [[1, 2], [3, 6]], momentum 0.25"),
            (bn(3, [spec(4, 5, LOC3, SCALE3)], momentum=0.3), "N = 4, momentum 0.3")]
EVALS = [(bn(2, [HAND, "eval", {"values": [[2.0, 4.0]]}, {"values": [[0.0, 0.0], [4.0, 8.0]]}]),
          "one training call on x = [[1, 2], [3, 6]], then eval on one row and on two"),
         (bn(3, [spec(n, 10 + i, LOC3, SCALE3) for i, n in enumerate((4, 8, 32))] + ["eval"]
             + [spec(1, 20, LOC3, SCALE3), spec(6, 21, LOC3, SCALE3), spec(1, 20, LOC3, SCALE3)], momentum=0.3),
          "3 training calls, then eval (one row, six, the first row again)")]
LOCKSTEPS = [(run, "10 training calls (N = 2 to 64), eval on 1 and 6 rows, train() and one call, eval() and one call") for run in (
    lockstep_run(1, [1.0], [0.5], 100, eps=0.1, momentum=0.05), lockstep_run(3, LOC3, SCALE3, 200),
    lockstep_run(5, [0.5, -1.0, 2.0, 0.0, -3.0], [2.0, 0.25, 1.0, 1e-3, 1.5], 300, eps=1e-3, momentum=0.3))]
FLOAT64 = [(bn(2, [HAND], dtype="float64"), "x = [[1, 2], [3, 6]]"),
           (bn(4, [spec(16, 40, [1.0, -2.0, 0.0, 5.0], [1.0, 3.0, 1e-3, 0.5]), spec(9, 41, [1.0, -2.0, 0.0, 5.0], [1.0, 3.0, 1e-3, 0.5])],
               dtype="float64", eps=1e-4), "two training calls")]
FLOAT16 = [(run, "float16 batch, mean +-1000, std 1 (graded at rtol = atol = 1e-3; statistics not graded)") for run in (
    bn(4, [spec(64, 50, [1000.0] * 4, [1.0] * 4)], dtype="float16"), bn(2, [spec(256, 51, [-1000.0, 1000.0], [1.0, 1.0])], dtype="float16"))]


@check("starts in training mode: running_mean 0, running_var 1, batch statistics on the first call", devices=DEVICES, uses=BN)
def starts_in_training_mode(sub, ctx):
    for run, what in STARTS:
        compare_run(sub, run, what=what)


@check("training output: per-channel batch mean and biased variance", devices=DEVICES, uses=BN)
def training_output(sub, ctx):
    for run, what in TRAINING:
        compare_run(sub, run, what=what, stats=False)


@check("running statistics after one step: torch's momentum convention, unbiased variance", devices=DEVICES, uses=BN)
def running_stats_one_step(sub, ctx):
    for run, what in ONE_STEP:
        compare_run(sub, run, what=what)


@check("eval mode: running statistics in the output, and left unchanged", devices=DEVICES, uses=BN)
def eval_uses_running_stats(sub, ctx):
    for run, what in EVALS:
        compare_run(sub, run, what=what)


@check("lockstep with nn.BatchNorm1d: 10 training calls, eval, training again", devices=DEVICES, uses=BN)
def lockstep(sub, ctx):
    for run, what in LOCKSTEPS:
        compare_run(sub, run, what=what)


@check("float64 input: the training output keeps float64 precision", devices=DEVICES, uses=BN)
def float64_input(sub, ctx):
    for run, what in FLOAT64:
        compare_run(sub, run, what=what, stats=False)


FP16_HINT = ("The same data shifted to mean 0 are normalised correctly, so digits are lost at mean 1000: float16 rounds the mean"
             " to a multiple of 0.5 there, and sum(x**2) / N - mean**2 cancels even in float32. Upcast first (x.float()) and"
             " compute the variance from x - mean (Tensor.var(correction=0) does).")


def _fp16_explainer(sub, run):
    """The control run for a wrong float16 output: the same values minus the offset (exact in float16 at this spread)."""
    def explain():
        shifted = {**run, "steps": [{**s, "loc": [0.0] * len(s["loc"])} for s in run["steps"]]}
        want = [w["out"] for w in expected(shifted)[1:]]
        got = control_value(sub, bn_run, shifted["C"], shifted["kwargs"], shifted["steps"], shifted["dtype"], sub.device,
                            read=lambda records: [g["out"] for g in records[1:]])
        return FP16_HINT if same_values(got, want, rtol=FP16_TOL[0], atol=FP16_TOL[1]) else ""
    return explain


@check("float16 input with mean 1000 and unit spread: within 1e-3 of float64", devices=DEVICES, uses=BN)
def float16_large_mean(sub, ctx):
    for run, what in FLOAT16:
        compare_run(sub, run, what=what, out_tol=FP16_TOL, stats=False, fallback=_fp16_explainer(sub, run))


# ---------------------------------------------------------------------------------------------
# Checks: layer_norm
# ---------------------------------------------------------------------------------------------
def _tensor(values, dtype):
    return torch.tensor(np.asarray(values, dtype=np.float64), dtype=getattr(torch, dtype))


def _ln_variants(x, gamma, beta, eps):
    x, gamma, beta = x.double(), gamma.double(), beta.double()

    def norm(dim, correction=0, eps_outside=False):
        mean = x.mean(dim=dim, keepdim=True)
        var = x.var(dim=dim, keepdim=True, correction=correction) if x.shape[dim] > correction else torch.full_like(mean, float("nan"))
        return (x - mean) / ((var.sqrt() + eps) if eps_outside else (var + eps).sqrt())

    yield "the statistics must come from each example's own features (the last dimension), not from the batch axis", norm(0) * gamma + beta
    yield "the variance must be the biased one (divide by D: correction=0)", norm(-1, correction=1) * gamma + beta
    yield "eps goes inside the square root: (x - mean) / sqrt(var + eps)", norm(-1, eps_outside=True) * gamma + beta
    yield "the normalised values must be scaled by gamma and shifted by beta", norm(-1)


def check_layer_norm(sub, x, gamma, beta, eps, what):
    dtype = dtype_name(x.dtype)
    kwargs = {} if eps is None else {"eps": eps}
    scenario_text = f"{what}; x {tuple(x.shape)} {dtype}, {sub.device}" + ("" if eps is None else f", eps = {eps:g}")
    got = sub.call("layer_norm", x, gamma, beta, **kwargs)
    want = F.layer_norm(x.double(), (x.shape[-1],), gamma.double(), beta.double(), 1e-5 if eps is None else eps)
    assert_returns_like(got, x, what="layer_norm output", scenario=scenario_text, device=sub.device)
    assert_shape(got, tuple(x.shape), what="layer_norm output", scenario=scenario_text)
    assert_keeps_precision(got, dtype, what="layer_norm output", scenario=scenario_text)
    rtol, atol = tolerance_for(dtype)
    with explained(lambda: mistake_hint(got, _ln_variants(x, gamma, beta, 1e-5 if eps is None else eps), want=want, rtol=rtol, atol=atol,
                                        equal_nan=True, join="; or ", say="Your values are exactly what this mistake gives: {}.")):
        assert_close(got, want, what="layer_norm output", scenario=scenario_text, dtype=dtype)


def layer_norm_cases(ctx):
    """(x, gamma, beta, eps or None for the default, what) of the layer_norm values check, small to large."""
    x = _tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]], "float32")
    yield x, _tensor([1.0] * 4, "float32"), _tensor([0.0] * 4, "float32"), None, "x = [[1, 2, 3, 4], [2, 2, 2, 2]], gamma = 1, beta = 0, default eps"
    yield (x, _tensor([2.0, 0.5, 1.0, -1.0], "float32"), _tensor([0.0, 1.0, -1.0, 0.5], "float32"), 1e-5,
           "the same x, gamma = [2, 0.5, 1, -1], beta = [0, 1, -1, 0.5]")
    rng = ctx.rng(7)
    for shape, dtype, eps in (((1, 6), "float32", 1e-5), ((3, 8), "float32", 1e-3), ((2, 5, 16), "float32", 1e-5), ((4, 7), "float64", 1e-5),
                              ((2, 3, 10), "float64", 0.1)):
        d = shape[-1]
        x = _tensor(rng.uniform(-2, 2, d) + rng.uniform(0.5, 3, d) * rng.standard_normal(shape), dtype)
        yield x, _tensor(rng.uniform(0.5, 2, d), dtype), _tensor(rng.standard_normal(d), dtype), eps, "random x, gamma and beta"


def per_example_case(ctx):
    """x, and x with rows 1-3 replaced by values near 100 (float64), gamma = 1, beta = 0."""
    rng = ctx.rng(8)
    x = rng.standard_normal((4, 5))
    changed = x.copy()
    changed[1:] = 100.0 + 10.0 * rng.standard_normal((3, 5))
    return _tensor(x, "float64"), _tensor(changed, "float64"), _tensor(np.ones(5), "float64"), _tensor(np.zeros(5), "float64")


@check("layer_norm matches F.layer_norm (float32 and float64)", devices=DEVICES, uses=LN)
def layer_norm_values(sub, ctx):
    for x, gamma, beta, eps, what in layer_norm_cases(ctx):
        check_layer_norm(sub, x, gamma, beta, eps, what)


@check("layer_norm: each example on its own, whatever the rest of the batch", devices=DEVICES, uses=LN)
def layer_norm_per_example(sub, ctx):
    x, changed, gamma, beta = per_example_case(ctx)
    invariance_probe(sub, "layer_norm", (x, gamma, beta), (changed, gamma, beta),
                     what="layer_norm output of row 0 when rows 1-3 change", shape=(4, 5), graded=lambda out: out[0],
                     scenario=f"x (4, 5) float64, gamma = 1, beta = 0, rows 1-3 replaced by values near 100; {sub.device}",
                     hint="layer norm normalises each example over its own features (the last dimension): no other row may enter")


# ---------------------------------------------------------------------------------------------
# Inputs unchanged
# ---------------------------------------------------------------------------------------------
def fail_if_bn_changed(run, k, device):
    """Call k of the run changed its x."""
    calls = _call_numbers(run["steps"])
    mode = "training" if _mode_at(run["steps"], calls[k - 1]) else "eval"
    fail(f"bn(x) changed its input x in place ({mode} mode, call {k}); leave the caller's batch unchanged: compute new tensors"
         " (x - mean) instead of writing into x (x -= ..., x.sub_(...))",
         failing_input=Call.code(bn_code(run["C"], run["kwargs"], run["steps"][:calls[k - 1] + 1], run["dtype"], device, f"x{k}  # changed by bn(x{k})")))


@check("inputs are left unchanged", devices=DEVICES)
def inputs_left_unchanged(sub, ctx):
    run = bn(3, [spec(8, 60, LOC3, SCALE3), "eval", spec(4, 61, LOC3, SCALE3)])
    records = sub.run(bn_run, run["C"], run["kwargs"], run["steps"], run["dtype"], sub.device)
    for k, record in enumerate(records[1:], start=1):
        if record["changed"]:
            fail_if_bn_changed(run, k, sub.device)
    rng = ctx.rng(9)
    x = _tensor(rng.standard_normal((3, 4)), "float32")
    inputs_unchanged(sub, "layer_norm", x, _tensor(rng.uniform(0.5, 2, 4), "float32"), _tensor(rng.standard_normal(4), "float32"),
                     eps=1e-5, scenario=f"x (3, 4) float32, {sub.device}")
    # The inputs of every other check, the float64 and float16 ones included, whatever the learner's code does on them.
    for run, _ in STARTS + TRAINING + ONE_STEP + EVALS + LOCKSTEPS + FLOAT64 + FLOAT16:
        changed = sub.run(changed_calls, run["C"], run["kwargs"], run["steps"], run["dtype"], sub.device)
        if changed:
            fail_if_bn_changed(run, changed[0], sub.device)
    base, moved, ones, zeros = per_example_case(ctx)
    for x, gamma, beta, eps, _ in [*layer_norm_cases(ctx), (base, ones, zeros, None, ""), (moved, ones, zeros, None, "")]:
        inputs_unchanged(sub, "layer_norm", x, gamma, beta, **({} if eps is None else {"eps": eps}),
                         scenario=f"x {tuple(x.shape)} {dtype_name(x.dtype)}, {sub.device}")
