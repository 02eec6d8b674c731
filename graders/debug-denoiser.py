"""Checks for `debug-denoiser`: the fixed training script, judged by what it does, never by its text.

Every training check is one scenario: the grader's own data (the stub's recipe, normalised with the training
inputs' statistics by the grader, so that a wrong normalise() shows in its own check only), a seeded
build_model(), the learner's train(). Back come the trained model's outputs (eval mode), whose MSE the judge
computes in float64 against its own targets, and the evidence for the hints: how far the parameters moved, the
output's distance to its noisy input, what p.grad holds at the end against one fresh gradient, and
model.training at every forward pass a backward went through.

Bounds, measured over ten data and model seeds on the CPU for the reference, the alternatives and every bug
variant: the validation MSE after 25 epochs is 0.048-0.060 for correct code and 0.168 or more for every bug of
the loss or of the zero_grad / backward / step order; one batch is overfit to 0.0007-0.0043 in 300 steps, to
0.186 or more with such a bug.
"""

import math
from functools import partial

import torch
import torch.nn.functional as F

try:
    from torch.optim.optimizer import register_optimizer_step_pre_hook  # a hook on every optimizer's step (torch >= 2.0)
except ImportError:
    register_optimizer_step_pre_hook = None

from mlprep.grading import (Call, CheckFailed, Snapshot, as_float, assert_close, assert_returns_like, check, expect_record, expect_sequence, explained, fail,
                            fail_if_changed, inputs_unchanged, largest_change, mistake_hint, parameters_of, plural, same_values, scenario)

DEVICES = ("cpu", "cuda")
LENGTH = 32
VAL_BOUND = 0.1  # validation MSE after the seeded run (correct code: about 0.05; the noisy input itself: about 0.25)
OVERFIT_BOUND = 0.02  # MSE on the one batch after OVERFIT_STEPS steps (correct code: about 0.001)
OVERFIT_STEPS = 300
RUN = {"n_train": 1024, "n_val": 256, "seed": 11, "epochs": 25, "lr": 2e-3, "batch_size": 32}
OVERFIT = {"n": 32, "seed": 21, "epochs": OVERFIT_STEPS, "lr": 2e-3, "batch_size": 32}
SMALL = {"n_train": 96, "n_val": 32, "seed": 31, "epochs": 3, "lr": 2e-3, "batch_size": 32}  # 3 steps per epoch
HISTORY_RTOL, HISTORY_ATOL = 1e-4, 1e-6  # another summation order (batched evaluation) of the same float32 MSE
NORMALISE_RTOL, NORMALISE_ATOL = 1e-4, 1e-5
PILED_UP = 20.0  # p.grad at the end this many times one gradient's size: gradients were never cleared


def signals(n, seed):
    """The script's make_signals (the stub's recipe), on the CPU: (noisy, clean), float32 (n, 32)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(LENGTH, dtype=torch.float32) / LENGTH
    cycles = torch.randint(1, 4, (n, 2, 1), generator=g).float()
    phase = 2 * torch.pi * torch.rand(n, 2, 1, generator=g)
    amplitude = 0.5 + torch.rand(n, 2, 1, generator=g)
    clean = 2.0 + (amplitude * torch.sin(2 * torch.pi * cycles * t + phase)).sum(dim=1)
    noisy = clean + 0.6 * torch.randn(n, LENGTH, generator=g)
    return noisy, clean


def normalised(n_train, n_val, seed, device):
    """(x_train, y_train, x_val, y_val) on device, scaled by the training inputs' mean and std."""
    (noisy, clean), (noisy_val, clean_val) = signals(n_train, seed), signals(n_val, seed + 1)
    mean, std = noisy.mean(), noisy.std()
    return tuple(((t - mean) / std).to(device) for t in (noisy, clean, noisy_val, clean_val))


# ---------------------------------------------------------------------------------------------
# The failing inputs as code (the learner's names, torch and numpy in scope)
# ---------------------------------------------------------------------------------------------
def _dev(device):
    return "" if device == "cpu" else f', device="{device}"'


