"""Checks for `loss-scaling`: DynamicLossScaler and a mixed-precision train_step.

Everything is stateful, so the learner's code runs inside scenarios: a scripted run of scaler.update, one
unscale_ call on hand-built gradients, or a short training run recording after every step what train_step
returned, the scale, the parameters and the optimizer state. The judge walks the record step by step: the
first step that goes wrong is reported, its failing input the run cut off right after it, as code.

Expected values are the reference's, checked here against torch.amp.GradScaler driven through the same
scenarios wherever GradScaler can run them (it has no min_scale and refuses float16 gradients).
"""

import inspect
import math
import operator
import threading
import types
from functools import partial

import torch

from mlprep.grading import (Call, CheckFailed, GraderDefect, Series, as_float, assert_close, check, control_value, expect_record, expect_sequence,
                            explained, fail, literal, matching_mistakes, on_input, optimizer_state, parameters_of, run_code, same_values,
                            scenario, series_on_failure, shrink_on_failure)

SCALER = ("DynamicLossScaler",)  # checks that only build a scaler and call its methods
BOTH = ("DynamicLossScaler", "train_step")

SCALE_RULES = ("on an overflow the scale is multiplied by backoff_factor (never below min_scale) and the clean-step"
               " count restarts; a clean step adds one to the count, and when the count reaches growth_interval the"
               " scale is multiplied by growth_factor and the count restarts")

RECIPE_HINT = ("The update differs from the GradScaler recipe: zero the grads, backward of scale_loss(loss), unscale_ once"
               " (dividing by the scale the loss was multiplied with), clip if asked, step only if every grad is finite,"
               " then update the scale.")

# torch.optim imports torch._dynamo on first use (about 2 s): pay that while the sandbox starts,
# not inside the time limit of the first training check.
torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.0)

# After 50 float32 steps a correct implementation with another order of operations (clipping without
# the 1e-6, reciprocal multiply, CUDA kernels) stays well within these.
LONG_RUN_TOL = (1e-5, 1e-5)


# ---------------------------------------------------------------------------------------------
# Failing inputs as code (run where `from <your file> import *`, `import torch` are in scope)
# ---------------------------------------------------------------------------------------------
def _float_code(x):
    mantissa, exponent = math.frexp(abs(x))
    if mantissa == 0.5 and abs(x) < 1e-3:  # a tiny power of two reads better as one: 2.0**-20, not 9.5367431640625e-07
        return f"{'-' if x < 0 else ''}2.0**{exponent - 1}"
    return literal(float(x))


def _list_code(values, text):
    """A list as short Python: runs of 3 or more equal items as [x] * n, the rest written out, e.g. [False] * 1999 + [True]."""
    parts, loose, i = [], [], 0
    items = [text(v) for v in values]
    while i < len(items):
        j = i
        while j < len(items) and items[j] == items[i]:
            j += 1
        if j - i >= 3:
            parts += ["[" + ", ".join(loose) + "]"] if loose else []
            parts.append(f"[{items[i]}] * {j - i}")
            loose = []
        else:
            loose.extend(items[i:j])
        i = j
    return " + ".join(parts + (["[" + ", ".join(loose) + "]"] if loose else [])) or "[]"


def _tensor_code(t, device):
    t = t.clone()
    t.origin_device = device  # written with its device, as the sandbox holds it
    return literal(t)


def _kwargs_code(kwargs):
    return ", ".join(f"{k}={_float_code(v) if isinstance(v, float) else repr(v)}" for k, v in kwargs.items())


def scripted_code(settings, pattern):
    """A scripted run as code: the scaler, update(found_inf) once per letter, the scales."""
    scaler = f"DynamicLossScaler({_kwargs_code(settings)})"
    if not pattern:
        return Call.code(f"{scaler}.scale")
    return Call.code(f"scaler = {scaler}\nscales = [scaler.scale]\nfor found_inf in {_list_code([c == 'O' for c in pattern], repr)}:\n"
                     "    scaler.update(found_inf)\n    scales.append(scaler.scale)\nscales")


def unscale_code(grads, scale, device, show="finite, [p.grad for p in params]"):
    """An unscale_ probe as code; `show` is the last line, the value that differs (the flag, the grads, or views of them)."""
    zeros = "torch.zeros(2)" if device == "cpu" else f'torch.zeros(2, device="{device}")'
    make = f"{zeros} if g is None else torch.zeros_like(g)" if any(g is None for g in grads) else "torch.zeros_like(g)"
    lines = ["grads = ["] + [f"    {'None' if g is None else _tensor_code(g, device)}," for g in grads] + [
        "]", f"params = [torch.nn.Parameter({make}) for g in grads]", "for p, g in zip(params, grads):", "    p.grad = g"]
    if show == "views":
        lines.append("views = [g.view(-1) for g in grads if g is not None]  # views taken before unscale_")
    return Call.code("\n".join(lines + [f"finite = DynamicLossScaler(init_scale={scale!r}).unscale_(params)", show]))


SHOW_RUN = {"stepped": "stepped", "scales": "scales", "params": "list(model.parameters())", "state": "[optimizer.state[p] for p in model.parameters()]",
            "all": "stepped, scales, list(model.parameters())"}


UNUSED_HEAD_CODE = """class MlpWithUnusedHead(torch.nn.Module):  # as in graders/loss-scaling.py
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        self.unused_head = torch.nn.Linear(8, 3)  # forward never uses it: its parameters get no gradient
    def forward(self, x):
        return self.body(x)"""
# The model a run uses is the one its failing input shows: the class is defined once, as that code.
MlpWithUnusedHead = run_code(UNUSED_HEAD_CODE)["MlpWithUnusedHead"]


def training_code(spec, device, steps=None, show="all"):
    """A training run as code (the models, losses and batches of training_run), cut off after `steps` steps, ending in what differs."""
    to = "" if device == "cpu" else f'.to("{device}")'
    if spec["model"] == "linear":
        weight, half = spec["weight"], ".half()" if spec.get("param_dtype") == "float16" else ""
        lines = [f"model = torch.nn.Linear({len(weight[0])}, {len(weight)}, bias=False)", "with torch.no_grad():",
                 f"    model.weight.copy_(torch.tensor({literal(weight)}))"] + ([f"model = model{half}{to}"] if half or to else [])
    else:
        lines = ([UNUSED_HEAD_CODE, "model = MlpWithUnusedHead()"] if spec["model"] == "mlp_unused_head" else
                 ["model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))"])
        lines += [f"generator = torch.Generator().manual_seed({spec['seed']})", "with torch.no_grad():", "    for p in model.parameters():",
                  "        p.copy_(torch.randn(p.shape, generator=generator) * 0.5)"] + ([f"model = model{to}"] if to else [])
    name, kwargs = spec["optimizer"]
    loss = LOSSES[spec["loss"]]  # a function: its source is read without `ast`, which is not thread-safe (classes' is not)
    lines += [f"optimizer = torch.optim.{'SGD' if name == 'sgd' else 'Adam'}(model.parameters(), {_kwargs_code(kwargs)})",
              f"scaler = DynamicLossScaler({_kwargs_code(spec['scaler'])})", inspect.getsource(loss).rstrip(), f"loss_fn = {loss.__name__}"]
    if spec["loss"] == "mse":
        n = len(spec["poison"])
        lines += [f"generator = torch.Generator().manual_seed({spec['seed'] + 1})",
                  f"xs, ys = torch.randn({n}, 6, 4, generator=generator), torch.randn({n}, 6, 1, generator=generator)",
                  f"poison = {_list_code(spec['poison'][:n if steps is None else steps], _float_code)}  # 1.0: a clean batch; inf, nan: an injected overflow",
                  f'batches = [{{"x": x{to}, "y": y{to}, "poison": p}} for x, y, p in zip(xs, ys, poison)]']
    else:
        lines.append(f'batches = [{{"x": torch.tensor({literal(spec["x"])}){to}}}] * {spec["steps"] if steps is None else steps}')
    clip = "" if spec.get("max_grad_norm") is None else f", max_grad_norm={spec['max_grad_norm']!r}"
    lines += ["stepped, scales = [], []", "for batch in batches:", f"    stepped.append(train_step(model, loss_fn, batch, optimizer, scaler{clip}))",
              "    scales.append(scaler.scale)", SHOW_RUN[show]]
    return Call.code("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox on the learner's module; here on the reference or on GradScaler)
# ---------------------------------------------------------------------------------------------
@scenario(repro=lambda interface, settings, pattern: scripted_code(settings, pattern))
def scripted_updates(module, settings, pattern):
    """Scenario: a scaler with `settings`, then update(found_inf) once per letter of pattern ("O" overflow,
    "C" clean); the scale before the first update and after each one."""
    scaler = module.DynamicLossScaler(**settings)
    scales = [float(scaler.scale)]
    for letter in pattern:
        scaler.update(letter == "O")
        scales.append(float(scaler.scale))
    return scales


@scenario(repro=lambda interface, grads, scale, device: unscale_code(grads, scale, device))
def unscale_probe(module, grads, scale, device):
    """Scenario: one parameter per entry of grads (None: a parameter without a gradient), one unscale_ call.
    Returns its result and, per parameter: p.grad afterwards, whether it is still the tensor it was before the
    call, that tensor, and a view of it taken before the call (unscale_ divides in place: views see it too)."""
    params, originals, views = [], [], []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(2 if g is None else g.shape, dtype=torch.float32 if g is None else g.dtype, device=device))
        if g is not None:
            p.grad = g.to(device).clone()
        params.append(p)
        originals.append(p.grad)
        views.append(None if g is None else p.grad.view(-1))
    result = module.DynamicLossScaler(init_scale=scale).unscale_(list(params))
    copy = lambda t: None if t is None else t.detach().cpu().clone()
    return {"result": result, "grads": [copy(p.grad) for p in params], "same_tensor": [p.grad is o for p, o in zip(params, originals)],
            "originals": [copy(o) for o in originals], "views": [copy(v) for v in views]}


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def _build_model(spec):
    if spec["model"] == "linear":
        weight = torch.tensor(spec["weight"], dtype=torch.float32)
        model = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        with torch.no_grad():
            model.weight.copy_(weight)
    else:
        model = {"mlp": _mlp, "mlp_unused_head": MlpWithUnusedHead}[spec["model"]]()
        # Weights from a private generator, built on the CPU: the same on every device, and safe
        # when the judge computes several expectations at once in threads (no global seed).
        generator = torch.Generator().manual_seed(spec["seed"])
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
    return model.to(dtype=getattr(torch, spec.get("param_dtype", "float32")))


