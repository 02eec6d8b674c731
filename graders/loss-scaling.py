"""Checks for `loss-scaling`: DynamicLossScaler and a mixed-precision train_step.

Everything here is stateful, so the learner's code runs inside scenarios (module-level functions
below, run in the sandbox): a scripted run of scaler.update, one unscale_ call on hand-built
gradients, or a short training run that records after every step what train_step returned, the
scale, the parameters and the optimizer state. The judge then walks the record step by step, so
the first step that goes wrong is the one reported.

Expected values come from torch.amp.GradScaler driven the same way (the canonical AMP recipe:
scale, backward, unscale_, clip, step, update) wherever GradScaler can do what the contract asks,
and from the reference otherwise: GradScaler has no min_scale floor and refuses to unscale float16
gradients. Where both exist they must agree, or the grader reports its own defect.
"""

import math
import threading
import types

import torch
import torch.nn.functional as F

from mlprep.grading import GraderDefect, as_float, assert_close, check, expect_sequence, fail

SCALE_RULES = ("on an overflow the scale is multiplied by backoff_factor (never below min_scale) and the clean-step"
               " count restarts; a clean step adds one to the count, and when the count reaches growth_interval the"
               " scale is multiplied by growth_factor and the count restarts")

RECIPE_HINT = ("the update differs from the GradScaler recipe: zero the grads, backward of scale_loss(loss), unscale_ once"
               " (dividing by the scale the loss was multiplied with), clip if asked, step only if every grad is finite,"
               " then update the scale.")

# torch.optim imports torch._dynamo on first use (about 2 s): pay that while the sandbox starts,
# not inside the time limit of the first training check.
torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.0)

# After 50 float32 steps a correct implementation with another order of operations (clipping without
# the 1e-6, reciprocal multiply, CUDA kernels) stays well within these.
LONG_RUN_TOL = (1e-5, 1e-5)


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox on the learner's module; here on the reference or on GradScaler)
# ---------------------------------------------------------------------------------------------
def scripted_updates(module, settings, pattern):
    """Scenario: a scaler with `settings`, then update(found_inf) once per letter of pattern
    ("O" overflow, "C" clean); the scale before the first update and after each one."""
    scaler = module.DynamicLossScaler(**settings)
    scales = [float(scaler.scale)]
    for letter in pattern:
        scaler.update(letter == "O")
        scales.append(float(scaler.scale))
    return scales


def unscale_probe(module, grads, scale):
    """Scenario: one parameter per entry of grads (None: a parameter without a gradient), one
    unscale_ call with the given scale; what it returned and every p.grad afterwards."""
    device = next(g.device for g in grads if g is not None)
    params = []
    for g in grads:
        if g is None:
            params.append(torch.nn.Parameter(torch.zeros(2, device=device)))
        else:
            p = torch.nn.Parameter(torch.zeros(g.shape, dtype=g.dtype, device=g.device))
            p.grad = g.clone()
            params.append(p)
    scaler = module.DynamicLossScaler(init_scale=scale)
    result = scaler.unscale_(list(params))
    return result, [None if p.grad is None else p.grad.detach().cpu().clone() for p in params]


class MlpWithUnusedHead(torch.nn.Module):
    """An MLP plus a head that forward never uses: its parameters get no gradient (p.grad is None)."""

    def __init__(self):
        super().__init__()
        self.body = _mlp()
        self.unused_head = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.body(x)


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def _build_model(spec):
    kind = spec["model"]
    if kind == "mlp":
        model = _mlp()
    elif kind == "mlp_unused_head":
        model = MlpWithUnusedHead()
    elif kind == "linear":
        weight = torch.tensor(spec["weight"], dtype=torch.float32)
        model = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        with torch.no_grad():
            model.weight.copy_(weight)
    else:
        raise ValueError(kind)
    if kind != "linear":
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
    out = F.linear(batch["x"].half(), model.weight.half())
    return out.float().sum() * 2.0**-27


def half_model_loss(model, batch):
    """A float16 model end to end; the float32 loss's gradient enters the model in float16."""
    return model(batch["x"].half()).float().sum()


