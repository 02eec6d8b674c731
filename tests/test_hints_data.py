"""Hints that follow the evidence (issue 25, item 9), in gae-ppo, decontaminate, point-in-time, cv-leakage and
minibatch-sgd: each hint below is shown when the observed values show its cause, and absent when they do not.

The graders' own helpers are called on records built here, or their checks on learner code run in this process
(`InProcess`, a stand-in for the sandbox: the same plain-data round trip, no isolation, no time limit)."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from mlprep.grading import CheckFailed, Context, reported_message
from mlprep.grading._files import load_module
from mlprep.grading._wire import decode, encode

ROOT = Path(__file__).resolve().parents[1]


def grader(exercise_id: str):
    return load_module(f"hints_grader_{exercise_id.replace('-', '_')}", ROOT / "graders" / f"{exercise_id}.py")


def reference(exercise_id: str):
    return load_module(f"hints_reference_{exercise_id.replace('-', '_')}", ROOT / "solutions" / exercise_id / "reference.py")


class InProcess:
    """The learner's functions called here, on copies of the arguments, reporting the arguments they changed in place."""

    device = "cpu"
    last_request = None

    def __init__(self, **functions):
        self.module = SimpleNamespace(**functions)
        self.last_mutated: list[str] = []

    def call(self, fn, *args, **kwargs):
        args, kwargs = decode(encode(list(args))), decode(encode(kwargs))
        function = getattr(self.module, fn)
        labelled = list(inspect.signature(function).bind(*args, **kwargs).arguments.items())
        before = [encode(value) for _, value in labelled]
        result = function(*args, **kwargs)
        self.last_mutated = [name for (name, value), old in zip(labelled, before) if encode(value) != old]
        return decode(encode(result))

    def run(self, scenario, *args, **kwargs):
        return decode(encode(scenario(self.module, *decode(encode(list(args))), **decode(encode(kwargs)))))

    def control(self, fn, *args, **kwargs):
        try:
            return self.run(fn, *args, **kwargs) if callable(fn) else self.call(fn, *args, **kwargs)
        except Exception:  # noqa: BLE001 - a control call that raises gives no hint
            return None

    def grant(self, seconds):
        return 0.0


def failure_of(check, sub, ctx) -> str:
    with pytest.raises(CheckFailed) as info:
        check(sub, ctx)
    return reported_message(info.value)


def hint_of(helper, *args) -> str:
    with pytest.raises(CheckFailed) as info:
        helper(*args)
    return reported_message(info.value)


# -- gae-ppo -------------------------------------------------------------------------------------


def test_gae_ppo_blames_a_ratio_of_probabilities_only_for_the_value_it_gives():
    g = grader("gae-ppo")
    near_800 = (*g.batch([0.1, -0.3, 0.5, -0.05], [-800.0, -800.5, -799.75, -801.0], [1.0, -0.5, 2.0, 1.5]), 0.2)
    hint = g.nonfinite_hint(float("nan"), near_800)
    assert "exp(logp_new) / exp(logp_old) gives this result" in hint
    assert "shifted by one max" not in hint  # one shift keeps this batch finite: not what that gives here
    assert g.nonfinite_hint(float("inf"), near_800) == ""  # 0 / 0 gives NaN, not inf
    ordinary = (*g.batch([0.1, -0.3], [-1.0, -2.0], [1.0, -0.5]), 0.2)
    assert g.nonfinite_hint(float("nan"), ordinary) == ""  # nothing underflows here: no ratio of probabilities gives NaN
    spread = (*g.batch([0.1, -0.3, 0.5, -0.05], [-1.0, -800.0, -3.0, -750.5], [1.0, -0.5, 2.0, 1.5]), 0.2)
    assert "shifted by one max m of the whole batch" in g.nonfinite_hint(float("nan"), spread)