def mse_loss(model, batch):
    """Mean squared error, times batch["poison"]: 1.0 for a clean step, inf or nan to inject an
    overflow (the scaled gradients then hold inf or NaN, as after a real float16 overflow)."""
    return ((model(batch["x"]) - batch["y"]) ** 2).mean() * batch["poison"]


def sum_loss(model, batch):
    """sum(model(x)): for a linear layer without bias the weight's gradient is exactly x."""
    return model(batch["x"]).sum()


def half_compute_loss(model, batch):
    """float32 parameters, float16 compute (as under autocast); the output's gradient is 2**-27
    (about 7.5e-9), which float16 cannot hold (its smallest subnormal is 2**-24)."""
    return torch.nn.functional.linear(batch["x"].half(), model.weight.half()).float().sum() * 2.0**-27


def half_model_loss(model, batch):
    """A float16 model end to end; the float32 loss's gradient enters the model in float16."""
    return model(batch["x"].half()).float().sum()


LOSSES = {"mse": mse_loss, "sum": sum_loss, "half_compute": half_compute_loss, "half_model": half_model_loss}


def _batches(spec, device):
    if spec["loss"] != "mse":
        return [{"x": torch.tensor(spec["x"], dtype=torch.float32).to(device)} for _ in range(spec["steps"])]
    generator = torch.Generator().manual_seed(spec["seed"] + 1)
    n = len(spec["poison"])
    xs, ys = torch.randn(n, 6, 4, generator=generator), torch.randn(n, 6, 1, generator=generator)
    return [{"x": xs[k].to(device), "y": ys[k].to(device), "poison": float(spec["poison"][k])} for k in range(n)]


@scenario(repro=lambda interface, spec, device: training_code(spec, device))
def training_run(module, spec, device):
    """Scenario: a model, an optimizer and the learner's scaler, then train_step once per batch; the initial
    parameters and optimizer state, and after every step: what train_step returned, the scale, the
    parameters and the optimizer state. With spec["clear_grads"] (a control run for a hint), the grader
    sets every p.grad to None before each train_step."""
    model = _build_model(spec).to(device)
    name, kwargs = spec["optimizer"]
    optimizer = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[name](model.parameters(), **kwargs)
    scaler = module.DynamicLossScaler(**spec["scaler"])
    clip = {} if spec.get("max_grad_norm") is None else {"max_grad_norm": spec["max_grad_norm"]}
    record = {"params0": parameters_of(model), "state0": optimizer_state(optimizer), "scale0": float(scaler.scale), "stepped": [], "scales": [],
              "params": [], "state": []}
    for batch in _batches(spec, device):
        if spec.get("clear_grads"):
            model.zero_grad(set_to_none=True)
        record["stepped"].append(module.train_step(model, LOSSES[spec["loss"]], batch, optimizer, scaler, **clip))
        record["scales"].append(float(scaler.scale))
        record["params"].append(parameters_of(model))
        record["state"].append(optimizer_state(optimizer))
    return record


