"""Checks for `grad-accumulation`. Every case is code (`case_code`): it builds the model, the micro-batches and a
RecordingSGD (torch.optim.SGD that copies every p.grad when step() is called), runs in the sandbox before the
learner's accumulate_step and here for the numbers, and is the failing input shown. The expected gradient,
sum_i (n_i / N) g_i from each micro-batch's own float64 gradient, clipped as clip_grad_norm_ does, must agree with
one concatenated batch and with the reference's run, or the grader reports its own defect."""

import threading

import torch

from mlprep.grading import (Call, GraderDefect, assert_close, check, expect_raises, expect_record, explained, fail, literal, mistake_hint,
                            on_input, outcome, run_code, scenario)

DEVICES = ("cpu", "cuda")
LR = 0.5  # SGD's learning rate in every scenario
STALE = 100.0  # what p.grad holds on entry where a scenario leaves stale gradients
CLIP_TOL = {"rtol": 1e-5, "atol": 1e-8}  # clip_grad_norm_ divides by norm + 1e-6: other correct clipping differs by ~1e-6 relative
FLOAT32_TOL = {"rtol": 1e-5, "atol": 1e-6}

# torch.optim imports torch._dynamo on first use (about 2 s): pay that while the sandbox starts,
# not inside the time limit of the first check.
torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.0)

RECORDER_CODE = [
    "class RecordingSGD(torch.optim.SGD):  # records the gradients optimizer.step() sees",
    "    def __init__(self, params, lr):",
    "        super().__init__(params, lr=lr)",
    "        self.seen = []",
    "    def step(self, closure=None):",
    "        self.seen.append([None if p.grad is None else p.grad.clone() for p in self.param_groups[0]['params']])",
    "        return super().step(closure)",
]
UNUSED_HEAD_CODE = [
    "class MlpWithUnusedHead(torch.nn.Module):",
    "    def __init__(self):",
    "        super().__init__()",
    "        self.body = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))",
    "        self.unused_head = torch.nn.Linear(5, 4)  # forward never uses it: its parameters get no gradient",
    "    def forward(self, x):",
    "        return self.body(x)",
]
LOSS_CODE = {
    "weighted_mean": "lambda model, batch: (model(batch[0])[:, 0] * batch[1]).mean()",
    "mse": "lambda model, batch: torch.nn.functional.mse_loss(model(batch[0]), batch[1])",
    "ce": "lambda model, batch: torch.nn.functional.cross_entropy(model(batch[0]), batch[1])",
}
LOSS_TEXT = {"weighted_mean": "loss mean(y * model(x))", "mse": "MSE loss (mean)", "ce": "cross-entropy loss (mean), 2 classes"}
SHOW = {
    "seen": "optimizer.seen  # the gradients at each optimizer.step() call, in model.parameters() order",
    "steps": "len(optimizer.seen)  # how many times optimizer.step() ran",
    "after": "[p.grad for p in model.parameters()]  # after accumulate_step returned",
    "params": "list(model.parameters())  # after accumulate_step returned",
    "inputs": "micro_batches  # after accumulate_step returned",
}