def test_gae_ppo_says_the_done_leaked_only_when_the_advantages_moved():
    g, ref = grader("gae-ppo"), reference("gae-ppo")
    ctx = Context("cpu", ref)

    def as_list(rewards, values, dones, last_value, gamma, lam):
        return ref.gae(rewards, values, dones, last_value, gamma, lam).tolist()

    message = failure_of(g.no_bootstrap_across_done, InProcess(gae=as_list), ctx)
    assert "expected a torch tensor" in message and "The episode ended with step 2" not in message

    def crosses_done_on_large_values(rewards, values, dones, last_value, gamma, lam):  # right on the first rollout, not on the changed one
        return ref.gae(rewards, values, torch.zeros_like(dones) if values.abs().max() > 5 else dones, last_value, gamma, lam)

    message = failure_of(g.no_bootstrap_across_done, InProcess(gae=crosses_done_on_large_values), ctx)
    assert "advantages of steps 0..2" in message and "The episode ended with step 2" in message


# -- decontaminate ---------------------------------------------------------------------------------


def test_decontaminate_says_normalise_only_to_compare_only_for_a_normalised_doc():
    d = grader("decontaminate")
    docs, benchmarks = ["The  Cat sat", "a dog"], ["x y z"]
    want = d.brute_force(docs, benchmarks, 3)
    message, _, _ = d.why_wrong(["the cat sat", "a dog"], docs, benchmarks, 3, want)
    assert "which is not one of the docs" in message and "(normalise only to compare)" in message
    message, _, _ = d.why_wrong(["something else", "a dog"], docs, benchmarks, 3, want)
    assert "which is not one of the docs" in message and "normalise" not in message


# -- point-in-time ---------------------------------------------------------------------------------


def test_point_in_time_says_sorted_in_place_only_for_inputs_left_in_another_order():
    p, ref = grader("point-in-time"), reference("point-in-time")
    ctx = Context("cpu", ref)

    def sorts_in_place(entity, ts, value, q_entity, q_ts, window, gap):
        order = np.argsort(ts, kind="stable")
        for array in (entity, ts, value):
            array[:] = array[order]
        return ref.point_in_time_mean(entity, ts, value, q_entity, q_ts, window, gap)

    message = failure_of(p.inputs_kept, InProcess(point_in_time_mean=sorts_in_place), ctx)
    assert "modified its input entity, ts, value in place" in message and "holding their own values in another order" in message

    def shifts_float_times(entity, ts, value, q_entity, q_ts, window, gap):
        result = ref.point_in_time_mean(entity, ts, value, q_entity, q_ts, window, gap)
        if ts.dtype == np.float64:
            ts -= 1.0
        return result

    message = failure_of(p.inputs_kept, InProcess(point_in_time_mean=shifts_float_times), ctx)
    assert "modified its input ts in place" in message and "another order" not in message and "sort" not in message


def test_point_in_time_explains_integer_arrays_only_where_there_are_some():
    p, ref = grader("point-in-time"), reference("point-in-time")

    def float32(*args):
        return ref.point_in_time_mean(*args).astype(np.float32)

    message = failure_of(p.result_type, InProcess(point_in_time_mean=float32), Context("cpu", ref))
    assert "got dtype float32" in message and "integer" not in message


# -- cv-leakage ------------------------------------------------------------------------------------


def model(fit, score, fit_standardised=None, score_standardised=None):
    fit, score = [np.asarray(f, dtype=np.int64) for f in fit], [np.asarray(s, dtype=np.int64) for s in score]
    return {"fit_rows": fit, "score_rows": score, "fit_standardised": fit_standardised or [False] * len(fit),
            "score_standardised": score_standardised or [False] * len(score), "labels_ok": [True] * (len(fit) + len(score))}


def test_cv_leakage_says_one_model_scored_on_every_fold_only_when_it_was():
    cv = grader("cv-leakage")
    fitted_once = {"log": [model([[0, 1, 2, 3]], [[0, 1], [2, 3]])]}
    assert "fitted once and scored on every fold" in hint_of(cv.check_models, fitted_once, 2, "data", None)
    scored_once = {"log": [model([[0, 1, 2, 3]], [[0, 1]])]}
    assert "scored on every fold" not in hint_of(cv.check_models, scored_once, 2, "data", None)