# ---------------------------------------------------------------------------------------------
# torch.amp.GradScaler driven through the same scenarios (here, on the CPU)
# ---------------------------------------------------------------------------------------------
class GradScalerDriver:
    """torch.amp.GradScaler behind the scenarios' names. update(found_inf) drives it through one real step
    of a probe parameter whose gradient is inf or finite, so GradScaler itself decides the next scale. It
    has no min_scale: only used where the floor does not bind."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, min_scale=1.0):
        self.gs = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                                       growth_interval=growth_interval)
        self._probe = torch.nn.Parameter(torch.zeros(1))
        self._probe_optimizer = torch.optim.SGD([self._probe], lr=0.0)

    @property
    def scale(self):
        return self.gs.get_scale()

    def update(self, found_inf):
        self.gs.scale(torch.zeros(()))  # creates GradScaler's scale tensor on first use
        self._probe.grad = torch.full((1,), math.inf if found_inf else 1.0)
        self.gs.step(self._probe_optimizer)
        self.gs.update()


def gradscaler_train_step(model, loss_fn, batch, optimizer, scaler, max_grad_norm=None):
    """The AMP recipe from the torch.amp docs, with clipping between unscale_ and step."""
    gs = scaler.gs
    optimizer.zero_grad()
    gs.scale(loss_fn(model, batch)).backward()
    gs.unscale_(optimizer)
    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    finite = all(bool(torch.isfinite(p.grad).all()) for p in params)
    if finite and max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    gs.step(optimizer)  # skips optimizer.step() itself when unscale_ found inf/NaN
    gs.update()
    return finite


GRADSCALER = types.SimpleNamespace(DynamicLossScaler=GradScalerDriver, train_step=gradscaler_train_step)

_expected_cache = {}
_expected_lock = threading.Lock()


def expected(ctx, scenario, *args, gradscaler=True):
    """The expected record of a scenario: the reference's, checked against GradScaler's when GradScaler can
    run it. Cached: the same scenario is asked for by every graded file."""
    key = (scenario.__name__, repr(args), gradscaler)
    with _expected_lock:
        if key not in _expected_cache:
            want = ctx.run_reference(scenario, *args)
            if gradscaler:
                _same_record(want, scenario(GRADSCALER, *args), f"{scenario.__name__}{args!r:.200}")
            _expected_cache[key] = want
    return _expected_cache[key]


def _same_record(ref, gs, where):
    """Reference and GradScaler agree (scales exactly, values within float32 tolerance)."""
    if isinstance(ref, (dict, list, tuple)):
        if len(ref) != len(gs):
            raise GraderDefect(f"reference and GradScaler records differ in length at {where}")
        for k, a in (ref.items() if isinstance(ref, dict) else enumerate(ref)):
            _same_record(a, gs[k], f"{where}[{k}]")
    elif torch.is_tensor(ref):
        if not torch.allclose(ref.double(), gs.double(), rtol=1e-5, atol=1e-6, equal_nan=True):
            raise GraderDefect(f"reference and torch.amp.GradScaler disagree at {where}")
    elif ref != gs:
        raise GraderDefect(f"reference and torch.amp.GradScaler disagree at {where}: {ref!r} vs {gs!r}")


# ---------------------------------------------------------------------------------------------
# The update rule, and the known mistakes of it (for hints that follow the evidence)
# ---------------------------------------------------------------------------------------------
DEFAULTS = {"init_scale": 2.0**16, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000, "min_scale": 1.0}

SCALE_MISTAKES = {
    "no_backoff": "an overflow leaves the scale unchanged (multiply it by backoff_factor)",
    "no_floor": "an overflow multiplies the scale by backoff_factor without the floor (use max(scale * backoff_factor, min_scale))",
    "int_scale": "the scale is kept as an int, which cuts off its fraction (keep it a float)",
    "overflow_keeps_count": "an overflow does not restart the clean-step count",
    "growth_keeps_count": "a growth does not restart the clean-step count",
    "every_step": "the scale grows after every clean step, not after growth_interval clean steps in a row",
    "late_growth": "the scale grows after growth_interval + 1 clean steps in a row instead of growth_interval",
}


def simulate_scales(settings, pattern, mistake=None):
    """The contract's update rule, written out (it double-checks the reference and judges the shrunk
    cases); with a `mistake` of SCALE_MISTAKES, the rule as that mistake changes it."""
    s = {**DEFAULTS, **settings}
    as_scale = int if mistake == "int_scale" else float
    interval = 1 if mistake == "every_step" else s["growth_interval"] + 1 if mistake == "late_growth" else s["growth_interval"]
    scale, count = as_scale(s["init_scale"]), 0
    out = [float(scale)]
    for letter in pattern:
        if letter == "O":
            backed_off = scale if mistake == "no_backoff" else scale * s["backoff_factor"]
            scale = as_scale(backed_off if mistake == "no_floor" else max(backed_off, s["min_scale"]))
            count = count if mistake == "overflow_keeps_count" else 0
        else:
            count += 1
            if count >= interval:
                scale = as_scale(scale * s["growth_factor"])
                count = count if mistake == "growth_keeps_count" else 0
        out.append(float(scale))
    return out


def scale_mistakes(scales, settings, pattern):
    """The texts of the known mistakes of the rule that give exactly `scales` for this run."""
    return matching_mistakes(scales, [(text, partial(simulate_scales, settings, pattern, key)) for key, text in SCALE_MISTAKES.items()], same=operator.eq)


def _fmt_scale(x):
    return f"{x:.10g}"


def _settings_text(settings):
    return ", ".join(f"{k}={_fmt_scale(v)}" for k, v in settings.items()) or "default settings"


def _scripted_text(settings, pattern):
    overflows = ", #".join(str(i + 1) for i, c in enumerate(pattern) if c == "O")
    return f"{_settings_text(settings)}; {len(pattern)} updates" + (f", overflows at #{overflows}" if overflows else ", all clean")


def as_flag(got, *, what, scenario):
    """A bool result (bool, NumPy bool, 0/1 number or a one-element tensor) as a Python bool."""
    if isinstance(got, bool):
        return got
    if got is None:
        fail(f"{what} ({scenario}): returned None; it must return a bool")
    value = as_float(got, what=what, scenario=scenario)
    if value not in (0.0, 1.0):
        fail(f"{what} ({scenario}): expected a bool, got {value!r}")
    return value == 1.0


def _clean_run(pattern, k):
    """How many clean steps in a row come right before update number k (0-based)."""
    n = 0
    while k - 1 - n >= 0 and pattern[k - 1 - n] == "C":
        n += 1
    return n


def _recorded_scales(got, n, settings, pattern, scenario):
    with on_input(scripted_code(settings, pattern)):
        return [as_float(g, what="scaler.scale", scenario=scenario) for g in expect_sequence(got, n, what="recorded scales", scenario=scenario)]


def _scale_hint(got, want, settings, pattern, k):
    """Why the scale after update k (1-based) is wrong, as far as the scales show it: the known
    mistakes whose rule gives exactly the learner's scales so far, else what this one update shows."""
    matches = scale_mistakes(got[:k + 1], settings, pattern[:k])
    if matches:
        return "Your scales up to here are exactly those of the rule with one change: " + "; or ".join(matches) + "."
    if k == 0:
        return "The scale starts at init_scale."
    s = {**DEFAULTS, **settings}
    letter, before = pattern[k - 1], want[k - 1]
    if letter == "O" and got[k] == got[k - 1]:
        return "An overflow must multiply the scale by backoff_factor (never below min_scale)."
    if letter == "O" and got[k] < want[k]:
        if want[k] != int(want[k]) and got[k] == math.floor(want[k]):
            return "The scale lost its fraction: keep it a float, not an int."
        if got[k] == before * s["backoff_factor"]:
            return f"That is scale * backoff_factor without the floor: back off with max(scale * backoff_factor, min_scale={_fmt_scale(s['min_scale'])})."
        return f"The scale must be max(scale * backoff_factor, min_scale={_fmt_scale(s['min_scale'])})."
    if letter == "C" and want[k] == before and got[k] > got[k - 1]:
        return (f"The scale grew although this update does not complete growth_interval = {s['growth_interval']} clean steps since"
                " the last overflow or growth (the count restarts from 0 after each).")
    if letter == "C" and want[k] > before:
        return (f"This update completes growth_interval = {s['growth_interval']} clean steps since the last overflow or growth,"
                " so the scale must be multiplied by growth_factor here.")
    return f"The rules: {SCALE_RULES}."


def _fail_run(settings, run, scales, want, message, **details):
    """fail() with the scripted run cut off after its first wrong update as the failing input and the picture of
    the scales, remembering that run (for shrinking_updates)."""
    try:
        fail(message, failing_input=scripted_code(settings, run), series=scripted_series(scales, want), **details)
    except CheckFailed as failure:
        failure.failing_run = run
        raise


def scripted_series(got, want):
    """The picture of a scripted run that went wrong: the scale after each update, yours vs expected."""
    return Series("loss scale after each update", {"yours": got, "expected": want}, x_label="update", log_scale=True)


def compare_scales(got, want, settings, pattern, *, scenario):
    """Scale after each scripted update, in order; exact (the factors are powers of two). The
    failing input is the run cut off right after the first wrong update."""
    got = _recorded_scales(got, len(want), settings, pattern, scenario)
    if got[0] != want[0]:
        _fail_run(settings, "", got, want, f"scaler.scale right after DynamicLossScaler({_settings_text(settings)}): expected"
                                           f" {_fmt_scale(want[0])}, got {_fmt_scale(got[0])}; the scale starts at init_scale",
                  expected=want[0], got=got[0], update=0, scenario=scenario)
    for k in range(1, len(want)):
        if got[k] == want[k]:
            continue
        event = "found_inf=True" if pattern[k - 1] == "O" else "found_inf=False"
        _fail_run(settings, pattern[:k], got, want, f"scripted updates ({scenario}): after update #{k} ({event};"
                                                    f" {_clean_run(pattern, k - 1)} clean update(s) in a row before it), expected scale"
                                                    f" {_fmt_scale(want[k])} (it was {_fmt_scale(want[k - 1])}), got {_fmt_scale(got[k])}."
                                                    f" {_scale_hint(got, want, settings, pattern, k)}",
                  update=k, expected=want[k], got=got[k], expected_before=want[k - 1], scenario=scenario)


def judge_floor(got, want, settings, pattern, *, scenario):
    """The scale never falls below min_scale (nor to 0), then the whole sequence as compare_scales."""
    min_scale = settings.get("min_scale", 1.0)
    scales = _recorded_scales(got, len(want), settings, pattern, scenario)
    for k, s in enumerate(scales):
        if not s >= min_scale:
            zero = " (a zero scale makes every unscale 0/0)" if s == 0 else ""
            _fail_run(settings, pattern[:k], scales, want, f"scaler.scale after {k} update(s) ({scenario}): got {_fmt_scale(s)}, below"
                                                           f" min_scale = {_fmt_scale(min_scale)}{zero}. {_scale_hint(scales, want, settings, pattern, k)}",
                      update=k, got=s, min_scale=min_scale, scenario=scenario)
    compare_scales(scales, want, settings, pattern, scenario=scenario)


# ---------------------------------------------------------------------------------------------
# Shrinking a failed scripted run to a short pattern
# ---------------------------------------------------------------------------------------------
SHRINK_ABOVE = 6  # a failure within the first 6 updates is shown as it is, and so is a regular run ([True] * 1200 + [False] * 3)


def _worth_shrinking(failure):
    """Whether a failing run (cut off after its first wrong update) reads badly enough to look for a shorter
    one: more than SHRINK_ABOVE updates, in more than two runs of equal updates. (A scripted run can always be
    written out in full, so the toolkit's own rule, shrink what cannot be shown, would never shrink it.)"""
    pattern = getattr(failure, "failing_run", "")
    return len(pattern) > SHRINK_ABOVE and 1 + sum(a != b for a, b in zip(pattern, pattern[1:])) > 2


def _drawn_settings(drawn):
    init, growth, backoff, interval, floor = drawn
    settings = {"init_scale": init, "growth_factor": growth, "backoff_factor": backoff, "growth_interval": interval, "min_scale": floor}
    return {k: v for k, v in settings.items() if k == "growth_interval" or v != DEFAULTS[k]}