# ---------------------------------------------------------------------------------------------
# A case as code: the model (random numbers from private generators on the CPU, the same on every
# device and thread), its micro-batches, the loss and the optimizer
# ---------------------------------------------------------------------------------------------
def build_code(spec, device):
    dtype = spec.get("dtype", "float64")
    cast = ".double()" if dtype == "float64" else ""
    lines = list(RECORDER_CODE)
    if spec["model"] == "linear":
        weight = spec["weight"]
        lines += [f"model = torch.nn.Linear({len(weight[0])}, {len(weight)}, bias=False){cast}", "with torch.no_grad():",
                  f"    model.weight.copy_(torch.tensor({weight!r}))"]
    else:
        if spec["model"] == "mlp_unused":
            lines += UNUSED_HEAD_CODE + [f"model = MlpWithUnusedHead(){cast}"]
        else:
            lines.append(f"model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)){cast}")
        lines += [f"generator = torch.Generator().manual_seed({spec['seed']})", "with torch.no_grad():", "    for p in model.parameters():",
                  f"        p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.{dtype}) * 0.5)"]
    lines.append(f"loss_fn = {LOSS_CODE[spec['loss']]}")
    if "sizes" in spec:
        sizes, n = spec["sizes"], sum(spec["sizes"])
        y = (f"torch.randn({n}, 2, generator=generator, dtype=torch.{dtype})" if spec["loss"] == "mse"
             else f"torch.randint(0, 2, ({n},), generator=generator)")
        lines += [f"generator = torch.Generator().manual_seed({spec['seed'] + 1})",
                  f"X = torch.randn({n}, 3, generator=generator, dtype=torch.{dtype})", f"Y = {y}",
                  f"micro_batches = list(zip(torch.split(X, {sizes}), torch.split(Y, {sizes})))"]
    else:
        lines.append("micro_batches = [")
        for x, y in spec["batches"]:
            lines.append(f"    ({literal(torch.tensor(x, dtype=getattr(torch, dtype)))}, {literal(torch.tensor(y, dtype=getattr(torch, dtype)))}),")
        lines.append("]")
    if device != "cpu":
        lines += [f'model = model.to("{device}")', f'micro_batches = [(x.to("{device}"), y.to("{device}")) for x, y in micro_batches]']
    if spec.get("stale"):
        lines += ["for p in model.parameters():", f"    p.grad = torch.full_like(p, {STALE!r})  # stale gradients from earlier work"]
    return "\n".join(lines + [f"optimizer = RecordingSGD(model.parameters(), lr={LR!r})"])


def case_code(spec, device, show="seen"):
    clip = "" if spec.get("max_grad_norm") is None else f", max_grad_norm={spec['max_grad_norm']!r}"
    return Call.code(f"{build_code(spec, device)}\naccumulate_step(model, loss_fn, micro_batches, optimizer{clip})\n{SHOW[show]}")


def _sizes(spec):
    return spec["sizes"] if "sizes" in spec else [len(x) for x, _ in spec["batches"]]


def _cpu(t):
    return None if t is None else t.detach().cpu().clone()


@scenario(repro=lambda interface, spec, device: case_code(spec, device))
def accumulation_run(module, spec, device):
    """Scenario: the case's code, one accumulate_step; what the optimizer saw at each step(), and p.grad, the
    parameters and the inputs afterwards."""
    case = run_code(build_code(spec, device), module)
    model, micro_batches, optimizer = case["model"], case["micro_batches"], case["optimizer"]
    given, changed = list(micro_batches), _changes(micro_batches)
    kwargs = {} if spec.get("max_grad_norm") is None else {"max_grad_norm": spec["max_grad_norm"]}
    module.accumulate_step(model, case["loss_fn"], given, optimizer, **kwargs)
    return {"names": [name for name, _ in model.named_parameters()], "seen": [[_cpu(g) for g in step] for step in optimizer.seen],
            "grads_after": [_cpu(p.grad) for p in model.parameters()], "params_after": [_cpu(p) for p in model.parameters()],
            "inputs_changed": changed(given)}


def _changes(micro_batches):
    """Sandbox side: a function saying how the list handed to accumulate_step (a copy of `micro_batches`) and its tensors changed."""
    originals = [(x.clone(), y.clone()) for x, y in micro_batches]

    def changed(given):
        found = [] if len(given) == len(originals) else [f"the list now holds {len(given)} micro-batches instead of {len(originals)}"]
        for i, ((x, y), (x0, y0), (x1, y1)) in enumerate(zip(micro_batches, originals, given)):
            if x1 is not x or y1 is not y:
                found.append(f"micro_batches[{i}] was replaced")
            if not torch.equal(x, x0) or not torch.equal(y, y0):
                found.append(f"the values of micro_batches[{i}] changed")
        return found
    return changed


@scenario(repro=lambda interface, spec, device: case_code(spec, device, "inputs"))
def changed_inputs(module, spec, device):
    """Scenario: the case's accumulate_step, whatever it returns or raises; how its micro_batches changed."""
    case = run_code(build_code(spec, device), module)
    given, changed = list(case["micro_batches"]), _changes(case["micro_batches"])
    kwargs = {} if spec.get("max_grad_norm") is None else {"max_grad_norm": spec["max_grad_norm"]}
    outcome(lambda: module.accumulate_step(case["model"], case["loss_fn"], given, case["optimizer"], **kwargs))
    return changed(given)