def data_code(spec, device):
    n_train, n_val, seed = spec["n_train"], spec["n_val"], spec["seed"]
    return [f"noisy, clean = make_signals({n_train}, seed={seed}{_dev(device)})",
            f"noisy_val, clean_val = make_signals({n_val}, seed={seed + 1}{_dev(device)})",
            "mean, std = noisy.mean(), noisy.std()  # the training inputs' statistics",
            "data = tuple((t - mean) / std for t in (noisy, clean, noisy_val, clean_val))"]


def model_code(device):
    return ["torch.manual_seed(0)", "model = build_model()" + ("" if device == "cpu" else f'.to("{device}")')]


def train_call(spec, data="data"):
    return f"history = train(model, {data}, epochs={spec['epochs']}, lr={spec['lr']!r}, batch_size={spec['batch_size']}, seed=0)"


def run_code(spec, device, *lines, before=()):
    """A training scenario as code: the data, the seeded model, `before`, the train() call, then `lines`."""
    return Call.code("\n".join([*data_code(spec, device), *model_code(device), *before, train_call(spec), *lines]))


MEASURE = ["model.eval()", "with torch.no_grad():", "    val_mse = torch.nn.functional.mse_loss(model(data[2]), data[3]).item()",
           "val_mse  # the validation MSE against the clean targets, dropout off"]
MODE_HOOK = ["modes = []  # model.training at each forward pass that a backward() went through",
             "def record(module, inputs, out):",
             "    if out.requires_grad:",
             "        out.register_hook(lambda grad, training=module.training: modes.append(training))",
             "model.register_forward_hook(record)"]


# ---------------------------------------------------------------------------------------------
# Scenarios (in the sandbox on the learner's module; plain data back)
# ---------------------------------------------------------------------------------------------
def _model(module, device):
    torch.manual_seed(0)
    model = module.build_model()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"build_model() returned {type(model).__name__}, expected an nn.Module")
    return model.to(device)


def _train(module, model, data, spec, steps=None, **overrides):
    """The learner's train(); with a list `steps`, each optimizer.step() it makes is recorded there: whether the
    model's parameters held a gradient (a nonzero entry) at that moment."""
    settings = {"epochs": spec["epochs"], "lr": spec["lr"], "batch_size": spec["batch_size"], **overrides}
    ids = {id(p) for p in model.parameters()}

    def seen(optimizer, args, kwargs):
        params = [p for group in optimizer.param_groups for p in group["params"] if id(p) in ids]
        steps.append(any(p.grad is not None and bool(torch.count_nonzero(p.grad)) for p in params))

    handle = register_optimizer_step_pre_hook(seen) if steps is not None and register_optimizer_step_pre_hook is not None else None
    try:
        return module.train(model, data, seed=0, **settings)
    finally:
        if handle is not None:
            handle.remove()


def _eval_output(model, x):
    """model(x) with dropout off, on the CPU (the model's mode restored): the judge computes the MSE from it."""
    was = model.training
    model.eval()
    with torch.no_grad():
        out = model(x).detach().cpu()
    model.train(was)
    return out


def _eval_mse(model, x, y):
    return F.mse_loss(_eval_output(model, x), y.cpu()).item()


def _evidence(model, x, y, before, steps):
    """What a failed run shows: how far the parameters moved, the optimizer steps made and how many with a gradient,
    the output's distance to its noisy input, and p.grad's size at the end against one fresh gradient (eval mode)."""
    params = [p for p in model.parameters() if p.requires_grad]
    to_input, to_target = _eval_mse(model, x, x), _eval_mse(model, x, y)
    model.eval()
    left = [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p) for p in params]
    fresh = torch.autograd.grad(F.mse_loss(model(x), y), params, allow_unused=True)
    norm = lambda gs: math.sqrt(sum(float((g.double() ** 2).sum()) for g in gs if g is not None))
    return {"moved": largest_change(before, parameters_of(model)), "steps": len(steps), "steps_with_grad": sum(steps), "to_input": to_input,
            "to_target": to_target, "grad_left": norm(left), "grad_fresh": norm(fresh)}