def _floor_idle(case):
    return simulate_scales(*case) == simulate_scales(*case, "no_floor")


def scripted_cases(inits, floors, floor_may_bind):
    """Hypothesis cases (settings, pattern) of a short scripted run: settings within the contract (powers of
    two for the factors, init_scale >= min_scale >= 1) shrinking to the first init_scale and floor, factors 2
    and 1/2, growth_interval 1; patterns of up to 12 updates shrinking to short, clean ones."""
    from hypothesis import strategies as st

    settings = st.tuples(st.sampled_from(inits), st.sampled_from([2.0, 4.0]), st.sampled_from([0.5, 0.25]), st.integers(1, 4),
                         st.sampled_from(floors)).map(_drawn_settings)
    cases = st.tuples(settings, st.lists(st.sampled_from("CO"), min_size=1, max_size=12).map("".join))
    return cases if floor_may_bind else cases.filter(_floor_idle)


def verify_scripted(sub, floor, case):
    settings, pattern = case
    judge = judge_floor if floor else compare_scales
    judge(sub.run(scripted_updates, settings, pattern), simulate_scales(settings, pattern), settings, pattern, scenario=_scripted_text(settings, pattern))


def shrinking_updates(sub, inits, floors, floor):
    """shrink_on_failure for a scripted-update check: a failure on a run worth shrinking (long and irregular)
    is replaced by the smallest short run that fails too, if there is one."""
    return shrink_on_failure(sub, partial(scripted_cases, inits, floors, floor), partial(verify_scripted, sub, floor), worth_shrinking=_worth_shrinking)


# ---------------------------------------------------------------------------------------------
# Reading a training record
# ---------------------------------------------------------------------------------------------
def _step_text(spec, k, want):
    poison = spec.get("poison")
    if poison is not None:
        batch = "clean batch" if poison[k] == 1.0 else f"batch whose loss is multiplied by {poison[k]} (an injected overflow)"
    else:
        batch = "a clean step" if want["stepped"][k] else "scaled gradients overflow float16"
    return f"step {k + 1} of {len(want['stepped'])} ({batch}; scale before the step {_fmt_scale(want['scales'][k - 1] if k else want['scale0'])})"


def _param_names(spec):
    return [f"{name} {tuple(p.shape)}" for name, p in _build_model(spec).named_parameters()]


def _before(record, k):
    """The parameters and the optimizer state before step k (0-based)."""
    return (record["params"][k - 1], record["state"][k - 1]) if k else (record["params0"], record["state0"])


def _changed_at(got, k):
    """Whether the learner's parameters or optimizer state changed in step k (None: unreadable)."""
    try:
        params, state = _before(got, k)
        return not same_values(params, got["params"][k], equal_nan=True) or not same_values(state, got["state"][k])
    except Exception:  # noqa: BLE001 - a malformed record gets no hint; its verdict comes from the checks
        return None


def _steps_with_grads_cleared(sub, device, spec, k):
    """A control run: whether the learner's train_step steps at step k (0-based) when the grader clears every p.grad
    before each call. True shows that what stopped it is left in p.grad from an earlier step."""
    return control_value(sub, training_run, {**spec, "clear_grads": True}, device,
                         read=lambda record: as_flag(record["stepped"][k], what="train_step's return value", scenario="control"))


def _unscale_misses(sub, device, values):
    """A control: the values of `values` (inf, nan) that the learner's unscale_ alone does not find in float32 gradients
    that all hold it, as a poisoned loss's do (it returns True there); None when the control gives no answer."""
    found = [control_value(sub, unscale_probe, [torch.tensor([1.0, v, 2.0]), torch.tensor([v, 3.0])], 1.0, device,
                           read=lambda got: as_flag(got["result"], what="unscale_'s return value", scenario="control")) for v in values]
    return None if None in found else [v for v, finite in zip(values, found) if finite]


def _flag_hint(sub, device, got, want, spec, k):
    """What train_step's wrong return value at step k comes with, as the record and control runs show it."""
    changed = _changed_at(got, k)
    if want["stepped"][k]:
        if changed:
            return "Your train_step did change the parameters in this step (the optimizer stepped), yet returned False: return True exactly when it stepped."
        skipped = [j for j in range(k) if not want["stepped"][j]]
        if skipped and _steps_with_grads_cleared(sub, device, spec, k):
            return (f"Every gradient of this step is finite; the inf/NaN your check saw is left over from the overflow at step {skipped[-1] + 1}:"
                    " run with every p.grad cleared before each call (by the grader), your train_step steps here. Zero the grads at the start"
                    " of each step.")
        return "Every gradient of this step is finite, so the optimizer must step."
    if changed is False:
        return "Your train_step skipped the step as it should (parameters and optimizer state unchanged), yet returned True: return False when it skips."
    poison = (spec.get("poison") or [1.0] * (k + 1))[k]
    if poison == 1.0:
        return "The scaled gradients overflow float16 at this scale (they hold inf): skip the step."
    nan = isinstance(poison, float) and math.isnan(poison)
    missed = _unscale_misses(sub, device, [math.nan] if nan else [math.inf, math.nan])
    if missed is None:
        return ""
    if not missed:
        return (f"Your unscale_ alone finds {'a NaN' if nan else 'an inf and a NaN'} in a gradient (it returns False), yet train_step stepped"
                " here: skip optimizer.step() (and clipping) when unscale_ returns False, and return False.")
    if nan:
        return ("The scaled gradients are NaN here (the loss was multiplied by nan), and a NaN is not an inf: test with torch.isfinite,"
                " which catches inf, -inf and NaN; then skip the step.")
    return ("The loss was multiplied by inf, so the scaled gradients hold inf or NaN (inf * 0 is NaN in backward): skip the step;"
            " torch.isfinite catches both.")


def _scale_control_hint(sub, got, want, spec, k):
    """A control run: the learner's scaler alone, given update(found_inf) with this run's overflows.
    It tells a wrong update rule from a train_step that drives a right one wrongly."""
    pattern = "".join("C" if s else "O" for s in want["stepped"][:k + 1])
    alone = control_value(sub, scripted_updates, spec["scaler"], pattern, read=lambda scales: [float(s) for s in scales])
    if alone is None:
        return ""
    want_scales = [want["scale0"], *want["scales"][:k + 1]]
    overflows = ", ".join(str(j + 1) for j, c in enumerate(pattern) if c == "O")
    alone_text = (f"Your DynamicLossScaler alone, given update(found_inf) for these steps"
                  f" ({f'found_inf=True at step(s) {overflows}' if overflows else 'all with found_inf=False'})")
    if alone == want_scales:
        if not want["stepped"][k] and got["scales"][k] == want_scales[-2]:
            return (f"train_step left the scale unchanged on this skipped step, while {alone_text[0].lower()}{alone_text[1:]}, backs off correctly:"
                    " call scaler.update(found_inf=True) on skipped steps too.")
        return f"{alone_text}, gives the expected scales: so train_step drives it differently; call scaler.update(not stepped) exactly once per step."
    matches = scale_mistakes(alone, spec["scaler"], pattern)
    why = ("its scales are exactly those of the rule with one change: " + "; or ".join(matches) if matches
           else f"its update rule differs from the contract ({SCALE_RULES})")
    if alone[-1] == got["scales"][k]:
        return f"{alone_text}, gives {_fmt_scale(alone[-1])} here too, so the scale rule is at fault, not train_step: {why}."
    return f"{alone_text}, does not give the expected scales either: {why}."


def _gradient_at(spec, weight, scale):
    """The weight's gradient, in float64, of one step's loss times `scale`, computed as the model
    computes it (float16 rounding, underflow and overflow included)."""
    model = _build_model(spec)
    with torch.no_grad():
        model.weight.copy_(weight)
    (LOSSES[spec["loss"]](model, _batches(spec, "cpu")[0]) * scale).backward()
    return model.weight.grad.double().flatten()