def empty_code(device):
    to = "" if device == "cpu" else f'.to("{device}")'
    return "\n".join([*RECORDER_CODE, f"model = torch.nn.Linear(2, 1, bias=False).double(){to}", f"optimizer = RecordingSGD(model.parameters(), lr={LR!r})"])


@scenario(repro=lambda interface, device: Call.code(f"{empty_code(device)}\naccumulate_step(model, {LOSS_CODE['weighted_mean']}, [], optimizer)"
                                                    "  # expected: ValueError"))
def empty_run(module, device):
    """Scenario: accumulate_step with an empty list of micro-batches; what it raised and how many steps it took."""
    case = run_code(empty_code(device), module)
    record = outcome(lambda: module.accumulate_step(case["model"], eval(LOSS_CODE["weighted_mean"]), [], case["optimizer"]))
    return {**record, "steps": len(case["optimizer"].seen)}


# ---------------------------------------------------------------------------------------------
# Expected values (here, float64 on the CPU) and the known mistakes, from each micro-batch's gradient
# ---------------------------------------------------------------------------------------------
def build_float64(spec):
    """The case's model and micro-batches on the CPU, built in the spec's dtype (so the numbers are the learner's),
    then widened to float64; no stale gradients."""
    case = run_code(build_code({**spec, "stale": False}, "cpu"))
    micro_batches = [tuple(t.double() if t.is_floating_point() else t for t in batch) for batch in case["micro_batches"]]
    return case["model"].double(), micro_batches, case["loss_fn"]


def micro_gradients(spec):
    """Each micro-batch's gradient of its own mean loss (None where a parameter gets none), in float64."""
    model, micro_batches, loss_fn = build_float64(spec)
    params = list(model.parameters())
    return [[None if g is None else g.detach() for g in torch.autograd.grad(loss_fn(model, batch), params, allow_unused=True)]
            for batch in micro_batches]


def combine(grads, weights):
    """sum_i weights[i] * grads[i], per parameter; None for a parameter no micro-batch reached."""
    out = []
    for per_param in zip(*grads):
        present = [(w, g) for w, g in zip(weights, per_param) if g is not None]
        out.append(sum(w * g for w, g in present) if present else None)
    return out


def clip(grads, max_norm):
    """What torch.nn.utils.clip_grad_norm_ does: the total 2-norm over the parameters that have a gradient,
    scaled by min(1, max_norm / (norm + 1e-6))."""
    present = [g for g in grads if g is not None]
    if not present:
        return list(grads)
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in present]))
    coef = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    return [None if g is None else g * coef for g in grads]


def scale(grads, factor):
    return [None if g is None else g * factor for g in grads]


def expected_step_grads(spec):
    sizes = _sizes(spec)
    accumulated = combine(micro_gradients(spec), [n / sum(sizes) for n in sizes])
    return accumulated if spec.get("max_grad_norm") is None else clip(accumulated, spec["max_grad_norm"])


def big_batch_step_grads(spec):
    """The torch-native way, where memory allows: one concatenated batch, one backward, clip_grad_norm_."""
    model, micro_batches, loss_fn = build_float64(spec)
    loss_fn(model, (torch.cat([x for x, _ in micro_batches]), torch.cat([y for _, y in micro_batches]))).backward()
    if spec.get("max_grad_norm") is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), spec["max_grad_norm"])
    return [_cpu(p.grad) for p in model.parameters()]