@scenario(repro=lambda interface, spec, device: run_code(spec, device, *MEASURE))
def validation_run(module, spec, device):
    """Scenario: the seeded training run; the validation MSE of the trained model (eval mode) and the evidence."""
    data = normalised(spec["n_train"], spec["n_val"], spec["seed"], device)
    model = _model(module, device)
    before, steps = parameters_of(model), []
    _train(module, model, data, spec, steps)
    return {"val_out": _eval_output(model, data[2]), **_evidence(model, data[0], data[1], before, steps)}


def _overfit_code(spec, device):
    return Call.code("\n".join([
        f"noisy, clean = make_signals({spec['n']}, seed={spec['seed']}{_dev(device)})", "mean, std = noisy.mean(), noisy.std()",
        "x, y = (noisy - mean) / std, (clean - mean) / std  # one batch", *model_code(device), train_call(spec, data="(x, y, x, y)"),
        "model.eval()", "with torch.no_grad():", "    batch_mse = torch.nn.functional.mse_loss(model(x), y).item()",
        "batch_mse  # the MSE on the batch it was trained on, dropout off"]))


@scenario(repro=lambda interface, spec, device: _overfit_code(spec, device))
def overfit_run(module, spec, device):
    """Scenario: train on one batch (it is the validation split too); its MSE (eval mode) and the evidence."""
    x, y, _, _ = normalised(spec["n"], 1, spec["seed"], device)
    x, y = x.contiguous(), y.contiguous()
    model = _model(module, device)
    before, steps = parameters_of(model), []
    _train(module, model, (x, y, x.clone(), y.clone()), spec, steps)
    return {"batch_out": _eval_output(model, x), **_evidence(model, x, y, before, steps)}


MOVED_SHOW = "max((p.detach() - b).abs().max().item() for p, b in zip(model.parameters(), before))  # the largest change of any parameter"


@scenario(repro=lambda interface, spec, device: run_code({**spec, "epochs": 1}, device, MOVED_SHOW,
                                                         before=["before = [p.detach().clone() for p in model.parameters()]"]))
def one_epoch_run(module, spec, device):
    """Scenario: one epoch (3 steps); how far the parameters moved, the optimizer steps made and how many with a gradient."""
    data = normalised(spec["n_train"], spec["n_val"], spec["seed"], device)
    model = _model(module, device)
    before, steps = parameters_of(model), []
    _train(module, model, data, spec, steps, epochs=1)
    return {"moved": largest_change(before, parameters_of(model)), "steps": len(steps), "steps_with_grad": sum(steps)}


@scenario(repro=lambda interface, spec, device, handed_in_eval: run_code(
    spec, device, "modes  # True: train mode (dropout on)", before=MODE_HOOK + (["model.eval()  # as an earlier evaluate() leaves it"] if handed_in_eval else [])))
def mode_run(module, spec, device, handed_in_eval):
    """Scenario: model.training at every forward pass that a backward went through, in order."""
    data = normalised(spec["n_train"], spec["n_val"], spec["seed"], device)
    model = _model(module, device)
    modes = []

    def record(mod, inputs, out):
        if isinstance(out, torch.Tensor) and out.requires_grad:
            training = mod.training
            out.register_hook(lambda grad: modes.append(training))

    model.register_forward_hook(record)
    if handed_in_eval:
        model.eval()
    _train(module, model, data, spec)
    return modes