def _step_hint(spec, want, got, k):
    """The hint for wrong parameters after step k: for one-layer SGD runs without momentum, the gradient the
    learner's step applied, compared with the steps that known mistakes of the recipe give; else RECIPE_HINT."""
    name, kwargs = spec["optimizer"]
    if spec["model"] != "linear" or name != "sgd" or kwargs.get("momentum") or not want["stepped"][k]:
        return RECIPE_HINT
    lr, max_norm = kwargs["lr"], spec.get("max_grad_norm")
    try:
        before, after = _before(got, k)[0][0], got["params"][k][0]
        applied = ((before.double() - after.double()) / lr).flatten()
        resolution = 2 * torch.finfo(before.dtype).eps * torch.maximum(before.double().abs(), after.double().abs()).flatten() / lr
    except Exception:  # noqa: BLE001 - a malformed record gets no hint
        return RECIPE_HINT
    scale, new_scale = want["scales"][k - 1] if k else want["scale0"], want["scales"][k]
    weight = _before(want, k)[0][0]
    g = _gradient_at(spec, weight, scale)
    clip = lambda v: v if max_norm is None else v * min(1.0, max_norm / (float(v.norm()) + 1e-6))
    right = clip(g / scale)
    candidates = [("dividing the gradients by the scale once more than they were multiplied by it (unscaling twice)", clip(g / scale / scale)),
                  ("not multiplying the loss by the scale before backward (but dividing the gradients by it)", clip(_gradient_at(spec, weight, 1.0) / scale)),
                  ("not dividing the gradients by the scale", clip(g))]
    if max_norm is not None:
        candidates += [("clipping the gradients before unscaling them (max_grad_norm then bounds the scaled gradients)", clip(g) / scale),
                       ("not clipping", g / scale)]
    if new_scale != scale:
        candidates.append(("dividing the gradients by the scale after update changed it (unscale before updating the scale)", clip(g / new_scale)))

    def close(a, b):
        return bool(torch.isfinite(b).all()) and bool(((a - b).abs() <= resolution + 0.02 * b.abs()).all())

    matches = matching_mistakes(applied, candidates, same=close, is_right=partial(close, right))
    zero = torch.zeros_like(applied)
    if close(applied, zero) and not close(right, zero):
        return "The weights did not move in this step" + (f"; that is what {' or '.join(matches)} gives here." if matches else ".")
    if not matches:
        return RECIPE_HINT
    shown, expected_step = (", ".join(f"{v:.4g}" for v in t.tolist()) for t in (applied, right))
    return f"The weights moved as if the gradient were ({shown}) instead of ({expected_step}): {' or '.join(matches)} gives exactly that."


def _flag_point(value):
    """train_step's return value as 1 (stepped) or 0 (skipped), None where it is no bool."""
    try:
        return int(as_flag(value, what="train_step's return value", scenario=""))
    except CheckFailed:
        return None


def _distances(record):
    """How far the parameters are from where they started, after each step (float64, 5 digits: the
    rounding of another right order of operations is no difference to draw)."""
    flat = lambda params: torch.cat([p.detach().double().flatten() for p in params])
    start = flat(record["params0"])
    return [float(f"{float((flat(params) - start).norm()):.5g}") for params in record["params"]]


def _first_difference(yours, expected):
    """The index of the first point where two lines differ (NaN equal to NaN), None where they do not."""
    same = lambda a, b: a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    return next((i for i, (a, b) in enumerate(zip(yours, expected)) if not same(a, b)), None if len(yours) == len(expected) else min(len(yours), len(expected)))


def run_series(got, want):
    """The picture of a training run that went wrong, yours vs expected, of what goes wrong first: the
    scale after each step, whether each step stepped, or how far the parameters moved from where they
    started (at the same step, in that order). None for a one-step run, a run whose scales, flags and
    parameters all agree, or a record too malformed to draw."""
    n = len(want["stepped"])
    if n < 2:
        return None
    try:
        candidates = [  # (yours, expected, the step of their first point, the picture)
            ([float(got["scale0"]), *map(float, got["scales"])], [want["scale0"], *want["scales"]], 0,
             lambda yours, expected: Series("loss scale after each step", {"yours": yours, "expected": expected}, log_scale=True)),
            ([_flag_point(f) for f in got["stepped"]], [int(f) for f in want["stepped"]], 1,
             lambda yours, expected: Series("optimizer stepped (1) or skipped (0)", {"yours": yours, "expected": expected}, x=range(1, n + 1))),
            ([0.0, *_distances(got)], [0.0, *_distances(want)], 0,
             lambda yours, expected: Series("parameters' distance from their start (L2)", {"yours": yours, "expected": expected})),
        ]
    except Exception:  # noqa: BLE001 - a malformed record gets no picture; its verdict comes from the checks
        return None
    differing = [(first + x0, order, picture, yours, expected) for order, (yours, expected, x0, picture) in enumerate(candidates)
                 if (first := _first_difference(yours, expected)) is not None]
    if not differing:
        return None
    _, _, picture, yours, expected = min(differing, key=lambda candidate: candidate[:2])
    return picture(yours, expected)


def compare_run(sub, got, want, spec, device, *, scenario, rtol=None, atol=None):
    """Walk a training record step by step: returned flag, scale, parameters, optimizer state. The
    failing input is the run cut off after the first step that goes wrong, ending in what differs;
    the failure carries the picture of the whole run (run_series)."""
    if not isinstance(got, dict) or set(got) != set(want):
        with on_input(training_code(spec, device)):
            fail(f"training run ({scenario}): the scenario's record came back malformed: {type(got).__name__}")
    with series_on_failure(lambda: run_series(got, want)):
        _walk_run(sub, got, want, spec, device, scenario=scenario, rtol=rtol, atol=atol)


def _walk_run(sub, got, want, spec, device, *, scenario, rtol, atol):
    names = _param_names(spec)
    dtype = spec.get("param_dtype", "float32")
    for k in range(len(want["stepped"])):
        where = f"{scenario}; {_step_text(spec, k, want)}"
        with on_input(training_code(spec, device, k + 1, "stepped")):
            flag = as_flag(got["stepped"][k], what="train_step's return value", scenario=where)
            if flag != want["stepped"][k]:
                fail(f"train_step ({where}): expected {want['stepped'][k]}, got {flag}.", explain=partial(_flag_hint, sub, device, got, want, spec, k),
                     step=k + 1, expected=want["stepped"][k], got=flag)
        if not want["stepped"][k]:
            _unchanged_on_overflow(got, k, names, where, spec, device)
        with on_input(training_code(spec, device, k + 1, "scales")):
            got_scale = as_float(got["scales"][k], what="scaler.scale", scenario=where)
            if got_scale != want["scales"][k]:
                fail(f"scaler.scale after {where}: expected {_fmt_scale(want['scales'][k])}, got {_fmt_scale(got_scale)}.",
                     explain=partial(_scale_control_hint, sub, got, want, spec, k), step=k + 1, expected=want["scales"][k], got=got_scale)
        with on_input(training_code(spec, device, k + 1, "params")):
            got_params = expect_sequence(got["params"][k], len(names), what="parameters", scenario=where)
            with explained(partial(_step_hint, spec, want, got, k)):
                for name, g, w in zip(names, got_params, want["params"][k]):
                    assert_close(g, w, what=f"parameter {name} after the step", scenario=where, rtol=rtol, atol=atol, dtype=dtype)
        with on_input(training_code(spec, device, k + 1, "state")):
            for i, (g_state, w_state) in enumerate(zip(got["state"][k], want["state"][k])):
                if set(g_state) != set(w_state):
                    fail(f"optimizer state of parameter {names[i]} after {where}: expected entries {sorted(w_state)}, got {sorted(g_state)}.")
                for key in w_state:
                    assert_close(g_state[key], w_state[key], what=f"optimizer state {key!r} of parameter {names[i]}", scenario=where,
                                 rtol=rtol, atol=atol, dtype="float32", hint=RECIPE_HINT)


def _unchanged_on_overflow(got, k, names, where, spec, device):
    """On a skipped step parameters and optimizer state are exactly what they were before it."""
    before_params, before_state = _before(got, k)
    with on_input(training_code(spec, device, k + 1, "params")):
        for name, a, b in zip(names, before_params, got["params"][k]):
            changed = ~((a == b) | (a.isnan() & b.isnan()))
            if changed.any():
                idx = tuple(int(i) for i in changed.nonzero()[0])
                fail(f"parameter {name} changed on {where}: at index {idx} it was {a[idx].item():.8g} before and"
                     f" {b[idx].item():.8g} after. When unscale_ finds inf/NaN, skip optimizer.step() (and clipping):"
                     " the weights must stay as they were.", step=k + 1, index=str(idx))
    with on_input(training_code(spec, device, k + 1, "state")):
        for i, (a, b) in enumerate(zip(before_state, got["state"][k])):
            for key in set(a) | set(b):
                if key not in a or key not in b or not torch.equal(torch.as_tensor(a[key]), torch.as_tensor(b[key])):
                    fail(f"optimizer state {key!r} of parameter {names[i]} changed on {where}. A skipped step must not call"
                         " optimizer.step(): Adam's moments and its step count stay as they were.")


