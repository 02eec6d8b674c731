"""Hints that follow the evidence (issue 25, item 9) in the training graders: loss-scaling, windows-checkpoint,
debug-denoiser. Each hint that names a cause is shown when the observed values (or a control run) show that
cause, and left out when they do not. The graders' scenarios run here, in this process, on small modules
(the bank's reference with one edit), as the sandbox would run them."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest

from mlprep.bank import load_bank
from mlprep.grading import CheckFailed, Context, reported_message
from mlprep.grading._wire import decode, encode
from mlprep.grading.engine import load_module

REPO = Path(__file__).resolve().parents[1]
BANK = load_bank(REPO)


class InProcess:
    """The sandbox's part, here: scenarios (and control calls) run on a module, their results as plain data."""

    def __init__(self, module):
        self.module, self.last_request = module, None

    def run(self, scenario, *args, **kwargs):
        return decode(encode(scenario(self.module, *args, **kwargs)))

    def control(self, fn, *args, **kwargs):
        try:
            return self.run(fn, *args, **kwargs)
        except Exception:  # noqa: BLE001 - a control that breaks gives no hint, as in the sandbox
            return None


def grader(exercise_id):
    return load_module(f"mlprep_grader_{exercise_id.replace('-', '_')}", REPO / "graders" / f"{exercise_id}.py")


def variant(tmp_path, exercise_id, name=None, edits=()):
    """The exercise's reference, with a bank bug's edits (name) or with (old, new) edits of our own, as a module."""
    exercise = BANK.get(exercise_id)
    text = exercise.reference_path.read_text()
    if name is not None:
        text = next(b for b in exercise.bugs() if b.name == name).apply(text)
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]  # modules are loaded once per name: one name per text
    path = tmp_path / f"{exercise_id.replace('-', '_')}_{name or 'edited'}_{digest}.py"
    path.write_text(text)
    return load_module(path.stem, path)


def failure_of(check, sub, ctx):
    with pytest.raises(CheckFailed) as info:
        check(sub, ctx)
    return reported_message(info.value)


# -- loss-scaling -----------------------------------------------------------------------------------
LS = "loss-scaling"
STICKY_INF = ("        with torch.no_grad():\n", "        self._seen_inf = getattr(self, '_seen_inf', False)\n        with torch.no_grad():\n")
STICKY_RETURN = ("            return all(bool(torch.isfinite(g).all()) for g in grads)",
                 "            self._seen_inf = self._seen_inf or not all(bool(torch.isfinite(g).all()) for g in grads)\n            return not self._seen_inf")
IGNORES_VERDICT = [("    if finite:\n        if max_grad_norm", "    if True:\n        if max_grad_norm"), ("    return finite", "    return True")]


def _flag_failure(g, module, reference, poison):
    spec = {"seed": 0, "model": "mlp", "optimizer": ("adam", {"lr": 1e-2}), "loss": "mse", "scaler": {"init_scale": 2.0**10, "growth_interval": 3},
            "poison": poison}
    want, sub = g.training_run(reference, spec, "cpu"), InProcess(module)
    got = sub.run(g.training_run, spec, "cpu")
    k = next(k for k, (a, b) in enumerate(zip(got["stepped"], want["stepped"])) if bool(a) != b)
    return g._flag_hint(sub, "cpu", got, want, spec, k)


def test_loss_scaling_blames_gradients_left_over_only_when_clearing_them_lets_the_step_through(tmp_path):
    g, reference = grader(LS), variant(tmp_path, LS)
    hint = _flag_failure(g, variant(tmp_path, LS, "zero_grad_missing"), reference, [1.0, math.inf, 1.0, 1.0])
    assert "left over from the overflow at step 2" in hint
    hint = _flag_failure(g, variant(tmp_path, LS, edits=[STICKY_INF, STICKY_RETURN]), reference, [1.0, math.inf, 1.0, 1.0])
    assert "left over" not in hint and hint == "Every gradient of this step is finite, so the optimizer must step."


def test_loss_scaling_says_a_nan_is_missed_only_when_its_unscale_misses_one(tmp_path):
    g, reference = grader(LS), variant(tmp_path, LS)
    hint = _flag_failure(g, variant(tmp_path, LS, "isinf_only"), reference, [1.0, math.nan, 1.0])
    assert "a NaN is not an inf" in hint
    hint = _flag_failure(g, variant(tmp_path, LS, edits=IGNORES_VERDICT), reference, [1.0, math.nan, 1.0])
    assert "a NaN is not an inf" not in hint and "Your unscale_ alone finds a NaN" in hint