@scenario(repro=lambda interface, spec, device: run_code(spec, device, "history"))
def history_run(module, spec, device):
    """Scenario: train's history, and the trained model's MSE on each split (eval mode) for comparison."""
    data = normalised(spec["n_train"], spec["n_val"], spec["seed"], device)
    model = _model(module, device)
    history = _plain(_train(module, model, data, spec))
    found = {"history": history, "val_out": _eval_output(model, data[2]), "train_mse": _eval_mse(model, data[0], data[1]),
             "vs_noisy": _eval_mse(model, data[2], data[2])}
    model.train()  # for the evidence only: does evaluate() give the same value twice on this model?
    found["evaluate_twice"] = _plain([module.evaluate(model, data[2], data[3]) for _ in range(2)])
    return found


@scenario(repro=lambda interface, spec, device: run_code(spec, device, "evaluate(model, data[2], data[3])",
                                                         "[torch.equal(a, b) for a, b in zip(data, before)]  # each tensor as it was",
                                                         before=["before = [t.clone() for t in data]"]))
def data_kept(module, spec, device):
    """Scenario: which of the caller's tensors train() changed in place, then which of x_val, y_val evaluate() did."""
    data = normalised(spec["n_train"], spec["n_val"], spec["seed"], device)
    model = _model(module, device)
    kept = Snapshot(x_train=data[0], y_train=data[1], x_val=data[2], y_val=data[3])
    _train(module, model, data, spec)
    trained = kept.changed()
    kept = Snapshot(x_val=data[2], y_val=data[3])
    module.evaluate(model, data[2], data[3])
    return {"train": trained, "evaluate": kept.changed()}


def _plain(value):
    """The learner's history as plain data: tensors detached, on the CPU; lists and tuples as lists."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


EVAL_MODEL_CODE = ["g = torch.Generator().manual_seed(5)",
                   "model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(64, 32))",
                   "with torch.no_grad():",
                   "    for p in model.parameters():",
                   "        p.copy_(0.3 * torch.randn(p.shape, generator=g))"]


def eval_model(device):
    """The grader's own model with dropout (0.5): evaluate() must switch it off."""
    g = torch.Generator().manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(64, 32))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return model.to(device)


@scenario(repro=lambda interface, spec, device: Call.code("\n".join(
    EVAL_MODEL_CODE + ([f'model = model.to("{device}")'] if device != "cpu" else []) + data_code(spec, device)
    + ["evaluate(model, data[2], data[3]), evaluate(model, data[2], data[3])  # two calls"])))
def evaluate_twice(module, spec, device):
    """Scenario: evaluate() twice on the grader's dropout model, handed in train mode both times."""
    data = normalised(spec["n_train"], spec["n_val"], spec["seed"], device)
    model = eval_model(device)
    first = module.evaluate(model, data[2], data[3])
    model.train()
    return {"calls": [first, module.evaluate(model, data[2], data[3])]}


# ---------------------------------------------------------------------------------------------
# Judging
# ---------------------------------------------------------------------------------------------
def _mse(out, target, what):
    """The MSE of the model's output (returned by the scenario) against the grader's own targets, here, in float64."""
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(target.shape):
        fail(f"{what}: the model's output for inputs of shape {tuple(target.shape)} should have that shape too, got"
             f" {tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}")
    return float(((out.double() - target.double()) ** 2).mean())


def _unmoved_cause(got):
    """Why no parameter moved, as the optimizer steps the run made show it."""
    if not got.get("steps"):
        return "optimizer.step() was never called on this model's parameters: call it once per batch, after loss.backward()."
    if not got.get("steps_with_grad"):
        return (f"optimizer.step() ran {plural(got['steps'], 'time')}, every time with all gradients zero: it never saw a gradient. The order per step is"
                " zero_grad(), forward, loss, backward(), step(): a step() before backward() (or a zero_grad() between them) steps on zeros.")
    return (f"optimizer.step() ran with gradients ({got['steps_with_grad']} of {plural(got['steps'], 'step')}), yet no parameter moved: does the"
            " optimizer hold this model's parameters (model.parameters()), with a learning rate above 0?")


