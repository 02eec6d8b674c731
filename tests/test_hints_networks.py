"""Hints of the network graders (adamw, init-scale, standardize) follow the evidence (issue 25, item 9): each hint
below is shown when the values show its cause, and absent when they do not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from mlprep.bank import load_bank
from mlprep.grading import CheckFailed
from mlprep.grading.engine import load_module, module_name

REPO = Path(__file__).resolve().parents[1]


def grader(exercise_id: str):
    exercise = load_bank(REPO).get(exercise_id)
    return load_module(module_name("grader", exercise_id), exercise.grader_path)


@pytest.fixture(scope="module")
def adamw():
    return grader("adamw")


@pytest.fixture(scope="module")
def init_scale():
    return grader("init-scale")


def test_a_non_finite_step_1_blames_the_bias_correction_only_when_step_2_is_finite(adamw):
    assert "step 1 itself divides by zero" in adamw.step1_hint(np.array([0.5, -1.0]))
    assert adamw.step1_hint(np.array([np.nan, 1.0])) == ""  # step 2 breaks too: not a step-1 matter
    assert adamw.step1_hint(None) == ""  # the control call raised


def test_a_wrong_first_step_names_the_bias_correction_mistake_it_equals(adamw):
    lr, g = 1e-2, np.array([1e-3, -0.5, 3.0, -40.0])
    m, v = 0.1 * g, 0.001 * g * g
    no_correction = lr * m / (np.sqrt(v) + 1e-8)
    assert "m and v are not bias-corrected" in adamw.first_step_hint(no_correction, g, lr)
    assert "b1**(t + 1)" in adamw.first_step_hint(lr * (m / 0.19) / (np.sqrt(v / (1 - 0.999**2)) + 1e-8), g, lr)
    right = lr * g / (np.abs(g) + 1e-8)
    assert adamw.first_step_hint(1.5 * right, g, lr) == ""  # wrong, but like no known mistake: no cause named
    assert adamw.first_step_hint(right, g, lr) == ""


def test_a_zero_gradient_step_blames_coupled_decay_only_when_w_shows_it(adamw):
    w, lr, wd = np.array([[0.5, -1.0], [2.0, -4.0]]), 0.1, 0.5
    g = wd * w  # the decay folded into g: at t = 1, m_hat = g and v_hat = g**2
    coupled = w - lr * g / (np.abs(g) + 1e-8)
    assert "folded into g" in adamw.zero_gradient_hint(coupled, w, 1, lr, wd)
    assert "not multiplied by lr" in adamw.zero_gradient_hint(w * (1 - wd), w, 1, lr, wd)
    for other in (w * 0.9, w):  # off for another reason (or not decayed at all): the decay's path is not blamed
        assert adamw.zero_gradient_hint(other, w, 1, lr, wd) == ""


def test_rows_that_decay_apart_blame_the_decay_only_when_they_stay_together_without_it(adamw):
    assert "the decay is what tells them apart" in adamw.decay_hint(np.array([[1.0, 2.0], [1.0, 2.0000001]]))
    assert adamw.decay_hint(np.array([[1.0, 2.0], [1.5, 2.0]])) == ""  # apart without decay too: the step itself is not scale-free
    assert adamw.decay_hint(None) == ""


def test_a_wrong_dtype_is_called_a_promotion_only_when_it_is_one(adamw):
    dtypes = ("float32", "float32", "float64", "float64")  # w, g, m, v
    assert "promotes to" in adamw.dtype_hint("w", np.zeros(2), dtypes)
    assert "promotes" not in adamw.dtype_hint("w", np.zeros(2, dtype=np.float16), dtypes)
    assert "promotes" not in adamw.dtype_hint("w", torch.zeros(2, dtype=torch.float64), ("float64",) * 4)  # all one dtype: nothing to promote
    assert adamw.dtype_hint("w", None, dtypes) == "return w in the dtype of the input w"


def test_a_mean_off_zero_points_at_rng_random_only_when_no_value_is_negative(init_scale):
    assert "rng.random()" in init_scale.mean_hint(np.array([0.1, 0.7, 0.3]))
    assert "rng.random()" not in init_scale.mean_hint(np.array([-0.1, 0.7, 0.9]))


class OneOutcome:
    """Stands in for the sandbox: every scenario run answers with the same record."""

    def __init__(self, record):
        self.record = record

    def run(self, scenario, *args):
        return self.record


def test_an_unknown_scheme_is_said_to_fall_back_only_when_it_returned(init_scale):
    with pytest.raises(CheckFailed) as returned:
        init_scale.unknown_scheme(OneOutcome({"raised": None, "result": np.zeros((3, 4))}), None)
    assert "not fall back to a default" in returned.value.message
    with pytest.raises(CheckFailed) as raised:
        init_scale.unknown_scheme(OneOutcome({"raised": "KeyError", "classes": ["KeyError", "LookupError"], "message": "'kaiming_uniform'"}), None)
    assert "raised KeyError" in raised.value.message and "fall back" not in raised.value.message


def test_a_wrong_layer_1_asks_for_the_post_relu_variance_only_when_the_weights_are_not_the_cause(init_scale):
    sizes, scheme = [256, 256], "he"
    pre = 256 * 2 / 256
    assert "Return np.var" in init_scale.layer1_hint(pre, sizes, scheme) and "pre-activation" in init_scale.layer1_hint(pre, sizes, scheme)
    wrong_weights = 256 * (1 / 256) * init_scale.RELU_VAR  # 1 / fan_in for He
    hint = init_scale.layer1_hint(wrong_weights, sizes, scheme)
    assert "wrong variance" in hint and "Return np.var" not in hint
    assert init_scale.layer1_hint(7.0, sizes, scheme) == " Return np.var of each layer's whole post-ReLU output."


def test_a_xavier_net_that_does_not_collapse_is_told_to_use_its_scheme_only_when_its_values_are_he_s(init_scale):
    he = np.array([0.68, 0.7, 0.66])
    assert "exactly those for" in init_scale.scheme_hint(he.copy(), he)
    assert init_scale.scheme_hint(he * 0.9, he) == ""


def test_a_cancelling_column_is_put_down_to_a_shared_shift_only_when_the_columns_sit_apart():
    standardize = grader("standardize")
    means, stds = np.array([1e9, -1e9]), np.array([1.0, 1.0])
    assert "shared by every column" in standardize.column_hint(np.array([True, False]), means, stds)
    assert standardize.column_hint(np.array([False, False]), means, stds) == ""  # every column wrong: not a matter of columns
    assert standardize.column_hint(np.array([True, False]), np.array([1e9, 1e9 + 1]), stds) == ""  # the columns sit together