def test_cv_leakage_blames_scaling_only_for_rows_of_x_standardised():
    cv = grader("cv-leakage")
    scaled = {"log": [model([[-1, -1]], [[2, 3]], fit_standardised=[True])]}
    assert "standardised with the mean and std of all its rows" in hint_of(cv.check_raw, scaled, "data", None)
    other = {"log": [model([[-1, -1]], [[2, 3]], fit_standardised=[False])]}
    message = hint_of(cv.check_raw, other, "data", None)
    assert "are not rows of X" in message and "scal" not in message
    # what the recorder finds in the rows a fit gets
    X = np.array([[0.5, 1.0], [1.5, -1.0], [-1.0, 2.0], [2.5, 0.0]])
    make_model, records = cv.recorder(X, np.array([0, 1, 0, 1]))
    make_model().fit((X - X.mean(0)) / X.std(0), np.array([0, 1, 0, 1]))
    make_model().fit(X.astype(np.float32) + 1e-3, np.array([0, 1, 0, 1]))
    assert [r["fit_standardised"] for r in records] == [[True], [False]]


def test_cv_leakage_tells_a_model_fitted_on_its_own_validation_rows_as_it_is():
    cv = grader("cv-leakage")
    same_rows = {"log": [model([[0, 1]], [[0, 1]]), model([[2, 3]], [[2, 3]])]}
    message = hint_of(cv.folds_of, same_rows, 4, 2, "data", None)
    assert "fitted on exactly the rows it was scored on" in message and "scored on the rest" not in message
    rows_left_out = {"log": [model([[0]], [[1, 2]]), model([[1]], [[0, 3]])]}  # neither fitted nor scored on row 3: not "scored on the others"
    message = hint_of(cv.folds_of, rows_left_out, 4, 2, "data", None)
    assert "neither fitted nor scored rows [3]" in message and "scored on the others" not in message


def test_cv_leakage_names_chunks_and_class_blind_splits_only_from_the_counts():
    cv = grader("cv-leakage")
    counts = np.array([990, 10])
    chunks = np.array([[330, 4], [330, 4], [330, 2]])  # class 1 cut into chunks of ceil(10 / 3) = 4
    assert "chunks of ceil(10 / 3) = 4" in cv.stratify_hint(chunks, counts, 1, 3)
    blind = np.array([[197, 3], [200, 0], [198, 2], [197, 3], [198, 2]])  # folds of 200 rows, classes ignored
    assert "right sizes but not per class" in cv.stratify_hint(blind, counts, 1, 5)
    neither = np.array([[180, 3], [220, 0], [198, 2], [197, 3], [195, 2]])
    hint = cv.stratify_hint(neither, counts, 1, 5)
    assert "chunks" not in hint and "right sizes" not in hint and "round-robin" in hint


def test_cv_leakage_says_never_shuffled_only_for_folds_in_the_stored_order():
    cv = grader("cv-leakage")
    y = np.repeat([0, 1], [12, 3])
    stored = [sorted(set(np.flatnonzero(np.arange(15) % 3 == f).tolist())) for f in range(3)]  # each class dealt in its stored order
    assert "never shuffled" in cv.unshuffled_hint(stored, y, 3)
    order = np.random.default_rng(5).permutation(15)
    fixed_seed = [sorted(order[f::3].tolist()) for f in range(3)]
    hint = cv.unshuffled_hint(fixed_seed, y, 3)
    assert "never shuffled" not in hint and "do not depend on seed" in hint


def test_cv_leakage_blames_a_shuffle_in_place_only_for_rows_in_another_order():
    cv = grader("cv-leakage")
    assert "another order" in cv.unchanged_fix({"changed": ["X", "y"], "reordered": ["X", "y"]})
    assert "another order" not in cv.unchanged_fix({"changed": ["X"], "reordered": []})


# -- minibatch-sgd ---------------------------------------------------------------------------------


def test_minibatch_sgd_blames_shuffling_data_only_for_its_rows_in_another_order():
    m = grader("minibatch-sgd")
    assert "instead of shuffling data itself" in m.unchanged_fix({"changed": ["data"], "reordered": ["data"]})
    fix = m.unchanged_fix({"changed": ["data", "w0"], "reordered": []})
    assert "shuffl" not in fix and "never into data itself" in fix and "w = w - lr * g" in fix