# ---------------------------------------------------------------------------------------------
# Checks: the scale rule
# ---------------------------------------------------------------------------------------------
SCRIPTED = [  # small to large: the first run that fails is the shortest
    ({"init_scale": 24.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 2}, "OOCCO"),
    ({"init_scale": 2.0**16, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3},
     "CCC" + "CCO" + "CCC" + "OO" + "CCCCCC" + "COC" + "CCC"),
    ({}, "C" * 1999 + "O" + "C" * 2000 + "O"),
]


def _rule_checked(want, settings, pattern, scenario):
    if want != simulate_scales(settings, pattern):
        raise GraderDefect(f"reference scales disagree with the contract's rule ({scenario})")
    return want


@check("scale sequence matches torch.amp.GradScaler", uses=SCALER)
def scale_sequence(sub, ctx):
    # Shrunk cases keep the floor out of play: this check is about GradScaler's rule, which has none.
    with shrinking_updates(sub, inits=(2.0**16, 24.0), floors=(1.0,), floor=False):
        for settings, pattern in SCRIPTED:
            scenario = _scripted_text(settings, pattern)
            want = _rule_checked(expected(ctx, scripted_updates, settings, pattern), settings, pattern, scenario)
            compare_scales(sub.run(scripted_updates, settings, pattern), want, settings, pattern, scenario=scenario)


FLOOR = [  # small to large
    ({"init_scale": 24.0, "min_scale": 1.5, "growth_interval": 3}, "O" * 6 + "CCC"),
    ({"init_scale": 2.0**16, "backoff_factor": 0.25, "min_scale": 4.0, "growth_interval": 3}, "O" * 12 + "CCCO"),
    ({"init_scale": 16.0, "growth_interval": 3}, "O" * 1200 + "CCC"),
]


@check("scale never falls below min_scale", uses=SCALER)
def min_scale_floor(sub, ctx):
    with shrinking_updates(sub, inits=(4.0, 24.0, 2.0**16), floors=(1.0, 4.0, 1.5), floor=True):
        for settings, pattern in FLOOR:
            overflows = pattern.count("O")
            scenario = f"{_settings_text(settings)}; {overflows} overflows in a row, then {pattern[overflows:]}"
            want = _rule_checked(ctx.run_reference(scripted_updates, settings, pattern), settings, pattern, scenario)
            judge_floor(sub.run(scripted_updates, settings, pattern), want, settings, pattern, scenario=scenario)


# ---------------------------------------------------------------------------------------------
# Checks: unscale_
# ---------------------------------------------------------------------------------------------
# True gradients of three parameters; the probe multiplies them by the scale (exactly, in float16
# too). LARGE_TRUE_GRAD is finite in float16, but its sum (170000) and norm (about 69700) are not.
TRUE_GRADS = ([[0.5, -1.0, 0.25], [-2.0, 0.75, 1.25]], [-0.375, 0.625, 3.0, -0.125], [0.875, -1.5, 2.5])
LARGE_TRUE_GRAD = [[30000.0, 28000.0, 32000.0], [26000.0, 30000.0, 24000.0]]


def _grads(case, dtype, scale, large=False):
    """Three scaled gradients with a special value planted as the case says (where, value)."""
    grads = [(torch.tensor(t, dtype=torch.float64) * scale).to(dtype) for t in ((LARGE_TRUE_GRAD, *TRUE_GRADS[1:]) if large else TRUE_GRADS)]
    where, value = case
    if where is not None:
        grads[where].view(-1)[1] = value
    return grads


UNSCALE_CASES = [  # (where, value), dtype, scale, large, text
    ((None, 0.0), "float32", 1024.0, False, "all grads finite"),
    ((2, math.inf), "float32", 1024.0, False, "an inf in the LAST parameter's grad only"),
    ((2, math.nan), "float32", 1024.0, False, "a NaN in the LAST parameter's grad only"),
    ((0, -math.inf), "float32", 1024.0, False, "a -inf in the FIRST parameter's grad only"),
    ((2, math.nan), "float16", 1024.0, False, "a NaN in the LAST parameter's float16 grad only"),
    ((None, 0.0), "float16", 2.0, True, "all float16 grads finite, the first one's entries 24000 to 32000 after unscaling"
                                        " (its sum and its norm are beyond float16's 65504)"),
]


def _describe_grads(grads):
    return ", ".join(f"{tuple(g.shape)} {str(g.dtype).removeprefix('torch.')}" if g is not None else "None" for g in grads)


def _unscale_hint(got, want, scale, after_nonfinite):
    """What one wrongly unscaled gradient shows: not divided at all, or divided twice."""
    finite = torch.isfinite(want)
    if not isinstance(got, torch.Tensor) or not finite.any() or got.shape != want.shape:
        return ""
    ratio = got.double()[finite] / (want / scale).double()[finite]
    if torch.allclose(ratio, torch.full_like(ratio, scale)):
        return "This gradient was not divided at all" + (", and it comes after a parameter whose grad holds inf/NaN: keep dividing after finding one."
                                                         if after_nonfinite else ": divide every existing grad by the scale.")
    if torch.allclose(ratio, torch.full_like(ratio, 1 / scale)):
        return "This gradient was divided by the scale twice."
    return ""


def _compare_unscaled(got, grads, scale, scenario, device):
    """Every p.grad afterwards is the scaled one divided by the scale, None stays None, and the division
    happened in place: the tensor that was p.grad before the call, and a view of it, hold the unscaled values too."""
    got_grads = expect_sequence(got.get("grads"), len(grads), what="grads after unscale_", scenario=scenario)
    with on_input(unscale_code(grads, scale, device, show="[p.grad for p in params]")):
        for i, (g, w) in enumerate(zip(got_grads, grads)):
            what = f"p.grad of parameter {i} (of {len(grads)}) after unscale_"
            if w is None:
                if g is not None:
                    fail(f"{what} ({scenario}): this parameter had no gradient (p.grad is None) and must keep None, got {g!r:.80};"
                         " skip parameters whose grad is None")
                continue
            if g is None:
                fail(f"{what} ({scenario}): expected the gradient divided by {scale:g}, got None; unscale_ must not drop gradients")
            after_nonfinite = any(x is not None and not bool(torch.isfinite(x).all()) for x in grads[:i])
            assert_close(g, w / scale, what=what, scenario=scenario, equal_nan=True, hint=_unscale_hint(g, w, scale, after_nonfinite))
    # In place means the very tensor (and storage) that was p.grad holds the new values: compared
    # exactly with the learner's own p.grad, whatever rounding its division had.
    originals, views, same = got.get("originals"), got.get("views"), got.get("same_tensor")
    for i, w in enumerate(grads):
        if w is None:
            continue
        if not same_values(originals[i], got_grads[i], equal_nan=True):
            replaced = "replaced p.grad with a new tensor" if same[i] is False else "did not divide p.grad in place"
            fail(f"p.grad of parameter {i} after unscale_ ({scenario}): it holds the unscaled values, but unscale_ {replaced}: the"
                 " tensor that was p.grad before the call (which hooks, views and other references to it still see) kept the scaled"
                 " values. Divide in place: p.grad.div_(scale) (or p.grad.mul_(1 / scale)).",
                 failing_input=unscale_code(grads, scale, device, show="grads"), parameter=i)
        if not same_values(views[i], got_grads[i].reshape(-1), equal_nan=True):
            fail(f"a view of parameter {i}'s p.grad, taken before unscale_ ({scenario}), still holds the scaled values, although p.grad"
                 " itself holds the unscaled ones: the gradient's storage was replaced (p.grad.data = ..., or set_) instead of"
                 " divided in place. Divide in place: p.grad.div_(scale).",
                 failing_input=unscale_code(grads, scale, device, show="views"), parameter=i)


def _verdict_hint(case_index, verdicts):
    """Why unscale_'s verdict on one case is wrong, read against its verdicts on the other cases: a
    way of testing the grads that misses exactly the cases it missed."""
    (where, _), _, _, large, _ = UNSCALE_CASES[case_index]
    if where is None:
        if large and verdicts.get(0):
            return (" It is right on the small float32 grads: here the grads are finite but large, and a sum or norm of them computed"
                    " in float16 overflows to inf. Test the entries themselves: torch.isfinite(g).all().")
        return ""
    special = [i for i, case in enumerate(UNSCALE_CASES) if case[0][0] is not None]
    missed = {i for i in special if not verdicts[i]}
    explanations = [
        ({i for i in special if UNSCALE_CASES[i][0][0] != 0},
         " It finds the -inf in the FIRST parameter's grad but not the inf/NaN in the last one: look at every parameter's grad."),
        ({i for i in special if math.isnan(UNSCALE_CASES[i][0][1])},
         " It finds inf and -inf but misses every NaN, and a NaN is not an inf: torch.isfinite catches inf, -inf and NaN."),
        ({i for i in special if math.isinf(UNSCALE_CASES[i][0][1])},
         " It finds NaN but misses every inf and -inf (g == g and isnan only catch NaN): torch.isfinite catches inf, -inf and NaN."),
        (set(special), " It returned True in every case that holds an inf or a NaN: test every grad with torch.isfinite."),
    ]
    return next((text for predicted, text in explanations if predicted == missed), "")