def mistaken_step_grads(spec):
    """{what went wrong: the gradients step() would see} for the known mistakes of this spec."""
    grads, sizes = micro_gradients(spec), _sizes(spec)
    total, k = sum(sizes), len(sizes)
    weights = [n / total for n in sizes]
    max_norm = spec.get("max_grad_norm")

    def finish(g):
        return g if max_norm is None else clip(g, max_norm)

    found = {
        "the micro-batches' mean losses were summed (backward of each loss as it is): weight each by n_i / N, its share of the rows":
            finish(combine(grads, [1.0] * k)),
        "every micro-batch got the same weight 1/k (loss / len(micro_batches)), but their sizes differ: weight each micro-batch's"
        " mean loss by n_i / N, its share of the rows": finish(combine(grads, [1.0 / k] * k)),
        "the weights were applied twice (n_i / N and again / len(micro_batches))": finish(combine(grads, [w / k for w in weights])),
        "only the last micro-batch's gradient reached the step: the gradients are zeroed inside the loop, so each backward wipes"
        " out the ones before; zero them once, before the loop": finish(combine(grads[-1:], weights[-1:])),
        "only the last micro-batch's gradient, weighted 1/k, reached the step: the gradients are zeroed inside the loop; zero them"
        " once, before the loop": finish(combine(grads[-1:], [1.0 / k])),
        "only the last micro-batch's gradient reached the step, unweighted: the gradients are zeroed inside the loop; zero them once,"
        " before the loop": finish(grads[-1]),
    }
    if spec.get("stale"):
        params = list(build_float64(spec)[0].parameters())
        stale_kept = [torch.full(p.shape, STALE, dtype=torch.float64) if g is None else g + STALE
                      for g, p in zip(combine(grads, weights), params)]
        found[f"the {STALE:g} each p.grad held on entry was added in: discard the gradients present on entry (optimizer.zero_grad()"
              " before the first backward)"] = finish(stale_kept)
    if max_norm is not None:
        running = None
        for g, w in zip(grads, weights):
            running = scale(g, w) if running is None else [a if b is None else b * w if a is None else a + b * w for a, b in zip(running, g)]
            running = clip(running, max_norm)
        found["the gradient was clipped after every micro-batch's backward (the running sum) instead of once, on the accumulated"
              " gradient"] = running
        found["each micro-batch's gradient was clipped before being added: clip once, on the accumulated gradient"] = combine(
            [clip(g, max_norm) for g in grads], weights)
        found["the sum of n_i * g_i was clipped and only then divided by N, so a clipped gradient has norm max_grad_norm / N:"
              " divide first, then clip"] = scale(clip(combine(grads, [float(n) for n in sizes]), max_norm), 1.0 / total)
        found["each parameter was clipped on its own norm; max_grad_norm bounds the total norm over all parameters together"] = [
            None if g is None else clip([g], max_norm)[0] for g in combine(grads, weights)]
        found["max_grad_norm was ignored: the gradient was not clipped"] = combine(grads, weights)
        found["every entry was clamped to +-max_grad_norm (clip_grad_value_); max_grad_norm bounds the total 2-norm: rescale the whole"
              " gradient (clip_grad_norm_)"] = [None if g is None else g.clamp(-max_norm, max_norm) for g in combine(grads, weights)]
    return found


def _same_grads(a, b):
    """The same gradients, a parameter without one (None) counting as zeros."""
    def zero(g):
        return g is None or not bool(torch.as_tensor(g).any())

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if zero(x) and zero(y):
            continue
        if x is None or y is None or tuple(x.shape) != tuple(y.shape):
            return False
        if not torch.allclose(torch.as_tensor(x).double(), y.double(), rtol=1e-4, atol=1e-7):
            return False
    return True


def grads_hint(got, want, spec, say="Your gradients at optimizer.step() are exactly those where {}."):
    """The known mistake whose gradients the learner's equal (and the right answer does not), or ""."""
    return mistake_hint(got, mistaken_step_grads(spec), say=say, first=True, same=_same_grads, is_right=lambda grads: _same_grads(want, grads))


_expected_cache = {}
_expected_lock = threading.Lock()


def expected(ctx, spec):
    """(step grads, parameters after) for a spec: the arithmetic above, checked against the reference's run and the
    big-batch run. Cached: every graded file asks for the same specs."""
    key = repr(sorted(spec.items()))
    with _expected_lock:
        if key not in _expected_cache:
            want = expected_step_grads(spec)
            if not _same_grads(big_batch_step_grads(spec), want):
                raise GraderDefect(f"expected gradients disagree with one concatenated batch and clip_grad_norm_ for {spec!r:.300}")
            params0 = [p.detach() for p in build_float64(spec)[0].parameters()]
            params_after = [p if g is None else p - LR * g for p, g in zip(params0, want)]
            ref = ctx.run_reference(accumulation_run, spec, "cpu")
            if len(ref["seen"]) != 1 or not _same_grads(ref["seen"][0], want) or not _same_grads(ref["params_after"], params_after):
                raise GraderDefect(f"the reference's run disagrees with the expected step for {spec!r:.300}")
            _expected_cache[key] = (want, params_after)
    return _expected_cache[key]