LOSSES = {"mse": mse_loss, "sum": sum_loss, "half_compute": half_compute_loss, "half_model": half_model_loss}


def _batches(spec, device):
    if spec["loss"] == "mse":
        generator = torch.Generator().manual_seed(spec["seed"] + 1)
        n = len(spec["poison"])
        xs = torch.randn(n, 6, 4, generator=generator)
        ys = torch.randn(n, 6, 1, generator=generator)
        return [{"x": xs[k].to(device), "y": ys[k].to(device), "poison": float(spec["poison"][k])} for k in range(n)]
    x = torch.tensor(spec["x"], dtype=torch.float32).to(device)
    return [{"x": x} for _ in range(spec["steps"])]


def _optimizer(spec, model):
    name, kwargs = spec["optimizer"]
    return {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[name](model.parameters(), **kwargs)


def _optimizer_state(optimizer):
    state = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            entry = optimizer.state.get(p, {})
            state.append({k: (v.detach().cpu().clone() if torch.is_tensor(v) else v) for k, v in entry.items()})
    return state


def training_run(module, spec, device):
    """Scenario: a model, an optimizer and the learner's scaler, then train_step once per batch;
    the initial parameters and optimizer state, and after every step: what train_step returned,
    the scale, the parameters and the optimizer state."""
    model = _build_model(spec).to(device)
    optimizer = _optimizer(spec, model)
    scaler = module.DynamicLossScaler(**spec["scaler"])
    kwargs = {} if spec.get("max_grad_norm") is None else {"max_grad_norm": spec["max_grad_norm"]}
    record = {"params0": [p.detach().cpu().clone() for p in model.parameters()], "state0": _optimizer_state(optimizer),
              "scale0": float(scaler.scale), "stepped": [], "scales": [], "params": [], "state": []}
    for batch in _batches(spec, device):
        record["stepped"].append(module.train_step(model, LOSSES[spec["loss"]], batch, optimizer, scaler, **kwargs))
        record["scales"].append(float(scaler.scale))
        record["params"].append([p.detach().cpu().clone() for p in model.parameters()])
        record["state"].append(_optimizer_state(optimizer))
    return record


# ---------------------------------------------------------------------------------------------
# torch.amp.GradScaler driven through the same scenarios (here, on the CPU)
# ---------------------------------------------------------------------------------------------
class GradScalerDriver:
    """torch.amp.GradScaler behind the scenarios' names. update(found_inf) drives it through one
    real step of a probe parameter whose gradient is inf or finite, so GradScaler itself decides the
    next scale. It has no min_scale: only used where the floor does not bind."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, min_scale=1.0):
        self.gs = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                       backoff_factor=backoff_factor, growth_interval=growth_interval)
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
    """The expected record of a scenario: the reference's, checked against GradScaler's when
    GradScaler can run it. Cached: the same scenario is asked for by every graded file."""
    key = (scenario.__name__, repr(args), gradscaler)
    with _expected_lock:
        if key in _expected_cache:
            return _expected_cache[key]
        want = ctx.run_reference(scenario, *args)
        if gradscaler:
            _same_record(want, scenario(GRADSCALER, *args), f"{scenario.__name__}{args!r:.200}")
        _expected_cache[key] = want
    return _expected_cache[key]


def _same_record(ref, gs, where):
    """Reference and GradScaler agree (scales exactly, values within float32 tolerance)."""
    if isinstance(ref, dict):
        for k in ref:
            _same_record(ref[k], gs[k], f"{where}[{k}]")
    elif isinstance(ref, (list, tuple)):
        if len(ref) != len(gs):
            raise GraderDefect(f"reference and GradScaler records differ in length at {where}")
        for i, (a, b) in enumerate(zip(ref, gs)):
            _same_record(a, b, f"{where}[{i}]")
    elif torch.is_tensor(ref):
        if not torch.allclose(ref.double(), gs.double(), rtol=1e-5, atol=1e-6, equal_nan=True):
            raise GraderDefect(f"reference and torch.amp.GradScaler disagree at {where}")
    elif ref != gs:
        raise GraderDefect(f"reference and torch.amp.GradScaler disagree at {where}: {ref!r} vs {gs!r}")


# ---------------------------------------------------------------------------------------------
# Reading and comparing what came back
# ---------------------------------------------------------------------------------------------
def _fmt_scale(x):
    return f"{x:.10g}"


def _settings_text(settings):
    return ", ".join(f"{k}={_fmt_scale(v)}" for k, v in settings.items()) or "default settings"


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


def compare_scales(got, want, settings, pattern, *, scenario):
    """Scale after each scripted update, in order; exact (the factors are powers of two)."""
    got = expect_sequence(got, len(want), what="recorded scales", scenario=scenario)
    got = [as_float(g, what="scaler.scale", scenario=scenario) for g in got]
    if got[0] != want[0]:
        fail(f"scaler.scale right after DynamicLossScaler({_settings_text(settings)}): expected {_fmt_scale(want[0])},"
             f" got {_fmt_scale(got[0])}; the scale starts at init_scale", expected=want[0], got=got[0])
    for k in range(1, len(want)):
        if got[k] == want[k]:
            continue
        letter, before, run = pattern[k - 1], want[k - 1], _clean_run(pattern, k - 1)
        event = "found_inf=True" if letter == "O" else "found_inf=False"
        if letter == "O" and got[k] == got[k - 1]:
            hint = "an overflow must multiply the scale by backoff_factor (never below min_scale)."
        elif letter == "O" and got[k] < want[k]:
            floor = _fmt_scale(settings.get("min_scale", 1.0))
            hint = (f"the scale went below what max(scale * backoff_factor, min_scale={floor}) gives: is it truncated to an int,"
                    " or missing the min_scale floor?")
        elif letter == "C" and want[k] == before and got[k] > got[k - 1]:
            hint = ("the scale grew too early: it grows only once growth_interval clean steps have happened in a row, and the"
                    " count starts again from 0 after an overflow and after each growth.")
        elif letter == "C" and want[k] > before:
            hint = "this update completes growth_interval clean steps in a row, so the scale must be multiplied by growth_factor here."
        else:
            hint = f"the rules: {SCALE_RULES}."
        fail(f"scripted updates ({scenario}): after update #{k} ({event}; {run} clean update(s) in a row before it),"
             f" expected scale {_fmt_scale(want[k])} (it was {_fmt_scale(before)}), got {_fmt_scale(got[k])}. {hint}",
             update=k, expected=want[k], got=got[k], expected_before=before)


def simulate_scales(settings, pattern):
    """The contract's update rule, written out (used to double-check the reference)."""
    s = {"init_scale": 2.0**16, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000, "min_scale": 1.0, **settings}
    scale, count, out = float(s["init_scale"]), 0, [float(s["init_scale"])]
    for letter in pattern:
        if letter == "O":
            scale, count = max(scale * s["backoff_factor"], s["min_scale"]), 0
        else:
            count += 1
            if count >= s["growth_interval"]:
                scale, count = scale * s["growth_factor"], 0
        out.append(scale)
    return out


def _step_text(spec, k, want):
    poison = spec.get("poison")
    if poison is not None:
        p = poison[k]
        batch = "clean batch" if p == 1.0 else f"batch whose loss is multiplied by {p} (an injected overflow)"
    else:
        batch = "a clean step" if want["stepped"][k] else "scaled gradients overflow float16"
    before = want["scales"][k - 1] if k else want["scale0"]
    return f"step {k + 1} of {len(want['stepped'])} ({batch}; scale before the step {_fmt_scale(before)})"


def _param_names(spec):
    model = _build_model(spec)
    return [f"{name} {tuple(p.shape)}" for name, p in model.named_parameters()]


def compare_run(got, want, spec, *, scenario, rtol=None, atol=None, hints=None):
    """Walk a training record step by step: returned flag, scale, parameters, optimizer state."""
    hints = hints or {}
    if not isinstance(got, dict) or set(got) != set(want):
        fail(f"training run ({scenario}): the scenario's record came back malformed: {type(got).__name__}")
    names = _param_names(spec)
    n = len(want["stepped"])
    dtype = spec.get("param_dtype", "float32")
    for k in range(n):
        where = f"{scenario}; {_step_text(spec, k, want)}"
        flag = as_flag(got["stepped"][k], what="train_step's return value", scenario=where)
        if flag != want["stepped"][k]:
            meaning = ("the optimizer should have stepped: every gradient of this step is finite (if your check saw an"
                       " inf/NaN, was it left over in p.grad from an earlier step? zero the grads first)" if want["stepped"][k]
                       else "the step must be skipped: the scaled gradients hold inf/NaN")
            fail(f"train_step ({where}): expected {want['stepped'][k]}, got {flag}; {meaning}. {hints.get('stepped', '')}".strip(),
                 step=k + 1, expected=want["stepped"][k], got=flag)
        if not want["stepped"][k]:
            _unchanged_on_overflow(got, k, names, where)
        got_scale = as_float(got["scales"][k], what="scaler.scale", scenario=where)
        if got_scale != want["scales"][k]:
            fail(f"scaler.scale after {where}: expected {_fmt_scale(want['scales'][k])}, got {_fmt_scale(got_scale)}."
                 f" {hints.get('scale', 'train_step must call scaler.update once per step, with found_inf = not stepped.')}",
                 step=k + 1, expected=want["scales"][k], got=got_scale)
        got_params = expect_sequence(got["params"][k], len(names), what="parameters", scenario=where)
        for name, g, w in zip(names, got_params, want["params"][k]):
            assert_close(g, w, what=f"parameter {name} after the step", scenario=where, rtol=rtol, atol=atol, dtype=dtype,
                         hint=hints.get("params", RECIPE_HINT))
        for i, (g_state, w_state) in enumerate(zip(got["state"][k], want["state"][k])):
            if set(g_state) != set(w_state):
                fail(f"optimizer state of parameter {names[i]} after {where}: expected entries {sorted(w_state)}, got {sorted(g_state)}."
                     f" {hints.get('state', '')}".strip())
            for key in w_state:
                assert_close(g_state[key], w_state[key], what=f"optimizer state {key!r} of parameter {names[i]}", scenario=where,
                             rtol=rtol, atol=atol, dtype="float32", hint=hints.get("state", RECIPE_HINT))


def _unchanged_on_overflow(got, k, names, where):
    """On a skipped step parameters and optimizer state are exactly what they were before it."""
    before_params = got["params"][k - 1] if k else got["params0"]
    before_state = got["state"][k - 1] if k else got["state0"]
    for name, a, b in zip(names, before_params, got["params"][k]):
        changed = ~((a == b) | (a.isnan() & b.isnan()))
        if changed.any():
            idx = tuple(int(i) for i in changed.nonzero()[0])
            fail(f"parameter {name} changed on {where}: at index {idx} it was {a[idx].item():.8g} before and"
                 f" {b[idx].item():.8g} after. When unscale_ finds inf/NaN, skip optimizer.step() (and clipping):"
                 " the weights must stay as they were.", step=k + 1, index=str(idx))
    for i, (a, b) in enumerate(zip(before_state, got["state"][k])):
        for key in set(a) | set(b):
            if key not in a or key not in b or not torch.equal(torch.as_tensor(a[key]), torch.as_tensor(b[key])):
                fail(f"optimizer state {key!r} of parameter {names[i]} changed on {where}. A skipped step must not call"
                     " optimizer.step(): Adam's moments and its step count stay as they were.")


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
SCRIPTED = [
    ({"init_scale": 2.0**16, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3},
     "CCC" + "CCO" + "CCC" + "OO" + "CCCCCC" + "COC" + "CCC"),
    ({"init_scale": 24.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 2}, "OOCCO"),
    ({}, "C" * 1999 + "O" + "C" * 2000 + "O"),
]


@check("scale sequence matches torch.amp.GradScaler")
def scale_sequence(sub, ctx):
    for settings, pattern in SCRIPTED:
        overflows = ", #".join(str(i + 1) for i, c in enumerate(pattern) if c == "O")
        scenario = f"{_settings_text(settings)}; {len(pattern)} updates, overflows at #{overflows}"
        want = expected(ctx, scripted_updates, settings, pattern)
        if want != simulate_scales(settings, pattern):
            raise GraderDefect(f"reference scales disagree with the contract's rule ({scenario})")
        compare_scales(sub.run(scripted_updates, settings, pattern), want, settings, pattern, scenario=scenario)


FLOOR = [
    ({"init_scale": 16.0, "growth_interval": 3}, "O" * 1200 + "CCC"),
    ({"init_scale": 2.0**16, "backoff_factor": 0.25, "min_scale": 4.0, "growth_interval": 3}, "O" * 12 + "CCCO"),
    ({"init_scale": 24.0, "min_scale": 1.5, "growth_interval": 3}, "O" * 6 + "CCC"),
]


@check("scale never falls below min_scale")
def min_scale_floor(sub, ctx):
    for settings, pattern in FLOOR:
        min_scale = settings.get("min_scale", 1.0)
        scenario = f"{_settings_text(settings)}; {pattern.count('O')} overflows in a row, then {pattern[pattern.count('O'):]}"
        want = ctx.run_reference(scripted_updates, settings, pattern)
        if want != simulate_scales(settings, pattern):
            raise GraderDefect(f"reference scales disagree with the contract's rule ({scenario})")
        got = sub.run(scripted_updates, settings, pattern)
        got = expect_sequence(got, len(want), what="recorded scales", scenario=scenario)
        got = [as_float(g, what="scaler.scale", scenario=scenario) for g in got]
        for k, s in enumerate(got):
            if not s >= min_scale:
                fail(f"scaler.scale after {k} overflow(s) in a row ({scenario}): got {_fmt_scale(s)}, below min_scale ="
                     f" {_fmt_scale(min_scale)}{' (a zero scale makes every unscale 0/0)' if s == 0 else ''}. Back off with"
                     " max(scale * backoff_factor, min_scale).", update=k, got=s, min_scale=min_scale)
        compare_scales(got, want, settings, pattern, scenario=scenario)


def _grads(case, dtype):
    """Three scaled gradients (scale 1024) with a special value planted as the case says."""
    generator = torch.Generator().manual_seed(7)
    grads = [torch.randn(shape, generator=generator).mul(1024.0).to(dtype) for shape in [(2, 3), (4,), (3,)]]
    where, value = case
    if where is not None:
        grads[where].view(-1)[1] = value
    return grads


UNSCALE_CASES = [
    ((None, 0.0), "float32", "all grads finite"),
    ((2, math.inf), "float32", "an inf in the LAST parameter's grad only"),
    ((2, math.nan), "float32", "a NaN in the LAST parameter's grad only"),
    ((0, -math.inf), "float32", "a -inf in the FIRST parameter's grad only"),
    ((2, math.nan), "float16", "a NaN in the LAST parameter's float16 grad only"),
]


def _describe_grads(grads):
    return ", ".join(f"{tuple(g.shape)} {str(g.dtype).removeprefix('torch.')}" if g is not None else "None" for g in grads)


def _compare_unscaled(got_grads, grads, scale, scenario):
    got_grads = expect_sequence(got_grads, len(grads), what="grads after unscale_", scenario=scenario)
    for i, (g, w) in enumerate(zip(got_grads, grads)):
        what = f"p.grad of parameter {i} (of {len(grads)}) after unscale_"
        if w is None:
            if g is not None:
                fail(f"{what} ({scenario}): this parameter had no gradient (p.grad is None) and must keep None, got {g!r:.80};"
                     " skip parameters whose grad is None")
            continue
        if g is None:
            fail(f"{what} ({scenario}): expected the gradient divided by {scale:g}, got None; unscale_ must not drop gradients")
        want = w / scale
        finite = torch.isfinite(w)
        ratio = (g.double()[finite] / want.double()[finite]) if finite.any() else None
        hint = ""
        if ratio is not None and torch.allclose(ratio, torch.full_like(ratio, scale)):
            hint = "this gradient was not unscaled at all: divide EVERY existing grad by the scale, also those after a non-finite one."
        elif ratio is not None and torch.allclose(ratio, torch.full_like(ratio, 1 / scale)):
            hint = "this gradient was divided by the scale twice."
        assert_close(g, want, what=what, scenario=scenario, equal_nan=True, hint=hint)


@check("unscale_ divides every grad and finds inf/NaN in any of them", devices=("cpu", "cuda"))
def unscale_finds_nonfinite(sub, ctx):
    scale = 1024.0
    for case, dtype, text in UNSCALE_CASES:
        grads = _grads(case, getattr(torch, dtype))
        scenario = f"grads of shapes {_describe_grads(grads)} on {ctx.device}, scale {scale:g}, {text}"
        result, got_grads = expect_sequence(sub.run(unscale_probe, grads, scale), 2, what="unscale_ probe", scenario=scenario)
        finite = case[0] is None
        flag = as_flag(result, what="unscale_'s return value", scenario=scenario)
        if flag != finite:
            meaning = ("True: every unscaled grad is finite" if finite else
                       "False: not every unscaled grad is finite. Look at every parameter's grad, not just the first,"
                       " and test with isfinite (NaN is not inf)")
            fail(f"unscale_ ({scenario}): expected {meaning}; got {flag}.", expected=finite, got=flag)
        _compare_unscaled(got_grads, grads, scale, scenario)


@check("parameters without a gradient are skipped", devices=("cpu", "cuda"))
def none_grads_skipped(sub, ctx):
    scale = 1024.0
    g = _grads((None, 0.0), torch.float32)
    grads = [g[0], None, g[2]]
    scenario = f"unscale_ on {ctx.device} with grads {_describe_grads(grads)} (the middle parameter got no gradient), scale {scale:g}"
    result, got_grads = expect_sequence(sub.run(unscale_probe, grads, scale), 2, what="unscale_ probe", scenario=scenario)
    if not as_flag(result, what="unscale_'s return value", scenario=scenario):
        fail(f"unscale_ ({scenario}): expected True (the existing grads are finite; a missing grad is not an overflow), got False")
    _compare_unscaled(got_grads, grads, scale, scenario)

    spec = {"seed": 3, "model": "mlp_unused_head", "optimizer": ("sgd", {"lr": 0.1, "momentum": 0.9}), "loss": "mse",
            "scaler": {"init_scale": 2.0**10, "growth_interval": 2}, "poison": [1.0, 1.0, math.inf, 1.0]}
    want = expected(ctx, training_run, spec, "cpu")
    compare_run(sub.run(training_run, spec, ctx.device), want, spec,
                scenario=f"train_step on {ctx.device}, MLP 4-8-1 plus a head that forward never uses, SGD momentum 0.9, init_scale 1024")


@check("a skipped step leaves parameters and Adam's state untouched", devices=("cpu", "cuda"))
def overflow_changes_nothing(sub, ctx):
    spec = {"seed": 0, "model": "mlp", "optimizer": ("adam", {"lr": 1e-2}), "loss": "mse",
            "scaler": {"init_scale": 2.0**10, "growth_interval": 3}, "poison": [1.0, 1.0, math.inf, math.nan, 1.0, 1.0]}
    want = expected(ctx, training_run, spec, "cpu")
    compare_run(sub.run(training_run, spec, ctx.device), want, spec,
                scenario=f"train_step on {ctx.device}, MLP 4-8-1 float32, Adam lr 1e-2, init_scale 1024, growth_interval 3",
)


CLIP_CASES = [
    ([[0.3, 0.4]], 1.0, "true gradient (0.3, 0.4), norm 0.5 <= max_grad_norm 1: no clipping"),
    ([[3.0, 4.0]], 1.0, "true gradient (3, 4), norm 5 > max_grad_norm 1: clipped to norm 1"),
    ([[3.0, 4.0]], None, "true gradient (3, 4), max_grad_norm None: no clipping"),
]


@check("clipping sees the unscaled gradients", devices=("cpu", "cuda"))
def clip_after_unscale(sub, ctx):
    for x, max_norm, text in CLIP_CASES:
        spec = {"seed": 0, "model": "linear", "weight": [[1.0, -1.0]], "optimizer": ("sgd", {"lr": 1.0}), "loss": "sum",
                "x": x, "steps": 1, "scaler": {"init_scale": 2.0**12}, "max_grad_norm": max_norm}
        want = expected(ctx, training_run, spec, "cpu")
        norm = math.hypot(*x[0])
        analytic = [1.0 - x[0][0] * min(1.0, (max_norm or math.inf) / norm), -1.0 - x[0][1] * min(1.0, (max_norm or math.inf) / norm)]
        if not torch.allclose(want["params"][0][0], torch.tensor([analytic])):
            raise GraderDefect(f"reference clipping disagrees with the analytic update ({text})")
        compare_run(sub.run(training_run, spec, ctx.device), want, spec,
                    scenario=f"train_step on {ctx.device}, Linear(2, 1) weight (1, -1), loss sum(w . x), SGD lr 1, scale 4096, {text}",
                    hints={"params": "clip after unscale_: max_grad_norm is a bound on the TRUE gradient norm, and the scaled"
                                     " gradients are 4096 times larger."})


@check("tiny float16 gradients survive thanks to the scale", devices=("cpu", "cuda"))
def tiny_half_gradients(sub, ctx):
    x = [[1.0, 0.5, 2.0, 0.25]]
    for init_scale, text in [(2.0**16, "scale 2**16: the scaled gradient 2**-11 * x fits float16"),
                             (1.0, "scale 1: the gradient 2**-27 * x underflows to 0 in float16, so nothing moves")]:
        spec = {"seed": 0, "model": "linear", "weight": [[0.5, 0.5, 0.5, 0.5]], "optimizer": ("sgd", {"lr": 2.0**20}),
                "loss": "half_compute", "x": x, "steps": 1, "scaler": {"init_scale": init_scale, "growth_interval": 100}}
        want = expected(ctx, training_run, spec, "cpu")
        moved = init_scale > 1
        analytic = torch.tensor([[0.5 - 2.0**-7 * v if moved else 0.5 for v in x[0]]])
        if not torch.equal(want["params"][0][0], analytic):
            raise GraderDefect(f"reference float16 update disagrees with the analytic one ({text})")
        compare_run(sub.run(training_run, spec, ctx.device), want, spec,
                    scenario=f"train_step on {ctx.device}, float32 Linear(4, 1) computing in float16, true gradient 2**-27 * x"
                             f" (about 7e-9), SGD lr 2**20, {text}",
                    hints={"params": "multiply the loss by the scale before backward, so the float16 gradients are large enough"
                                     " to exist; then divide them by the scale exactly once before the step."})


@check("a float16 model backs off until its steps succeed", devices=("cpu", "cuda"))
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
            why = ("The scale did go down, below the 2**13 at which this model's scaled gradients fit float16, and still"
                   " every step overflowed: is an inf from an earlier step left in p.grad? Zero the grads at the start of each step.")
        else:
            why = ("Each overflow must lower the scale (scaler.update(found_inf=True)) until the scaled gradients fit float16,"
                   " here from 2**13 on.")
        fail(f"{scenario}: no step succeeded in 8 steps (train_step returned {got['stepped']}, scales"
             f" {[_fmt_scale(s) for s in scales]}). {why}")
    compare_run(got, want, spec, scenario=scenario,
                hints={"params": "with a float16 model the grads are float16: unscale them in place and step only when all are finite."})


def _random_poison(seed, n):
    generator = torch.Generator().manual_seed(seed)
    u = torch.rand(n, generator=generator).tolist()
    return [math.inf if v < 0.15 else math.nan if v < 0.25 else 1.0 for v in u]


@check("50 steps with random overflows match torch.amp.GradScaler", devices=("cpu", "cuda"))
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
        want = expected(ctx, training_run, spec, "cpu")
        compare_run(sub.run(training_run, spec, ctx.device), want, spec, scenario=f"train_step on {ctx.device}, {text}",
                    rtol=LONG_RUN_TOL[0], atol=LONG_RUN_TOL[1])