def _training_evidence(got):
    """(what the failed run shows, as the diagnosis compares it, or None; the hint it gives, or "")."""
    if got["moved"] == 0.0:
        return "the parameters never moved", f"No parameter changed at all during training: {_unmoved_cause(got)}"
    if got["to_input"] < 0.5 * got["to_target"]:
        return "the output copies the noisy input", (
            f"The trained model's output is close to its noisy input (MSE {got['to_input']:.3g} to the input, {got['to_target']:.3g} to the"
            " clean target): it learned to copy its input. Does the loss compare the output with the clean target y_train, not with the"
            " noisy input x_train?")
    if got["grad_fresh"] > 0 and got["grad_left"] > PILED_UP * got["grad_fresh"]:
        return None, (
            f"After training, p.grad held {got['grad_left'] / got['grad_fresh']:,.0f} times the size of one gradient on this data: the"
            " gradients piled up over the steps instead of being cleared. backward() adds into p.grad; call optimizer.zero_grad() before"
            " each backward().")
    return None, ""


def _fail_training(message, got, value, what):
    # A cause the evidence shows is what the diagnosis compares; otherwise the value itself (within 2%).
    shown, hint = _training_evidence(got)
    fail(f"{message} {hint}".strip(), what=what, got=shown or f"{value:.6g}", rtol=0.02, atol=0.0, first_index="")


@check("after the seeded training run the validation MSE is below 0.1", devices=DEVICES)
def validation_loss(sub, ctx):
    got = expect_record(sub.run(validation_run, RUN, ctx.device), ("val_out", "moved"), what="train()")
    _, _, x_val, y_val = normalised(RUN["n_train"], RUN["n_val"], RUN["seed"], "cpu")
    value, noisy_mse = _mse(got["val_out"], y_val, "build_model()"), _mse(x_val, y_val, "")
    if not value < VAL_BOUND:
        _fail_training(f"Validation MSE after train(model, data, epochs={RUN['epochs']}, lr={RUN['lr']:g}, batch_size={RUN['batch_size']},"
                       f" seed=0) on {RUN['n_train']} training and {RUN['n_val']} validation signals ({ctx.device}): {value:.4g}, measured by"
                       f" the grader in eval mode against the clean targets; the bound is {VAL_BOUND:g} (correct code reaches about 0.05;"
                       f" the noisy input itself scores {noisy_mse:.3g}).", got, value, "validation MSE after training")


@check("one batch of 32 signals can be overfit: MSE below 0.02 after 300 steps", devices=DEVICES)
def overfit_one_batch(sub, ctx):
    got = expect_record(sub.run(overfit_run, OVERFIT, ctx.device), ("batch_out", "moved"), what="train()")
    x, y, _, _ = normalised(OVERFIT["n"], 1, OVERFIT["seed"], "cpu")
    value, noisy_mse = _mse(got["batch_out"], y, "build_model()"), _mse(x, y, "")
    if not value < OVERFIT_BOUND:
        _fail_training(f"train() on one batch of {OVERFIT['n']} signals (training and validation split alike) for {OVERFIT['epochs']} epochs"
                       f" of one step ({ctx.device}): its MSE against the clean targets is {value:.4g} (eval mode), the bound is"
                       f" {OVERFIT_BOUND:g}; correct code memorises the batch to about 0.003 (the noisy input scores {noisy_mse:.3g})."
                       " A model that cannot fit one batch has a bug in the loop, not in the data or the model's size.", got, value,
                       "MSE on the overfit batch")


@check("every training step moves the parameters", devices=DEVICES)
def parameters_move(sub, ctx):
    got = expect_record(sub.run(one_epoch_run, SMALL, ctx.device), ("moved",), what="train()")
    if not got["moved"] > 0:
        steps = SMALL["n_train"] // SMALL["batch_size"]
        fail(f"train(model, data, epochs=1, batch_size={SMALL['batch_size']}) on {SMALL['n_train']} signals ({steps} steps, {ctx.device}) left"
             f" every parameter exactly as build_model() made it. {_unmoved_cause(got)}",
             what="largest parameter change in one epoch", got=f"{got['moved']:.6g}", first_index="")