# ---------------------------------------------------------------------------------------------
# Judging one run
# ---------------------------------------------------------------------------------------------
def describe(spec, device):
    if spec["model"] == "linear":
        model = f"Linear({len(spec['weight'][0])}, 1) without bias, weight {spec['weight'][0]}"
    else:
        model = "MLP 3-5-2" + (" plus a head that forward never uses" if spec["model"] == "mlp_unused" else "")
    parts = [f"{model}, {spec.get('dtype', 'float64')} on {device}", LOSS_TEXT[spec["loss"]], f"micro-batch sizes {_sizes(spec)}"]
    if spec.get("stale"):
        parts.append(f"p.grad = {STALE:g} on entry")
    parts.append("no max_grad_norm" if spec.get("max_grad_norm") is None else f"max_grad_norm={spec['max_grad_norm']:g}")
    return ", ".join(parts)


def _tolerance(spec):
    if spec.get("dtype") == "float32":
        return FLOAT32_TOL
    return CLIP_TOL if spec.get("max_grad_norm") is not None else {}


def _nonzero(g):
    return g is not None and bool(torch.as_tensor(g).any())


def _max_abs(g):
    return float(torch.as_tensor(g).double().abs().max())


def judge_steps(got, spec, device, scenario):
    expect_record(got, ["seen"], what="accumulate_step", scenario=scenario)
    k, steps = len(_sizes(spec)), len(got["seen"])
    with on_input(case_code(spec, device, "steps")):
        if steps == 0:
            fail(f"accumulate_step ({scenario}): optimizer.step() was never called; take exactly one optimizer step, after the last"
                 " micro-batch's backward", steps=0)
        if steps != 1:
            each = " (once per micro-batch: the step belongs after the loop, once the gradients of all of them are in)" if steps == k else ""
            fail(f"accumulate_step ({scenario}): optimizer.step() was called {steps} times for {k} micro-batches; call it exactly once,"
                 f" after the last micro-batch's backward{each}", steps=steps)


def judge_step_grads(got, spec, device, scenario, want):
    seen = got["seen"][0]
    with on_input(case_code(spec, device, "seen")), explained(lambda: grads_hint(seen, want, spec)):
        if len(seen) != len(want):
            fail(f"accumulate_step ({scenario}): the optimizer holds {len(want)} parameters, the record {len(seen)}")
        for name, g, w in zip(got["names"], seen, want):
            what = f"{name}.grad at optimizer.step()"
            if w is None:
                if _nonzero(g):
                    stale = (f" It holds the {STALE:g} it had on entry: discard the gradients present on entry (optimizer.zero_grad()"
                             " before the first backward)." if spec.get("stale") and torch.all(g == STALE) else "")
                    fail(f"{what} ({scenario}): this parameter takes no part in loss_fn, so its gradient must be None (or zeros),"
                         f" got values up to {_max_abs(g):.6g}.{stale}")
                continue
            if g is None:
                fail(f"{what} ({scenario}): expected the accumulated gradient, got None")
            assert_close(g, w, what=what, scenario=scenario, **_tolerance(spec))


def judge_params(got, spec, device, scenario, want, want_grads):
    with on_input(case_code(spec, device, "params")), explained(lambda: _params_hint(got["params_after"], want_grads, spec)):
        for name, p, w in zip(got["names"], got["params_after"], want):
            assert_close(p, w, what=f"{name} after accumulate_step (one SGD step, lr {LR:g}, from the accumulated gradient)",
                         scenario=scenario, **_tolerance(spec))


def _params_hint(got_params, want_grads, spec):
    """One SGD step was taken: the gradient it used is (params before - params after) / lr."""
    before = [p.detach() for p in build_float64(spec)[0].parameters()]
    try:
        used = [(b - torch.as_tensor(a).double()) / LR for b, a in zip(before, got_params)]
    except (TypeError, RuntimeError):
        return ""
    return grads_hint(used, want_grads, spec, say="The step you took used the gradients where {}.")