def _unscale_record(sub, grads, scale, scenario, device):
    """The unscale_ probe's record and the flag it returned, read as a bool."""
    got = sub.run(unscale_probe, grads, scale, device)
    with on_input(unscale_code(grads, scale, device, show="finite")):
        if not isinstance(got, dict):
            fail(f"unscale_ probe ({scenario}): the scenario's record came back malformed: {type(got).__name__}")
        return got, as_flag(got["result"], what="unscale_'s return value", scenario=scenario)


@check("unscale_ divides every grad in place and finds inf/NaN in any of them", devices=("cpu", "cuda"), uses=SCALER)
def unscale_finds_nonfinite(sub, ctx):
    # Every case first, then the verdicts in order: the hint for a wrong one is read from the others.
    runs = []
    for case, dtype, scale, large, text in UNSCALE_CASES:
        grads = _grads(case, getattr(torch, dtype), scale, large)
        scenario = f"grads of shapes {_describe_grads(grads)} on {ctx.device}, scale {scale:g}, {text}"
        runs.append((grads, scale, scenario, *_unscale_record(sub, grads, scale, scenario, ctx.device), case[0] is None))
    verdicts = {i: flag == finite for i, (*_, flag, finite) in enumerate(runs)}
    for i, (grads, scale, scenario, got, flag, finite) in enumerate(runs):
        if flag != finite:
            meaning = "True: every unscaled grad is finite" if finite else "False: not every unscaled grad is finite"
            fail(f"unscale_ ({scenario}): expected {meaning}; got {flag}.{_verdict_hint(i, verdicts)}",
                 failing_input=unscale_code(grads, scale, ctx.device, show="finite"), expected=finite, got=flag)
        _compare_unscaled(got, grads, scale, scenario, ctx.device)


@check("parameters without a gradient are skipped", devices=("cpu", "cuda"), uses=BOTH)
def none_grads_skipped(sub, ctx):
    scale = 1024.0
    g = _grads((None, 0.0), torch.float32, scale)
    grads = [g[0], None, g[2]]
    scenario = f"unscale_ on {ctx.device} with grads {_describe_grads(grads)} (the middle parameter got no gradient), scale {scale:g}"
    got, flag = _unscale_record(sub, grads, scale, scenario, ctx.device)
    if not flag:
        alone = control_value(sub, unscale_probe, [g[0], g[2]], scale, ctx.device, read=lambda r: as_flag(r["result"], what="unscale_", scenario="control"))
        fail(f"unscale_ ({scenario}): expected True (the existing grads are finite), got False"
             + ("; a missing grad is not an overflow: for the same grads without the parameter that has none, your unscale_ returns True" if alone else ""),
             failing_input=unscale_code(grads, scale, ctx.device, show="finite"))
    _compare_unscaled(got, grads, scale, scenario, ctx.device)

    spec = {"seed": 3, "model": "mlp_unused_head", "optimizer": ("sgd", {"lr": 0.1, "momentum": 0.9}), "loss": "mse",
            "scaler": {"init_scale": 2.0**10, "growth_interval": 2}, "poison": [1.0, 1.0, math.inf, 1.0]}
    compare_run(sub, sub.run(training_run, spec, ctx.device), expected(ctx, training_run, spec, "cpu"), spec, ctx.device,
                scenario=f"train_step on {ctx.device}, MLP 4-8-1 plus a head that forward never uses, SGD momentum 0.9, init_scale 1024")


# ---------------------------------------------------------------------------------------------
# Checks: scale_loss
# ---------------------------------------------------------------------------------------------
SCALED_LOSSES = [  # (what the loss (w . x) is multiplied by, scale, text): ordinary, then extreme
    (1.0, 2.0**16, "an ordinary loss, -0.5"), (-2e34, 2.0**16, "a loss of 1e34, which times the scale overflows float32 to inf"),
    (math.inf, 1024.0, "an inf loss"), (math.nan, 1024.0, "a NaN loss"),
]
LOSS_X = [2.0, 1.0]  # loss = (w * LOSS_X).sum() * factor, w = (0.5, -1.5): d loss / d w = factor * LOSS_X


def scale_loss_code(factor, scale):
    return Call.code(f"w = torch.tensor([0.5, -1.5], requires_grad=True)\nloss = (w * torch.tensor({LOSS_X!r})).sum() * {_float_code(factor)}\n"
                     f"before = loss.detach().clone()\nscaled = DynamicLossScaler(init_scale={_float_code(scale)}).scale_loss(loss)\nscaled.backward()\n"
                     "scaled, loss, before, w.grad  # scale_loss returns loss * scale, leaves loss as it was; backward gives scale times the gradient")


@scenario(repro=lambda interface, factor, scale: scale_loss_code(factor, scale))
def scale_loss_probe(module, factor, scale):
    """Scenario: scale_loss on a float32 loss computed from a weight: what it returned, the loss before and after the
    call, and the weight's gradient after backward through the result."""
    w = torch.tensor([0.5, -1.5], requires_grad=True)
    loss = (w * torch.tensor(LOSS_X)).sum() * factor
    before = loss.detach().clone()
    scaled = module.DynamicLossScaler(init_scale=scale).scale_loss(loss)
    record = {"scaled": scaled.detach().clone() if torch.is_tensor(scaled) else scaled, "before": before, "after": loss.detach().clone(), "grad": None}
    if torch.is_tensor(scaled) and scaled.requires_grad:
        scaled.backward()
        record["grad"] = w.grad.clone()
    return record


@check("scale_loss returns loss * scale, through which backward gives scale times the gradient, and leaves the loss unchanged", uses=SCALER)
def scale_loss_times_scale(sub, ctx):
    for factor, scale, text in SCALED_LOSSES:
        scenario = f"scale {_fmt_scale(scale)}, {text}"
        got = expect_record(sub.run(scale_loss_probe, factor, scale), ("scaled", "before", "after", "grad"), what="scale_loss(loss)", scenario=scenario)
        before = got["before"]
        if not same_values(got["after"], before, equal_nan=True):
            fail(f"scale_loss(loss) ({scenario}) changed the loss in place: it was {before.item():.8g} before the call and {got['after'].item():.8g}"
                 " after. Return a new tensor, loss * self.scale: the caller's loss (logged, compared, reused) must stay the loss.",
                 what="the loss after scale_loss", got="changed", first_index="")
        assert_close(got["scaled"], before * scale, what="scale_loss(loss)", scenario=scenario, equal_nan=True)
        if math.isfinite(factor):
            if got["grad"] is None:
                fail(f"scale_loss(loss) ({scenario}): backward through its result reached no parameter; multiply the loss by the scale"
                     " with torch operations (loss * self.scale), so that the graph is kept.", what="the weight's gradient", got="None", first_index="")
            assert_close(got["grad"], torch.tensor(LOSS_X) * factor * scale, what="d scale_loss(loss) / d w", scenario=scenario)


# ---------------------------------------------------------------------------------------------
# Checks: train_step
# ---------------------------------------------------------------------------------------------
@check("a skipped step leaves parameters and Adam's state untouched", devices=("cpu", "cuda"), uses=BOTH)
def overflow_changes_nothing(sub, ctx):
    spec = {"seed": 0, "model": "mlp", "optimizer": ("adam", {"lr": 1e-2}), "loss": "mse",
            "scaler": {"init_scale": 2.0**10, "growth_interval": 3}, "poison": [1.0, 1.0, math.inf, math.nan, 1.0, 1.0]}
    compare_run(sub, sub.run(training_run, spec, ctx.device), expected(ctx, training_run, spec, "cpu"), spec, ctx.device,
                scenario=f"train_step on {ctx.device}, MLP 4-8-1 float32, Adam lr 1e-2, init_scale 1024, growth_interval 3")


CLIP_CASES = [
    ([[0.3, 0.4]], 1.0, "true gradient (0.3, 0.4), norm 0.5 <= max_grad_norm 1: no clipping"),
    ([[3.0, 4.0]], 1.0, "true gradient (3, 4), norm 5 > max_grad_norm 1: clipped to norm 1"),
    ([[3.0, 4.0]], None, "true gradient (3, 4), max_grad_norm None: no clipping"),
]