def _judge_modes(modes, spec, device, handed_in_eval):
    steps_per_epoch = -(-spec["n_train"] // spec["batch_size"])
    total = steps_per_epoch * spec["epochs"]
    where = (f"train(model, data, epochs={spec['epochs']}, batch_size={spec['batch_size']}) on {spec['n_train']} signals"
             f" ({total} steps, {device}" + (", the model handed in eval mode)" if handed_in_eval else ")"))
    if not isinstance(modes, list):
        fail(f"{where}: the scenario's record came back malformed ({type(modes).__name__})")
    if not modes:
        fail(f"{where}: no forward pass of the model was backpropagated through; the grader watches model(x) with a forward hook,"
             " so train by calling model(xb) and loss.backward()", what="training steps seen", got="0", first_index="")
    in_eval = [i + 1 for i, training in enumerate(modes) if not training]
    if not in_eval:
        return
    first = in_eval[0]
    span = f"step {first}" if len(in_eval) == 1 else f"steps {first}-{in_eval[-1]}" if in_eval == list(range(first, in_eval[-1] + 1)) else f"{len(in_eval)} steps"
    if first == 1 and handed_in_eval:
        why = (" train() never switched the model to train mode: a model can come in eval mode (after an evaluate()), so"
               " call model.train() at the start of every epoch.")
    elif first == 1:
        why = (" The model came in train mode, and already the first step ran in eval mode: train() switches it to eval mode before"
               " training (an evaluate() or a model.eval() before the batch loop?).")
    elif (first - 1) % steps_per_epoch == 0:
        why = (f" Eval mode starts at the first step after epoch {(first - 1) // steps_per_epoch}'s evaluate(): model.eval() switches"
               " dropout off and nothing switches it back. Call model.train() at the start of every epoch (or have evaluate() restore"
               " the mode it found).")
    else:
        why = ""
    fail(f"{where}: {span} of {len(modes)} ran with the model in eval mode (dropout off). Every training step must run in train"
         f" mode.{why}", what="training steps in eval mode", got=f"{span} of {len(modes)}", first_index="")


@check("training steps run in train mode, also after evaluate()", devices=DEVICES)
def train_mode_after_evaluate(sub, ctx):
    _judge_modes(sub.run(mode_run, SMALL, ctx.device, False), SMALL, ctx.device, False)


@check("train() switches a model handed in eval mode to train mode", devices=DEVICES,
       edge="`train(...)` runs every training step (every forward pass that a `backward()` goes through) with the model in train mode (dropout on),"
            " whatever mode the model is in when `train` is called and after each `evaluate()`.")
def train_mode_from_eval(sub, ctx):
    _judge_modes(sub.run(mode_run, SMALL, ctx.device, True), SMALL, ctx.device, True)


@check("evaluate() is the MSE with dropout off: two calls agree", devices=DEVICES)
def evaluate_dropout_off(sub, ctx):
    spec = {"n_train": 64, "n_val": 64, "seed": 41}
    got = expect_record(sub.run(evaluate_twice, spec, ctx.device), ("calls",), what="evaluate()")
    _, _, x_val, y_val = normalised(spec["n_train"], spec["n_val"], spec["seed"], "cpu")
    with torch.no_grad():
        want = _mse(eval_model("cpu").eval()(x_val), y_val, "")
    first, second = [as_float(v, what="evaluate()'s result", scenario=f"{ctx.device}") for v in expect_sequence(got["calls"], 2, what="evaluate()")]
    where = f"evaluate(model, x, y) on a model with Dropout(0.5), handed in train mode, 64 validation signals ({ctx.device})"
    if first != second and abs(first - second) > HISTORY_RTOL * abs(want):
        fail(f"{where}: two calls on the same model and data returned {first:.6g} and {second:.6g}, the MSE with dropout off is {want:.6g}."
             " The result changes from call to call, so dropout is still active: call model.eval() before the forward pass (torch.no_grad()"
             " alone does not switch dropout off).", what="evaluate() twice", got="differs between calls", first_index="")
    assert_close(first, want, what="evaluate()'s result", scenario=where, rtol=HISTORY_RTOL, atol=HISTORY_ATOL)


@check("train() and evaluate() leave the caller's data unchanged", devices=DEVICES)
def data_unchanged(sub, ctx):
    got = expect_record(sub.run(data_kept, SMALL, ctx.device), ("train", "evaluate"), what="train() and evaluate()")
    fail_if_changed(got["train"], who="train()", where=f"train(model, data, epochs={SMALL['epochs']}) on {SMALL['n_train']} signals ({ctx.device})",
                    fix="train on the tensors as they are, or on copies (augment a copy: x = x + noise, never x += noise)")
    fail_if_changed(got["evaluate"], who="evaluate()", where=f"evaluate(model, x_val, y_val) after that training ({ctx.device})",
                    fix="measure without writing into x or y")


def _history_cause(got, value):
    """(what the last validation loss equals instead, as the diagnosis compares it; the sentence that says so), or None."""
    close = lambda other: abs(value - other) <= HISTORY_RTOL * abs(other) + HISTORY_ATOL
    if close(got["train_mse"]):
        return "the training split's MSE", (f"It equals the trained model's MSE on the training split ({got['train_mse']:.6g}): the validation"
                                            " curve is computed on x_train, y_train; evaluate on x_val, y_val.")
    if close(got["vs_noisy"]):
        return "the MSE against the noisy inputs", (f"It equals the MSE of the output against the noisy validation inputs ({got['vs_noisy']:.6g}):"
                                                    " the validation loss must compare with the clean targets y_val.")
    if _differ(got.get("evaluate_twice")):
        return "measured with dropout on", ("Your evaluate() returned a different value each time it was called on this model (handed in"
                                            " train mode), so dropout was on while it measured: call model.eval() in evaluate().")
    return None


@check("the history: one (train, val) pair per epoch, the last val loss is the trained model's", devices=DEVICES)
def history(sub, ctx):
    got = expect_record(sub.run(history_run, SMALL, ctx.device), ("history", "val_out"), what="train()")
    _, _, _, y_val = normalised(SMALL["n_train"], SMALL["n_val"], SMALL["seed"], "cpu")
    epochs = SMALL["epochs"]
    where = f"train(model, data, epochs={epochs}) on {SMALL['n_train']} training and {SMALL['n_val']} validation signals ({ctx.device})"
    entries = expect_sequence(got["history"], epochs, what="train()'s history", scenario=where)
    pairs = [[as_float(v, what=f"history[{i}][{j}]", scenario=where) for j, v in enumerate(expect_sequence(e, 2, what=f"history[{i}]", scenario=where))]
             for i, e in enumerate(entries)]
    value, want = pairs[-1][1], _mse(got["val_out"], y_val, "build_model()")
    try:
        assert_close(value, want, what=f"history[{epochs - 1}][1], the last validation loss", scenario=where, rtol=HISTORY_RTOL, atol=HISTORY_ATOL)
    except CheckFailed as failure:
        cause = _history_cause(got, value)
        if cause is not None:  # a cause the evidence shows is what the diagnosis compares, not the value (which another implementation changes)
            failure.details["got"] = cause[0]
            failure.notes.append(cause[1])
        raise


def _differ(pair):
    try:
        a, b = (float(v) for v in pair)
    except (TypeError, ValueError):
        return False
    return abs(a - b) > HISTORY_RTOL * max(abs(a), abs(b))


def _normalise_mistakes(train, val, ddof):
    """{what the code does wrong: the four tensors it gives}, float64."""
    (n, c), (nv, cv) = [[t.double() for t in pair] for pair in (train, val)]
    (m, s), (mv, sv) = [(t.mean(), t.std(correction=ddof)) for t in (n, nv)]
    return {
        "the validation split is normalised with its own mean and std; use the training inputs' statistics for both splits, the ones"
        " the model learned its inputs by": [(n - m) / s, (c - m) / s, (nv - mv) / sv, (cv - mv) / sv],
        "the training split is normalised with the validation statistics; fit them on the training inputs":
            [(n - mv) / sv, (c - mv) / sv, (nv - mv) / sv, (cv - mv) / sv],
        "the validation split is left in raw units": [(n - m) / s, (c - m) / s, nv, cv],
        "the statistics are taken per time step (over dim 0), not over all values: they are two numbers, noisy_train.mean() and"
        " noisy_train.std()": [(t - n.mean(0)) / n.std(0, correction=ddof) for t in (n, c, nv, cv)],
        "each signal is standardised with its own mean and std (over dim 1), which erases the offsets the model must keep: the statistics are"
        " two numbers, over all values of the training inputs": [(n - n.mean(1, keepdim=True)) / n.std(1, correction=ddof, keepdim=True),
                                                                  (c - n.mean(1, keepdim=True)) / n.std(1, correction=ddof, keepdim=True),
                                                                  (nv - nv.mean(1, keepdim=True)) / nv.std(1, correction=ddof, keepdim=True),
                                                                  (cv - nv.mean(1, keepdim=True)) / nv.std(1, correction=ddof, keepdim=True)],
    }


NAMES = ("x_train", "y_train", "x_val", "y_val")


@check("normalise() scales both splits by the training inputs' statistics", devices=DEVICES)
def normalise_with_training_statistics(sub, ctx):
    noisy, clean = signals(64, 51)
    noisy_val, clean_val = signals(16, 52)
    cases = [
        ("2 training signals of 4 samples (mean 4.5); 1 validation signal at 10 times their scale",
         torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]), torch.tensor([[1.5, 2.0, 3.0, 3.5], [5.0, 6.5, 6.5, 8.0]]),
         torch.tensor([[10.0, 20.0, 30.0, 40.0]]), torch.tensor([[15.0, 20.0, 30.0, 35.0]])),
        ("64 training signals; 16 validation signals at 2.5 times the scale plus 1 (a re-calibrated sensor)",
         noisy, clean, 2.5 * noisy_val + 1.0, 2.5 * clean_val + 1.0),
        ("64 training signals; 16 validation signals from the same recipe", noisy, clean, noisy_val, clean_val),
    ]
    same = lambda got, want: same_values(got, want, rtol=NORMALISE_RTOL, atol=NORMALISE_ATOL)
    for scenario_text, *tensors in cases:
        scenario_text = f"{scenario_text}, {ctx.device}"
        train, val = tuple(tensors[:2]), tuple(tensors[2:])  # moved to the check's device by sub.call
        got = inputs_unchanged(sub, "normalise", train, val, scenario=scenario_text)
        got = expect_sequence(got, 4, what="normalise()'s result (x_train, y_train, x_val, y_val)", scenario=scenario_text)
        for name, g, like in zip(NAMES, got, tensors):
            assert_returns_like(g, like, what=f"normalise()'s {name}", scenario=scenario_text, device=ctx.device)
            if tuple(g.shape) != tuple(like.shape):
                fail(f"normalise()'s {name} ({scenario_text}): expected shape {tuple(like.shape)}, the input's, got {tuple(g.shape)}")
        n = tensors[0].double()
        want = {ddof: [(t.double() - n.mean()) / n.std(correction=ddof) for t in tensors] for ddof in (1, 0)}
        if any(same(got, w) for w in want.values()):
            continue
        ddof = 1 if same(got[:1], want[1][:1]) or not same(got[:1], want[0][:1]) else 0
        with explained(partial(mistake_hint, got, _normalise_mistakes(train, val, ddof), say="Your four tensors are exactly those where {}.", first=True, same=same)):
            for name, g, w in zip(NAMES, got, want[ddof]):
                assert_close(g, w, what=f"normalise()'s {name}", scenario=scenario_text, rtol=NORMALISE_RTOL, atol=NORMALISE_ATOL)