def run_and_judge(sub, ctx, spec, parts=("steps", "grads", "params")):
    scenario = describe(spec, ctx.device)
    want_grads, want_params = expected(ctx, spec)  # a grader defect shows before any verdict on the learner
    got = sub.run(accumulation_run, spec, ctx.device)
    judge_steps(got, spec, ctx.device, scenario)
    if "grads" in parts:
        judge_step_grads(got, spec, ctx.device, scenario, want_grads)
    if "params" in parts:
        judge_params(got, spec, ctx.device, scenario, want_params, want_grads)
    if "after" in parts:
        with on_input(case_code(spec, ctx.device, "after")):
            for name, g in zip(got["names"], got["grads_after"]):
                if _nonzero(g):
                    fail(f"{name}.grad after accumulate_step returned ({scenario}): expected None or zeros, got values up to {_max_abs(g):.6g};"
                         " clear the gradients after the step (optimizer.zero_grad()), so the next step does not add to them")


# ---------------------------------------------------------------------------------------------
# Hand-built cases: Linear(2, 1) without bias and loss mean(y * w.x), whose gradient is mean(y_i x_i)
# ---------------------------------------------------------------------------------------------
def linear(batches, **extra):
    return {"model": "linear", "weight": [[0.5, -1.0]], "loss": "weighted_mean", "batches": batches, **extra}


