"""Grader for `lora`: LoRALinear, a low-rank adapter around a frozen nn.Linear, and merge().

Modules cannot cross the sandbox boundary, so every check runs a scenario below on the learner's module: it builds the
base nn.Linear from given weights, wraps it, and hands back plain observations. A's initial values are free, so every
check that compares numbers first sets A and B to given values (settled in the prompt); only the init check looks at the
module's own. Expectations are base(x) + (alpha / r) x A^T B^T in float64; the reference's gradients are verified with
torch.autograd.gradcheck, and its training run is the expectation for the learner's.
"""

import re
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from mlprep.grading import (Call, GraderDefect, Snapshot, assert_close, assert_equal, assert_keeps_precision, assert_returns_like, assert_shape, check,
                            control_value, dtype_name, explained, fail, fail_if_changed, literal, mistake_hint, on_input, origin_device, same_values, scenario,
                            shrink_on_failure, tolerance_for)
from mlprep.grading.attention import f64, normal, small_values

DEVICES = ("cpu", "cuda")
KEY = {"weight": "W", "bias": "b"}  # how the scenarios name the base's parameters

# torch.optim imports torch._dynamo on first use (about 2 s): pay that while the sandbox starts.
torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.0)


# -- Cases: the base's weights, r, alpha, the adapters' values and an input, as one dict -----------
def _case(W, b, r, alpha, A, B, x, dtype=torch.float64):
    t = partial(torch.tensor, dtype=dtype)
    return {"W": t(W), "b": None if b is None else t(b), "r": r, "alpha": alpha, "A": t(A), "B": t(B), "x": t(x)}


def _random_case(rng, n_in, n_out, r, alpha, x_shape, dtype=torch.float64, bias=True, zero_B=False):
    draw = lambda *shape: normal(rng, shape, dtype=dtype, per=4)  # multiples of 1/4: exact in every dtype, short when shown
    return {"W": draw(n_out, n_in), "b": draw(n_out) if bias else None, "r": r, "alpha": alpha, "A": draw(r, n_in),
            "B": torch.zeros(n_out, r, dtype=dtype) if zero_B else draw(n_out, r), "x": draw(*x_shape, n_in)}


# in = 3, out = 2, r = 2, alpha = 4 (scale 2): exact numbers, shown in full when a check fails.
TINY = dict(W=[[0.5, -1.0, 0.25], [1.5, 0.75, -0.5]], b=[0.25, -0.75], r=2, alpha=4, A=[[1.0, -0.5, 0.25], [0.5, 1.5, -1.0]],
            B=[[0.5, -1.0], [1.25, 0.25]], x=[[1.0, 2.0, -1.0], [0.5, -1.5, 2.0]])
# A square layer (in = out = 2), where a transposed update B^T A^T... fits the weight and only the numbers tell.
SQUARE = dict(W=[[0.5, -1.0], [1.5, 0.75]], b=[0.25, -0.75], r=1, alpha=3, A=[[1.0, -0.5]], B=[[0.5], [2.0]], x=[[1.0, 2.0], [-0.5, 1.5]])


def _shapes(case):
    out_f, in_f = case["W"].shape
    return in_f, out_f


def _describe(case, device):
    in_f, out_f = _shapes(case)
    bias = "" if case["b"] is not None else ", bias=False"
    return (f"{dtype_name(case['W'].dtype)} base nn.Linear({in_f}, {out_f}{bias}), r = {case['r']}, alpha = {case['alpha']!r},"
            f" x of shape {tuple(case['x'].shape)}, {device}")


def _adapted(case, scale=None):
    """base(x) + scale x A^T B^T in float64 (scale alpha / r unless given)."""
    W, b, A, B, x = f64(*(case[k] for k in ("W", "b", "A", "B", "x")))
    return F.linear(x, W, b) + (case["alpha"] / case["r"] if scale is None else scale) * ((x @ A.T) @ B.T)


def _merged_weight(case, scale=None):
    W, A, B = f64(case["W"], case["A"], case["B"])
    return W + (case["alpha"] / case["r"] if scale is None else scale) * (B @ A)