def test_loss_scaling_blames_an_inf_left_in_p_grad_of_the_float16_model_only_when_the_control_shows_it(tmp_path):
    g = grader(LS)
    ctx = Context("cpu", variant(tmp_path, LS))
    assert "an inf from an earlier step is left in p.grad" in failure_of(g.half_model_recovers, InProcess(variant(tmp_path, LS, "zero_grad_missing")), ctx)
    message = failure_of(g.half_model_recovers, InProcess(variant(tmp_path, LS, edits=[STICKY_INF, STICKY_RETURN])), ctx)
    assert "still every step overflowed." in message and "left in p.grad" not in message


def test_loss_scaling_says_a_missing_grad_is_no_overflow_only_when_its_unscale_passes_the_same_grads_without_it(tmp_path):
    g = grader(LS)
    ctx = Context("cpu", variant(tmp_path, LS))
    none_is_inf = ("        grads = [p.grad for p in params if p.grad is not None]",
                   "        if any(p.grad is None for p in params):\n            return False\n        grads = [p.grad for p in params]")
    assert "a missing grad is not an overflow" in failure_of(g.none_grads_skipped, InProcess(variant(tmp_path, LS, edits=[none_is_inf])), ctx)
    always_false = ("            return all(bool(torch.isfinite(g).all()) for g in grads)", "            return False")
    message = failure_of(g.none_grads_skipped, InProcess(variant(tmp_path, LS, edits=[always_false])), ctx)
    assert "expected True (the existing grads are finite), got False" in message and "missing grad" not in message


# -- windows-checkpoint -----------------------------------------------------------------------------
def test_windows_checkpoint_says_saving_drew_a_number_only_when_draws_lead_there(tmp_path):
    g, exercise = grader("windows-checkpoint"), "windows-checkpoint"
    ctx = Context("cpu", variant(tmp_path, exercise))
    drew = failure_of(g.save_changes_nothing, InProcess(variant(tmp_path, exercise, "save_draws_rng")), ctx)
    assert "saving drew 1 random number from it" in drew
    reseeds = ("    directory = os.path.dirname(os.path.abspath(path))", "    np.random.seed(step)\n    directory = os.path.dirname(os.path.abspath(path))")
    message = failure_of(g.save_changes_nothing, InProcess(variant(tmp_path, exercise, edits=[reseeds])), ctx)
    assert "drew from it or set it anew" in message and "drew 1" not in message


def test_windows_checkpoint_says_the_second_save_did_not_replace_the_file_only_when_it_did_not(tmp_path):
    g, exercise = grader("windows-checkpoint"), "windows-checkpoint"
    ctx = Context("cpu", variant(tmp_path, exercise))
    keeps_first = ("    state = {\n", "    if os.path.exists(path):\n        return\n    state = {\n")
    assert "did not replace the file at path" in failure_of(g.resume_step, InProcess(variant(tmp_path, exercise, edits=[keeps_first])), ctx)
    first_step = [('    state = {\n        "step": step,', '    state = {\n        "step": _FIRST.setdefault(path, step),'),  # a step memoised per path
                  ("import contextlib\n", "import contextlib\n_FIRST = {}\n")]
    message = failure_of(g.resume_step, InProcess(variant(tmp_path, exercise, edits=first_step)), ctx)
    assert "did not replace" not in message and "although the second save_checkpoint rewrote the file at path" in message


# -- debug-denoiser ---------------------------------------------------------------------------------
def _modes_message(g, modes, handed_in_eval):
    with pytest.raises(CheckFailed) as info:
        g._judge_modes(modes, g.SMALL, "cpu", handed_in_eval)
    return info.value.message


def test_debug_denoiser_names_an_evaluate_only_when_eval_mode_starts_right_after_one():
    g = grader("debug-denoiser")
    assert "after epoch 1's evaluate()" in _modes_message(g, [True] * 3 + [False] * 6, False)
    first = _modes_message(g, [False] * 9, False)  # eval mode from the very first step, the model handed in train mode
    assert "epoch 0" not in first and "already the first step ran in eval mode" in first
    assert "never switched the model to train mode" in _modes_message(g, [False] * 9, True)


def test_debug_denoiser_says_step_saw_no_gradient_only_when_the_steps_show_it():
    g = grader("debug-denoiser")
    assert "never saw a gradient" in g._unmoved_cause({"steps": 3, "steps_with_grad": 0})
    assert "never called" in g._unmoved_cause({"steps": 0, "steps_with_grad": 0})
    held = g._unmoved_cause({"steps": 3, "steps_with_grad": 3})
    assert "never saw a gradient" not in held and "does the optimizer hold this model's parameters" in held