EQUAL = linear([([[1.0, 2.0], [3.0, 0.0]], [1.0, -1.0]), ([[-1.0, 0.0], [1.0, 2.0]], [0.5, 2.0])])  # mean gradient (-0.125, 1.5)
UNEVEN = linear([([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [1.0, 1.0, 1.0]), ([[4.0, 4.0]], [1.0])])  # (1.5, 1.5); equal weights give (7/3, 7/3)
SINGLE = linear([([[1.0, 2.0], [3.0, 0.0], [-1.0, 1.0], [0.5, 0.5]], [1.0, -1.0, 2.0, 1.0])])
CLIP_BINDS = linear([([[4.0, 0.0]], [1.0]), ([[0.0, 3.0]], [1.0])], max_grad_norm=1.0)  # mean (2, 1.5), norm 2.5: clipped to (0.8, 0.6)
CLIP_IDLE = linear([([[4.0, 0.0]], [1.0]), ([[-4.0, 1.0]], [1.0])], max_grad_norm=1.0)  # mean (0, 0.5): not clipped, each micro-batch's would be
NO_CLIP = linear([([[4.0, 0.0]], [1.0]), ([[0.0, 3.0]], [1.0])])  # norm 2.5 and no max_grad_norm: not clipped


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
EQUAL_SPECS = (EQUAL, SINGLE, {"model": "mlp", "seed": 0, "loss": "ce", "sizes": [4, 4, 4]}, {"model": "mlp", "seed": 1, "loss": "mse", "sizes": [2, 2, 2, 2]})
UNEVEN_SPECS = (UNEVEN, {"model": "mlp", "seed": 2, "loss": "ce", "sizes": [4, 4, 2]}, {"model": "mlp", "seed": 3, "loss": "mse", "sizes": [5, 3, 1]})
ONE_STEP_SPECS = (linear(EQUAL["batches"] + UNEVEN["batches"]), {"model": "mlp", "seed": 4, "loss": "ce", "sizes": [3, 3, 3]})
STALE_SPECS = ({**EQUAL, "stale": True}, {"model": "mlp_unused", "seed": 5, "loss": "ce", "sizes": [4, 2], "stale": True})
CLIP_SPECS = (CLIP_BINDS, CLIP_IDLE, NO_CLIP, {"model": "mlp", "seed": 6, "loss": "ce", "sizes": [4, 4, 2], "max_grad_norm": 0.1},
              {"model": "mlp", "seed": 7, "loss": "mse", "sizes": [3, 3], "max_grad_norm": 0.5})
UNUSED_SPECS = ({"model": "mlp_unused", "seed": 8, "loss": "mse", "sizes": [3, 3]},
                {"model": "mlp_unused", "seed": 9, "loss": "ce", "sizes": [4, 4, 1], "max_grad_norm": 0.1})
CLEARED_SPECS = (EQUAL, {"model": "mlp_unused", "seed": 10, "loss": "ce", "sizes": [4, 4], "max_grad_norm": 1.0})
FLOAT32_SPECS = ({"model": "mlp", "seed": 11, "loss": "ce", "sizes": [4, 4, 2], "dtype": "float32"},
                 {"model": "mlp_unused", "seed": 12, "loss": "mse", "sizes": [6, 6, 3], "dtype": "float32", "max_grad_norm": 0.2})


@check("equal micro-batches: the step sees one big batch's mean gradient", devices=DEVICES)
def equal_micro_batches(sub, ctx):
    for spec in EQUAL_SPECS:
        run_and_judge(sub, ctx, spec)


@check("an uneven last micro-batch is weighted by its size", devices=DEVICES)
def uneven_micro_batches(sub, ctx):
    for spec in UNEVEN_SPECS:
        run_and_judge(sub, ctx, spec)


@check("exactly one optimizer.step, after the last micro-batch", devices=DEVICES)
def one_step(sub, ctx):
    for spec in ONE_STEP_SPECS:
        run_and_judge(sub, ctx, spec, parts=("steps", "params"))


@check("gradients present on entry are discarded", devices=DEVICES)
def stale_gradients(sub, ctx):
    for spec in STALE_SPECS:
        run_and_judge(sub, ctx, spec)


@check("max_grad_norm clips the accumulated gradient once (total norm, as clip_grad_norm_)", devices=DEVICES)
def clipping(sub, ctx):
    for spec in CLIP_SPECS:
        run_and_judge(sub, ctx, spec)


@check("parameters that never get a gradient (with and without clipping)", devices=DEVICES)
def unused_parameters(sub, ctx):
    for spec in UNUSED_SPECS:
        run_and_judge(sub, ctx, spec)


@check("every p.grad is None or zero on return", devices=DEVICES)
def cleared_after(sub, ctx):
    for spec in CLEARED_SPECS:
        run_and_judge(sub, ctx, spec, parts=("steps", "after"))


@check("a float32 model (rtol 1e-5)", devices=DEVICES)
def float32_model(sub, ctx):
    for spec in FLOAT32_SPECS:
        run_and_judge(sub, ctx, spec)


def fail_if_modified(changed, spec, device):
    if changed:
        fail(f"accumulate_step ({describe(spec, device)}) modified its input micro_batches: {'; '.join(changed)}."
             " The caller's micro-batches must be left as they were: read them, do not write into them or the list",
             failing_input=case_code(spec, device, "inputs"))


@check("micro_batches are left unchanged", devices=DEVICES)
def inputs_unchanged(sub, ctx):
    spec = {"model": "mlp", "seed": 13, "loss": "ce", "sizes": [3, 3, 2]}
    got = expect_record(sub.run(accumulation_run, spec, ctx.device), ["inputs_changed"], what="accumulate_step", scenario=describe(spec, ctx.device))
    fail_if_modified(got["inputs_changed"], spec, ctx.device)
    every = EQUAL_SPECS + UNEVEN_SPECS + ONE_STEP_SPECS + STALE_SPECS + CLIP_SPECS + UNUSED_SPECS + CLEARED_SPECS + FLOAT32_SPECS
    for spec in {repr(spec): spec for spec in every}.values():  # every other check's cases, whatever accumulate_step does on them
        fail_if_modified(sub.run(changed_inputs, spec, ctx.device), spec, ctx.device)


@check("an empty micro_batches list raises ValueError", devices=DEVICES,
       edge="An empty list raises `ValueError` before anything is stepped (settled here: there is no batch to take a step from).")
def empty_list(sub, ctx):
    what = f"accumulate_step(model, loss_fn, [], optimizer) on {ctx.device}"
    got = expect_raises(sub.run(empty_run, ctx.device), what=what, returned_hint="there is no batch to take a step from: check for an empty"
                        " list first and raise ValueError", raised_hint="raise ValueError for an empty list (there is no batch to take a step from)")
    if got["steps"]:
        fail(f"{what} raised ValueError, but only after calling optimizer.step() {got['steps']} time(s); check for an empty list before"
             " anything else", steps=got["steps"])