# -- Scenarios (run in the sandbox on the learner's module) and their inputs as learner code -------
def _build(module, case):
    W, b = case["W"], case["b"]
    base = nn.Linear(W.shape[1], W.shape[0], bias=b is not None, dtype=W.dtype, device=W.device)
    with torch.no_grad():
        base.weight.copy_(W)
        if b is not None:
            base.bias.copy_(b)
    torch.manual_seed(0)
    return base, module.LoRALinear(base, case["r"], case["alpha"])


def _meta(p):
    if not isinstance(p, torch.Tensor):
        return {"type": type(p).__name__}
    return {"type": "Parameter" if isinstance(p, nn.Parameter) else type(p).__name__, "shape": list(p.shape), "dtype": dtype_name(p.dtype),
            "device": str(p.device), "requires_grad": bool(p.requires_grad)}


def _adapters(lora, base, case):
    """{"A": (its name, the tensor), "B": ...}: lora.A and lora.B as the contract names them, else the module's own
    parameters of the adapters' shapes (r, in) and (out, r), so that a misnamed pair fails the naming check alone;
    (None, None) where there is none."""
    base_ids = {id(p) for p in base.parameters()}
    found = {}
    for name in ("A", "B"):
        if isinstance(getattr(lora, name, None), torch.Tensor):
            found[name] = (name, getattr(lora, name))
            continue
        taken = [p for _, p in found.values()]
        shaped = [(n, p) for n, p in lora.named_parameters() if id(p) not in base_ids and list(p.shape) == list(case[name].shape)
                  and not any(p is t for t in taken)]
        named = [(n, p) for n, p in shaped if re.search(rf"(^|[._]){name}($|[._])", n)]
        found[name] = (named or shaped or [(None, None)])[0]
    return found


def _set_adapters(adapters, case):
    """Sets the adapters to the case's values; returns their metadata when that cannot be done (the judge says why)."""
    metas = {name: _meta(p) for name, (_, p) in adapters.items()}
    if any(meta.get("shape") != list(case[name].shape) for name, meta in metas.items()):
        return metas
    with torch.no_grad():
        for name, (_, p) in adapters.items():
            p.copy_(case[name])
    return None


def _code(case, *lines, set_adapters=True, x=True):
    """The case as learner code (the base built, LoRALinear after torch.manual_seed(0), A and B set, x), then `lines`."""
    W, b = case["W"], case["b"]
    device = origin_device(W)
    where = f', device="{device}"' if device != "cpu" else ""
    setup = [f"base = torch.nn.Linear({W.shape[1]}, {W.shape[0]}{'' if b is not None else ', bias=False'}, dtype=torch.{dtype_name(W.dtype)}{where})",
             "with torch.no_grad():", f"    base.weight.copy_({literal(W)})"]
    if b is not None:
        setup.append(f"    base.bias.copy_({literal(b)})")
    setup += ["torch.manual_seed(0)", f"lora = LoRALinear(base, r={case['r']}, alpha={case['alpha']!r})"]
    if set_adapters:
        setup += ["with torch.no_grad():", f"    lora.A.copy_({literal(case['A'])})", f"    lora.B.copy_({literal(case['B'])})"]
    return Call.code("\n".join(setup + ([f"x = {literal(case['x'])}"] if x else []) + list(lines)))


SHOW_CONSTRUCT = {
    "names": "[name for name, p in lora.named_parameters() if p.requires_grad], lora.A, lora.B  # the adapters, named A and B",
    "adapters": "lora.A, lora.B  # B must be zeros, A random",
    "dtype": "(lora.A.dtype, lora.A.device), (lora.B.dtype, lora.B.device)  # the base's dtype and device",
    "trainable": "[(name, p.shape) for name, p in lora.named_parameters() if p.requires_grad], base.weight.requires_grad",
}


@scenario(repro=lambda interface, case, show: _code(case, SHOW_CONSTRUCT[show], set_adapters=False, x=False))
def lora_construct(module, case, show):
    """Observations right after construction: A and B (metadata and values), the base's requires_grad
    flags, and the trainable parameters (names, sizes, whether they are exactly A and B)."""
    base, lora = _build(module, case)
    adapters = _adapters(lora, base, case)
    seen = {name: _meta(p) for name, (_, p) in adapters.items()}
    seen["names"] = {name: found for name, (found, _) in adapters.items()}
    for name, (_, p) in adapters.items():
        if isinstance(p, torch.Tensor):
            seen[name + "_value"] = p.detach().cpu().clone()
    seen["base_requires_grad"] = {name: bool(p.requires_grad) for name, p in base.named_parameters()}
    trainable = [(name, p) for name, p in lora.named_parameters() if p.requires_grad]
    seen["trainable"] = [[name, list(p.shape)] for name, p in trainable]
    seen["trainable_count"] = sum(p.numel() for _, p in trainable)
    seen["trainable_are_A_B"] = sorted(id(p) for _, p in trainable) == sorted(id(p) for _, p in adapters.values())
    return seen