@check("clipping sees the unscaled gradients", devices=("cpu", "cuda"), uses=BOTH)
def clip_after_unscale(sub, ctx):
    for x, max_norm, text in CLIP_CASES:
        spec = {"seed": 0, "model": "linear", "weight": [[1.0, -1.0]], "optimizer": ("sgd", {"lr": 1.0}), "loss": "sum",
                "x": x, "steps": 1, "scaler": {"init_scale": 2.0**12}, "max_grad_norm": max_norm}
        want = expected(ctx, training_run, spec, "cpu")
        factor = min(1.0, (max_norm or math.inf) / math.hypot(*x[0]))
        if not torch.allclose(want["params"][0][0], torch.tensor([[1.0 - x[0][0] * factor, -1.0 - x[0][1] * factor]])):
            raise GraderDefect(f"reference clipping disagrees with the analytic update ({text})")
        compare_run(sub, sub.run(training_run, spec, ctx.device), want, spec, ctx.device,
                    scenario=f"train_step on {ctx.device}, Linear(2, 1) weight (1, -1), loss sum(w . x), SGD lr 1, scale 4096, {text}")


@check("tiny float16 gradients survive thanks to the scale", devices=("cpu", "cuda"), uses=BOTH)
def tiny_half_gradients(sub, ctx):
    x = [[1.0, 0.5, 2.0, 0.25]]
    for init_scale, text in [(2.0**16, "scale 2**16: the scaled gradient 2**-11 * x fits float16"),
                             (1.0, "scale 1: the gradient 2**-27 * x underflows to 0 in float16, so nothing moves")]:
        spec = {"seed": 0, "model": "linear", "weight": [[0.5, 0.5, 0.5, 0.5]], "optimizer": ("sgd", {"lr": 2.0**20}),
                "loss": "half_compute", "x": x, "steps": 1, "scaler": {"init_scale": init_scale, "growth_interval": 100}}
        want = expected(ctx, training_run, spec, "cpu")
        if not torch.equal(want["params"][0][0], torch.tensor([[0.5 - 2.0**-7 * v if init_scale > 1 else 0.5 for v in x[0]]])):
            raise GraderDefect(f"reference float16 update disagrees with the analytic one ({text})")
        compare_run(sub, sub.run(training_run, spec, ctx.device), want, spec, ctx.device,
                    scenario=f"train_step on {ctx.device}, float32 Linear(4, 1) computing in float16, true gradient 2**-27 * x"
                             f" (about 7e-9), SGD lr 2**20, {text}")


@check("a float16 model backs off until its steps succeed", devices=("cpu", "cuda"), uses=BOTH)
def half_model_recovers(sub, ctx):
    spec = {"seed": 0, "model": "linear", "weight": [[0.5, 0.25]], "param_dtype": "float16", "optimizer": ("sgd", {"lr": 2.0**-6}),
            "loss": "half_model", "x": [[4.0, 2.0]], "steps": 8, "scaler": {"init_scale": 2.0**16, "growth_interval": 2}}
    want = expected(ctx, training_run, spec, "cpu", gradscaler=False)  # GradScaler refuses float16 gradients
    if want["stepped"] != [False, False, False, True, True, False, True, True] or want["scales"][2] != 2.0**13:
        raise GraderDefect("the float16 recovery scenario no longer overflows where it was designed to")
    scenario = (f"train_step on {ctx.device}, float16 Linear(2, 1) weight (0.5, 0.25), x = (4, 2), loss sum(w . x) (gradient x),"
                " SGD lr 2**-6, init_scale 2**16, growth_interval 2: the scaled gradient overflows float16 at 2**16, 2**15, 2**14")
    got = sub.run(training_run, spec, ctx.device)
    flags = got.get("stepped") if isinstance(got, dict) else None
    if isinstance(flags, list) and flags and all(f is False for f in flags):
        scales = [float(s) for s in got["scales"]]
        if scales[-1] < 2.0**13:
            why = "The scale did go down, below the 2**13 at which this model's scaled gradients fit float16, and still every step overflowed."
            if _steps_with_grads_cleared(sub, ctx.device, spec, len(flags) - 1):
                why += (" Run with every p.grad cleared before each call (by the grader), your train_step does step: an inf from an earlier step"
                        " is left in p.grad. Zero the grads at the start of each step.")
        else:
            why = "Each overflow must lower the scale (scaler.update(found_inf=True)) until the scaled gradients fit float16, here from 2**13 on."
        fail(f"{scenario}: no step succeeded in 8 steps (train_step returned {got['stepped']}, scales {[_fmt_scale(s) for s in scales]}). {why}",
             failing_input=training_code(spec, ctx.device, show="stepped"), series=run_series(got, want))
    compare_run(sub, got, want, spec, ctx.device, scenario=scenario)


LARGE_GRADIENT_SPEC = {"seed": 0, "model": "linear", "weight": [[0.25, 0.25, 0.25]], "param_dtype": "float16",
                       "optimizer": ("sgd", {"lr": 2.0**-20}), "loss": "half_model", "x": [[40000.0, 40000.0, 40000.0]], "steps": 6,
                       "scaler": {"init_scale": 1.0, "growth_interval": 2}}


def _large_gradient_control(sub, device):
    """A control for a clean large-gradient step reported as an overflow: the learner's unscale_ alone on this
    step's gradient (float16, 40000 each, scale 1)."""
    grads = [torch.tensor([[40000.0, 40000.0, 40000.0]], dtype=torch.float16)]
    finite = control_value(sub, unscale_probe, grads, 1.0, device, read=lambda got: as_flag(got["result"], what="unscale_'s return value", scenario="control"))
    if finite is not False:
        return ""
    return ("Your unscale_ alone returns False for this step's gradient (float16 (40000, 40000, 40000), scale 1), whose entries"
            " are all finite: their sum or norm computed in float16 overflows, the entries do not. Test the entries themselves:"
            " torch.isfinite(g).all().")


@check("large finite float16 gradients are not overflows", devices=("cpu", "cuda"), uses=BOTH)
def half_model_large_gradients(sub, ctx):
    spec = LARGE_GRADIENT_SPEC
    want = expected(ctx, training_run, spec, "cpu", gradscaler=False)  # GradScaler refuses float16 gradients
    if want["stepped"] != [True, True, False, True, True, False] or want["scales"] != [1.0, 2.0, 1.0, 1.0, 2.0, 1.0]:
        raise GraderDefect("the large-gradient float16 scenario no longer overflows where it was designed to")
    scenario = (f"train_step on {ctx.device}, float16 Linear(3, 1) weight (0.25, 0.25, 0.25), x = (40000, 40000, 40000), loss"
                " sum(w . x) (gradient x: finite in float16, but its sum 120000 and norm 69282 are not), SGD lr 2**-20, init_scale 1,"
                " growth_interval 2: the scaled gradient overflows at scale 2")
    got = sub.run(training_run, spec, ctx.device)
    try:
        compare_run(sub, got, want, spec, ctx.device, scenario=scenario)
    except CheckFailed as failure:
        if failure.details.get("expected") is True and failure.details.get("got") is False and "step" in failure.details:
            failure.notes.append(_large_gradient_control(sub, ctx.device))
        raise


def _random_poison(seed, n):
    u = torch.rand(n, generator=torch.Generator().manual_seed(seed)).tolist()
    return [math.inf if v < 0.15 else math.nan if v < 0.25 else 1.0 for v in u]


@check("50 steps with random overflows match torch.amp.GradScaler", devices=("cpu", "cuda"), uses=BOTH)
def long_run_matches_gradscaler(sub, ctx):
    runs = [
        ({"seed": 5, "model": "mlp", "optimizer": ("adam", {"lr": 1e-2}), "loss": "mse", "max_grad_norm": 1.0,
          "scaler": {"init_scale": 2.0**8, "growth_interval": 4}, "poison": _random_poison(11, 50)},
         "MLP 4-8-1 float32, Adam lr 1e-2, max_grad_norm 1, init_scale 256, growth_interval 4"),
        ({"seed": 6, "model": "mlp", "optimizer": ("sgd", {"lr": 0.05, "momentum": 0.9}), "loss": "mse",
          "scaler": {"init_scale": 2.0**16, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 3},
          "poison": _random_poison(12, 50)},
         "MLP 4-8-1 float32, SGD lr 0.05 momentum 0.9, init_scale 2**16, growth_factor 4, backoff_factor 0.25, growth_interval 3"),
    ]
    for spec, text in runs:
        compare_run(sub, sub.run(training_run, spec, ctx.device), expected(ctx, training_run, spec, "cpu"), spec, ctx.device,
                    scenario=f"train_step on {ctx.device}, {text}", rtol=LONG_RUN_TOL[0], atol=LONG_RUN_TOL[1])