@scenario(repro=lambda interface, case, set_adapters: _code(case, "lora(x)", set_adapters=set_adapters))
def lora_forward(module, case, set_adapters):
    """lora(x), after setting A and B to the case's values when `set_adapters` (else at the module's own init), and
    whether the call changed x in place."""
    base, lora = _build(module, case)
    if set_adapters and (problem := _set_adapters(_adapters(lora, base, case), case)) is not None:
        return {"adapters": problem}
    before = Snapshot(x=case["x"])
    return {"out": lora(case["x"]).detach(), "changed": before.changed()}


def _train_code(case, y, steps, lr):
    return _code(case,
                 f"y = {literal(y)}",
                 f"optimizer = torch.optim.SGD(lora.parameters(), lr={lr!r}, momentum=0.9)",
                 f"for step in range({steps}):",
                 "    optimizer.zero_grad()",
                 "    ((lora(x) - y) ** 2).mean().backward()",
                 "    optimizer.step()",
                 "base.weight, base.bias, lora.A, lora.B")


@scenario(repro=lambda interface, case, y, steps, lr: _train_code(case, y, steps, lr))
def lora_train(module, case, y, steps, lr):
    """SGD with momentum over lora.parameters() on the mean squared error; after each step: the loss
    before it, the base's weight and bias, A and B."""
    base, lora = _build(module, case)
    adapters = _adapters(lora, base, case)
    if (problem := _set_adapters(adapters, case)) is not None:
        return {"adapters": problem}
    A, B = (p for _, p in adapters.values())
    optimizer = torch.optim.SGD(lora.parameters(), lr=lr, momentum=0.9)
    record = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((lora(case["x"]) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        record.append({"loss": loss.detach().cpu().clone(), "W": base.weight.detach().cpu().clone(),
                       "b": None if base.bias is None else base.bias.detach().cpu().clone(),
                       "A": A.detach().cpu().clone(), "B": B.detach().cpu().clone()})
    return {"steps": record}


SHOW_MERGE = {
    "layer": "merged = lora.merge()\ntype(merged), merged.weight.dtype, merged.weight.device, merged.weight, merged.bias",
    "output": "merged = lora.merge()\nmerged(x), lora(x)  # equal",
    "base": "before = lora(x)\nmerged = lora.merge()\nbase.weight, base.bias, lora(x) - before  # the base as built, zeros",
    "shared": ("merged = lora.merge()\nbefore = lora(x)\nwith torch.no_grad():\n    merged.weight.add_(1.0)\n    merged.bias.add_(1.0)\n"
               "base.weight, base.bias, lora(x) - before  # unchanged by what is done to the merged layer"),
}


@scenario(repro=lambda interface, case, show: _code(case, SHOW_MERGE[show]))
def lora_merge(module, case, show):
    """merge() and what it did: the layer it returned (type, sizes, weights, its output), the module's
    output before and after, the base afterwards, and the base and output after the merged layer is
    changed in place (shared memory shows there)."""
    base, lora = _build(module, case)
    if (problem := _set_adapters(_adapters(lora, base, case), case)) is not None:
        return {"adapters": problem}
    x = case["x"]
    seen = {"before": lora(x).detach().clone()}
    merged = lora.merge()
    seen["type"] = type(merged).__name__
    seen["is_linear"] = isinstance(merged, nn.Linear)
    seen["is_base"] = merged is base
    if not seen["is_linear"]:
        return seen
    seen["weight"] = _meta(merged.weight)
    seen["weight_value"] = merged.weight.detach().cpu().clone()
    seen["bias_value"] = None if merged.bias is None else merged.bias.detach().cpu().clone()
    same_kind = merged.weight.dtype == x.dtype and merged.weight.device == x.device
    seen["merged_out"] = merged(x).detach() if same_kind and tuple(merged.weight.shape) == tuple(base.weight.shape) else None
    seen["after_merge"] = {"W": base.weight.detach().cpu().clone(), "b": None if base.bias is None else base.bias.detach().cpu().clone(),
                           "out": lora(x).detach().clone()}
    with torch.no_grad():
        for p in merged.parameters():
            p.add_(1.0)
    seen["after_poke"] = {"W": base.weight.detach().cpu().clone(), "b": None if base.bias is None else base.bias.detach().cpu().clone(),
                          "out": lora(x).detach().clone()}
    return seen


def _grad_code(case):
    return _code(case,
                 "x.requires_grad_()",
                 "out = lora(x)",
                 "w = torch.randn(out.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(out.device)  # fixed weights",
                 "(out * w).sum().backward()",
                 "lora.A.grad, lora.B.grad, x.grad")


@scenario(repro=lambda interface, case: _grad_code(case))
def lora_grads(module, case):
    """The gradients of sum(lora(x) * fixed random weights) w.r.t. A, B and x."""
    base, lora = _build(module, case)
    adapters = _adapters(lora, base, case)
    if (problem := _set_adapters(adapters, case)) is not None:
        return {"adapters": problem}
    x = case["x"].detach().clone().requires_grad_(True)
    out = lora(x)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(out.device, out.dtype)
    (out * weights).sum().backward()
    return {"grads": [None if t.grad is None else t.grad.detach().clone() for t in (*(p for _, p in adapters.values()), x)]}


# -- Judging observations --------------------------------------------------------------------------
def _adapters_ok(seen, case, scenario):
    """Fails when lora.A / lora.B are not nn.Parameters of shapes (r, in) and (out, r)."""
    metas = seen.get("adapters") if "adapters" in seen else {n: seen[n] for n in ("A", "B") if n in seen}
    in_f, out_f = _shapes(case)
    for name, shape in (("A", [case["r"], in_f]), ("B", [out_f, case["r"]])):
        meta = (metas or {}).get(name)
        if meta is None:
            continue
        if meta["type"] != "Parameter":
            got = "missing" if meta["type"] == "NoneType" else f"a {meta['type']}, not an nn.Parameter"
            fail(f"lora.{name} ({scenario}): expected an nn.Parameter of shape {tuple(shape)}, got {got}; store the adapters"
                 f" as self.A = nn.Parameter(...) (r, in) and self.B = nn.Parameter(...) (out, r), so that the optimizer sees them")
        if meta["shape"] != shape:
            fail(f"lora.{name} ({scenario}): expected shape {tuple(shape)}, got {tuple(meta['shape'])}; A is (r, in) and B is"
                 " (out, r), so that B @ A has the weight's shape (out, in)")


def _scale_hint(got, case, what):
    """The known mistake whose output `got` equals, from the scale it implies; "" when none does."""
    r, alpha = case["r"], case["alpha"]
    tol = 10 * tolerance_for(case["x"].dtype)[0]
    scales = {"alpha instead of alpha / r": alpha, "1: no scale at all": 1.0, "r / alpha: upside down": r / alpha,
              "alpha / sqrt(r), the rsLoRA variant": alpha / r ** 0.5, "(alpha / r) twice": (alpha / r) ** 2}
    known = mistake_hint(got, ((words, partial(_adapted, case, scale=scale)) for words, scale in scales.items()), want=_adapted(case), rtol=tol,
                         atol=tol, first=True, say=f"Your {what} is what scaling the update by {{}} gives; the contract's scale is alpha / r = {alpha / r:g}.")
    if not known and same_values(got, F.linear(*f64(case["x"], case["W"], case["b"])), rtol=tol, atol=tol):
        return f"Your {what} is the base's output alone: the update (alpha / r) x A^T B^T is missing."
    return known


def _output(sub, case, scenario):
    """lora(x) with the case's A and B: a tensor on x's device, of shape (..., out), at least as precise as x."""
    seen = sub.run(lora_forward, case, True)
    _adapters_ok(seen, case, scenario)
    got = seen["out"]
    fail_if_changed(seen["changed"], who="lora(x)", where=scenario, fix="compute new tensors instead of writing into x")
    assert_returns_like(got, case["x"], what="lora(x)", scenario=scenario, device=sub.device)
    assert_shape(got, (*case["x"].shape[:-1], case["W"].shape[0]), what="lora(x)", scenario=scenario)
    assert_keeps_precision(got, case["x"].dtype, what="lora(x)", scenario=scenario)
    return got


def _forward_ok(sub, case, scenario):
    got = _output(sub, case, scenario)
    with explained(partial(_scale_hint, got, case, "output")):
        assert_close(got, _adapted(case), what="lora(x) = base(x) + (alpha / r) x A^T B^T", scenario=scenario, dtype=case["x"].dtype)


# -- Checks ----------------------------------------------------------------------------------------
@check("at init: B is zero, A is random, and lora(x) equals base(x)", devices=DEVICES)
def at_init(sub, ctx):
    cases = [_case(**TINY), _random_case(ctx.rng(1), 8, 5, 4, 16, (2, 3), dtype=torch.float32)]  # small to large
    for case in cases:
        scenario = _describe(case, ctx.device)
        seen = sub.run(lora_construct, case, "adapters")
        _adapters_ok(seen, case, scenario)
        assert_equal(seen["B_value"], torch.zeros(case["B"].shape, dtype=seen["B_value"].dtype), what="lora.B right after construction",
                     scenario=scenario, hint="B starts at zero, so that B @ A = 0 and the adapted layer starts exactly as the base"
                     " (A is the random one).")
        if not bool((seen["A_value"] != 0).any()):
            fail(f"lora.A right after construction ({scenario}): all zeros. With B = 0 as well, both gradients are zero"
                 " (dL/dA is B^T times something, dL/dB is something times x A^T) and the adapter never trains: start A"
                 " random (e.g. nn.init.kaiming_uniform_(A, a=math.sqrt(5)), or torch.randn scaled down) and only B at zero.")
        got = sub.run(lora_forward, case, False)["out"]
        assert_close(got, F.linear(*f64(case["x"], case["W"], case["b"])), what="lora(x) at init (must equal base(x))",
                     scenario=scenario, dtype=case["x"].dtype)


@check("A and B take the base's dtype and device, and so does the output", devices=DEVICES)
def follows_base(sub, ctx):
    for dtype in (torch.float64, torch.float32):
        case = _case(**TINY, dtype=dtype)
        scenario = _describe(case, ctx.device)
        seen = sub.run(lora_construct, case, "dtype")
        _adapters_ok(seen, case, scenario)
        for name in ("A", "B"):
            meta = seen[name]
            if meta["dtype"] != dtype_name(case["W"].dtype) or meta["device"].split(":")[0] != sub.device:
                fail(f"lora.{name} ({scenario}): expected {dtype_name(case['W'].dtype)} on {sub.device} like the base's weight, got"
                     f" {meta['dtype']} on {meta['device']}; create the adapters with dtype=base.weight.dtype, device=base.weight.device"
                     " (torch.empty / torch.zeros default to float32 on the CPU)")
        _output(sub, case, scenario)


@check("only A and B train: the base is frozen, r (in + out) trainable numbers", devices=DEVICES)
def only_adapters_train(sub, ctx):
    rng = ctx.rng(2)
    for case in (_case(**TINY), _random_case(rng, 6, 4, 2, 4, (3,)), _random_case(rng, 5, 3, 3, 6, (2,), bias=False)):
        scenario = _describe(case, ctx.device)
        in_f, out_f = _shapes(case)
        seen = sub.run(lora_construct, case, "trainable")
        _adapters_ok(seen, case, scenario)
        for name, trains in seen["base_requires_grad"].items():
            if trains:
                fail(f"base.{name}.requires_grad ({scenario}): expected False, got True. LoRA freezes the base: call"
                     f" requires_grad_(False) on every parameter of the base ({', '.join(seen['base_requires_grad'])}), on the layer"
                     " you were given (not a copy), so that no optimizer over lora.parameters() can move it.")
        want = case["r"] * (in_f + out_f)
        listed = ", ".join(f"{name} {tuple(shape)}" for name, shape in seen["trainable"]) or "none"
        if seen["trainable_count"] != want or not seen["trainable_are_A_B"]:
            fail(f"trainable parameters of lora ({scenario}): expected exactly A ({case['r']}, {in_f}) and B ({out_f}, {case['r']}),"
                 f" r (in + out) = {want} numbers; got {seen['trainable_count']} in: {listed}.", expected=want, got=seen["trainable_count"])


ADAPTER_NAMES = ("The adapters are two nn.Parameter attributes named A and B: A of shape (r, in), B of shape (out, r), both with the base"
                 " weight's dtype and device.")


@check("the adapters are nn.Parameters named A and B", devices=DEVICES, edge=ADAPTER_NAMES)
def adapters_named(sub, ctx):
    for case in (_case(**TINY), _random_case(ctx.rng(6), 5, 3, 2, 4, (2,), bias=False)):
        scenario = _describe(case, ctx.device)
        seen = sub.run(lora_construct, case, "names")
        for name, found in seen["names"].items():
            if found is not None and found != name:
                shape = tuple(case[name].shape)
                fail(f"lora.{name} ({scenario}): the adapter of shape {shape} is lora.{found}; the contract names it {name}, so store it as"
                     f" self.{name} = nn.Parameter(...) (the grader reads and sets lora.{name}; every other check found it by its shape)",
                     what=f"lora.{name}", got=found, first_index="")
        _adapters_ok(seen, case, scenario)


def _forward_cases():
    """Hypothesis strategy for shrinking: small layers with small integer weights and inputs."""
    from hypothesis import strategies as st

    def of_sizes(sizes):
        n_in, n_out, r, alpha, rows, bias = sizes
        return st.tuples(st.just(sizes), small_values(n_out * n_in, n_out, r * n_in, n_out * r, rows * n_in))

    sizes = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.sampled_from([2, 1, 3, 0.5]), st.integers(1, 2), st.booleans())
    return sizes.flatmap(of_sizes)


def _verify_forward(sub, ctx, drawn):
    (n_in, n_out, r, alpha, rows, bias), (W, b, A, B, x) = drawn
    t = partial(torch.tensor, dtype=torch.float64)
    case = {"W": t(W).reshape(n_out, n_in), "b": t(b) if bias else None, "r": r, "alpha": alpha, "A": t(A).reshape(r, n_in),
            "B": t(B).reshape(n_out, r), "x": t(x).reshape(rows, n_in)}
    _forward_ok(sub, case, _describe(case, ctx.device))


@check("forward = base(x) + (alpha / r) x A^T B^T, for x of any leading shape", devices=DEVICES)
def forward_formula(sub, ctx):
    rng = ctx.rng(3)
    cases = [  # small to large; alpha != r, so that alpha and alpha / r differ
        _case(**TINY),
        _random_case(rng, 6, 4, 4, 8, (2, 3)),  # x (2, 3, in): a batch of sequences
        _random_case(rng, 7, 5, 3, 1.5, (4,), bias=False),
        _random_case(rng, 16, 8, 8, 32, (3, 5), dtype=torch.float32),
    ]
    with shrink_on_failure(sub, _forward_cases, lambda drawn: _verify_forward(sub, ctx, drawn)):
        for case in cases:
            _forward_ok(sub, case, _describe(case, ctx.device))


@check("optimizer steps move A and B only; the base stays exactly as it was", devices=DEVICES)
def training_steps(sub, ctx):
    rng = ctx.rng(4)
    case = _random_case(rng, 4, 3, 2, 4, (5,), zero_B=True)  # B = 0, as at init
    y = normal(rng, (5, 3), per=4)
    steps, lr = 3, 0.1
    scenario = _describe(case, ctx.device) + f", {steps} steps of SGD(lora.parameters(), lr={lr}, momentum=0.9) on the MSE"
    got = sub.run(lora_train, case, y, steps, lr)
    want = ctx.run_reference(lora_train, case, y, steps, lr)
    with on_input(_train_code(case, y, steps, lr)):
        _adapters_ok(got, case, scenario)
        for step, (got_step, want_step) in enumerate(zip(got["steps"], want["steps"]), start=1):
            for name, start in (("weight", case["W"]), ("bias", case["b"])):
                with explained(partial(_base_moved_hint, sub, case, name)):
                    assert_equal(got_step[KEY[name]], start, what=f"base.{name} after step {step}", scenario=scenario)
            for name in ("A", "B"):
                with explained(partial(_first_step_hint, got_step["B"], want_step["B"], case) if (step, name) == (1, "B") else (lambda: "")):
                    assert_close(got_step[name], want_step[name], what=f"lora.{name} after step {step}", scenario=scenario, dtype=torch.float64)


def _base_moved_hint(sub, case, name):
    """Control: the base's requires_grad flags right after construction say why training moved it."""
    flags = control_value(sub, lora_construct, case, "trainable", read=lambda seen: seen["base_requires_grad"])
    if flags is None:
        return ""
    if flags.get(name):
        return (f"The optimizer moved the base's {name}: it still requires grad. Freeze every base parameter (requires_grad_(False)); only"
                " A and B train.")
    return (f"The base's {name} changed during training although it does not require grad, so no optimizer step moved it: your code writes"
            f" into it in place (an add_ or copy_ on base.{name}, or its .data).")


def _first_step_hint(got, want, case):
    """From B = 0 the first step of B is -lr * dL/dB, and dL/dB is proportional to the scale: a multiple of
    the true step shows the scale used."""
    got, want = f64(got, want)
    ratio = float((got * want).sum() / (want * want).sum())
    if abs(ratio - 1) > 1e-6 and torch.allclose(got, ratio * want, rtol=1e-9, atol=1e-12):
        return (f"Your first step of B is {ratio:.6g} times the true one; dL/dB = (alpha / r) (dL/dy)^T x A^T is proportional"
                f" to the scale, so yours is {ratio * case['alpha'] / case['r']:.6g}, not alpha / r = {case['alpha'] / case['r']:g}.")
    return ""


def _merge_hint(got_weight, case):
    tol = 10 * tolerance_for(case["W"].dtype)[0]
    W, A, B = f64(case["W"], case["A"], case["B"])
    s = case["alpha"] / case["r"]
    known = {"base.weight + (alpha / r) (B @ A)^T: the update transposed. nn.Linear stores its weight as (out, in), the layout of B @ A, so add it as"
             " it is": W + s * (B @ A).T if W.shape[0] == W.shape[1] else None,
             "base.weight + B @ A, without the scale alpha / r": _merged_weight(case, 1.0),
             "base.weight + alpha (B @ A): the scale is alpha / r": _merged_weight(case, case["alpha"]),
             "base.weight + (alpha / r)^2 (B @ A): the scale applied twice": _merged_weight(case, s * s),
             "base.weight alone: the update is missing": W}
    return mistake_hint(got_weight, known, want=_merged_weight(case), rtol=tol, atol=tol, first=True, say="Your merged weight is {}.")


@check("merge() returns a new nn.Linear equal to the adapted forward", devices=DEVICES)
def merge_equals_forward(sub, ctx):
    rng = ctx.rng(5)
    cases = [_case(**SQUARE), _case(**TINY), _random_case(rng, 5, 3, 2, 6, (4,)),  # small to large
             _random_case(rng, 4, 6, 3, 1.5, (2, 3), bias=False), _random_case(rng, 8, 4, 4, 8, (3,), dtype=torch.float32)]
    for case in cases:
        scenario = _describe(case, ctx.device)
        seen = sub.run(lora_merge, case, "layer")
        _adapters_ok(seen, case, scenario)
        if not seen["is_linear"]:
            fail(f"lora.merge() ({scenario}): expected an nn.Linear, got a {seen['type']}; build a new nn.Linear(in, out) and copy"
                 " the merged weight and the base's bias into it")
        meta, dtype = seen["weight"], dtype_name(case["W"].dtype)
        if meta["dtype"] != dtype or meta["device"].split(":")[0] != sub.device:
            fail(f"lora.merge().weight ({scenario}): expected {dtype} on {sub.device} like the base, got {meta['dtype']} on"
                 f" {meta['device']}; create the layer with nn.Linear(..., dtype=base.weight.dtype, device=base.weight.device)")
        with explained(partial(_merge_hint, seen["weight_value"], case)):
            assert_close(seen["weight_value"], _merged_weight(case), what="lora.merge().weight = base.weight + (alpha / r) B @ A",
                         scenario=scenario, dtype=case["W"].dtype)
        if case["b"] is None:
            if seen["bias_value"] is not None:
                fail(f"lora.merge().bias ({scenario}): the base has no bias, so the merged layer should have none (bias=False); got one")
        elif seen["bias_value"] is None:
            fail(f"lora.merge().bias ({scenario}): the base has a bias, the merged layer has none; create it with a bias and copy base.bias")
        else:
            assert_close(seen["bias_value"], case["b"], what="lora.merge().bias (must equal base.bias)", scenario=scenario,
                         hint="Copy the base's bias into the new layer: nn.Linear starts with a random one.")
        with on_input(_code(case, SHOW_MERGE["output"])):
            assert_close(seen["merged_out"], _adapted(case), what="lora.merge()(x) (must equal lora(x))", scenario=scenario,
                         dtype=case["x"].dtype)


@check("merge() leaves the module and the base unchanged, and shares no memory with them", devices=DEVICES)
def merge_leaves_module(sub, ctx):
    for case in (_case(**SQUARE), _case(**TINY)):
        scenario = _describe(case, ctx.device)
        seen = sub.run(lora_merge, case, "base")
        _adapters_ok(seen, case, scenario)
        if seen.get("is_base"):
            fail(f"lora.merge() ({scenario}): returned the base layer itself; return a new nn.Linear and leave the base as it was")
        if not seen["is_linear"]:
            continue  # the check above reports what merge() returned
        after = seen["after_merge"]
        base_moved = ("Your base.weight is now base.weight + (alpha / r) B @ A: merge() added the update into the base in place (as"
                      " PEFT's merge_and_unload does); the contract asks for a new layer and an untouched base.")
        added = torch.allclose(f64(after["W"]), _merged_weight(case), rtol=1e-6, atol=1e-6)
        assert_equal(after["W"], case["W"], what="base.weight after lora.merge()", scenario=scenario, hint=base_moved if added else "")
        if case["b"] is not None:
            assert_equal(after["b"], case["b"], what="base.bias after lora.merge()", scenario=scenario)
        assert_close(after["out"], seen["before"], what="lora(x) after lora.merge() (must equal lora(x) before it)", scenario=scenario)
        poked = seen["after_poke"]
        with on_input(_code(case, SHOW_MERGE["shared"])):
            for name, start in (("weight", case["W"]), ("bias", case["b"])):
                if start is not None:
                    assert_equal(poked[KEY[name]], start, what=f"base.{name} after adding 1 to the merged layer's {name} in place",
                                 scenario=scenario, hint=f"The merged layer's {name} shares memory with base.{name}: copy the values"
                                 f" into the new layer's own parameters (merged.{name}.copy_(...) under torch.no_grad()) instead of"
                                 " assigning the base's tensor.")
            assert_close(poked["out"], seen["before"], what="lora(x) after changing the merged layer in place", scenario=scenario)


@check("gradients w.r.t. A, B and x match autograd.gradcheck in float64", devices=DEVICES)
def gradients(sub, ctx):
    rng = ctx.rng(7)
    names = ("lora.A", "lora.B", "x")
    for case in (_case(**TINY), _random_case(rng, 5, 4, 3, 6, (2, 3)), _random_case(rng, 6, 3, 2, 1.5, (4,), bias=False)):
        scenario = _describe(case, ctx.device)
        _verify_reference_gradient(ctx, case, scenario)
        _forward_ok(sub, case, scenario)  # the values first: when they are wrong, so is every gradient
        got = sub.run(lora_grads, case)
        want = ctx.run_reference(lora_grads, case)
        with on_input(_grad_code(case)):
            _adapters_ok(got, case, scenario)
            for name, got_grad, want_grad in zip(names, got["grads"], want["grads"]):
                if got_grad is None:
                    fail(f"d(output)/d({name}) ({scenario}): no gradient reached it; compute the output from it with torch operations")
                assert_close(got_grad, want_grad, what=f"d(sum(lora(x) * w))/d({name})", scenario=scenario, dtype=torch.float64)


def _verify_reference_gradient(ctx, case, scenario):
    base = nn.Linear(*_shapes(case), bias=case["b"] is not None, dtype=torch.float64)
    with torch.no_grad():
        base.weight.copy_(case["W"])
        if case["b"] is not None:
            base.bias.copy_(case["b"])
    lora = ctx.reference.LoRALinear(base, case["r"], case["alpha"])

    def forward(A, B, x):
        return torch.func.functional_call(lora, {"A": A, "B": B}, (x,))

    inputs = [f64(case[k]).clone().requires_grad_(True) for k in ("A", "B", "x")]
    if not torch.autograd.gradcheck(forward, inputs, raise_exception=False):
        raise GraderDefect(f"the reference LoRALinear's gradient fails torch.autograd.gradcheck ({scenario})")
