"""Hints of the classical-ML graders follow the evidence (issue 25, item 9): each hint fixed there is shown
when the values show its cause, and is absent when they do not. Each case grades a small file written
here (a known mistake of the bank, or a contrived learner whose failure has another cause)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlprep.bank import load_bank
from mlprep.grading.engine import grade_file

REPO = Path(__file__).resolve().parents[1]


def graded(tmp_path: Path, exercise_id: str, *, bug: str | None = None, source: str | None = None, edit: tuple[str, str] | None = None):
    """The grade of the exercise's reference with the known mistake `bug`, or with `edit` (old, new), or of `source`."""
    exercise = load_bank(REPO).get(exercise_id)
    text = source if source is not None else exercise.reference_path.read_text()
    if bug is not None:
        text = next(b for b in exercise.bugs() if b.name == bug).apply(text)
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit)
    path = tmp_path / f"{exercise_id.replace('-', '_')}_attempt.py"
    path.write_text(text)
    return grade_file(exercise, path, device="cpu")


def check_of(result, name: str):
    return next(c for c in result.checks if c.name == name)


# -- early-stopping: two stoppers side by side -------------------------------------------------------
TWO = "two stoppers do not share state"
SHARED = "share state"


def test_a_stopper_one_round_late_is_not_told_that_its_stoppers_share_state(tmp_path: Path) -> None:
    check = check_of(graded(tmp_path, "early-stopping", bug="patience_off_by_one"), TWO)
    assert check.status == "fail"
    assert SHARED not in check.message and "class attributes" not in check.message, check.message
    assert "so each keeps its own state" in check.message and "(> patience instead of >= patience)" in check.message, check.message


CLASS_STATE = '''
import math


class EarlyStopper:
    best_loss, best_round, rounds, wait = math.inf, None, 0, 0  # class attributes: every stopper shares them

    def __init__(self, patience, min_delta=0.0):
        if patience < 1 or min_delta < 0:
            raise ValueError("patience >= 1 and min_delta >= 0")
        self.patience, self.min_delta = patience, min_delta

    def step(self, loss):
        t = EarlyStopper.rounds
        EarlyStopper.rounds += 1
        if not math.isfinite(loss):
            return True
        if loss < EarlyStopper.best_loss - self.min_delta:
            EarlyStopper.best_loss, EarlyStopper.best_round, EarlyStopper.wait = loss, t, 0
        else:
            EarlyStopper.wait += 1
        self.best_loss, self.best_round = EarlyStopper.best_loss, EarlyStopper.best_round
        return EarlyStopper.wait >= self.patience
'''


def test_stoppers_that_share_class_attributes_are_told_so(tmp_path: Path) -> None:
    check = check_of(graded(tmp_path, "early-stopping", source=CLASS_STATE), TWO)
    assert check.status == "fail"
    assert "the stoppers share state" in check.message and "class attributes" in check.message, check.message


def test_a_numpy_bool_from_step_is_a_bool(tmp_path: Path) -> None:
    result = graded(tmp_path, "early-stopping", edit=("return self._wait >= self.patience", "return np.bool_(self._wait >= self.patience)"),
                    source="import numpy as np\n" + (REPO / "solutions/early-stopping/reference.py").read_text())
    assert result.passed, [(c.name, c.message) for c in result.failed_checks()]


def test_a_step_that_returns_an_int_is_told_what_it_returned(tmp_path: Path) -> None:
    result = graded(tmp_path, "early-stopping", edit=("return self._wait >= self.patience", "return int(self._wait >= self.patience)"))
    check = check_of(result, "stops at round best_round + patience (min_delta left at its default)")
    assert check.status == "fail"
    assert "returned int 1; it must return a bool, True or False" in check.message, check.message
    assert "<a " not in check.message


# -- naive-bayes: the underflow hint on long documents -----------------------------------------------
LONG = "5,000-token documents (the product of probabilities underflows) still classify"
UNDERFLOW = "exp(-19,000)"


def test_probabilities_multiplied_into_zero_are_told_they_underflow(tmp_path: Path) -> None:
    check = check_of(graded(tmp_path, "naive-bayes", bug="multiplying_probabilities"), LONG)
    assert check.status == "fail" and UNDERFLOW in check.message, check.message


def test_finite_but_wrong_long_documents_get_no_underflow_hint(tmp_path: Path) -> None:
    # Right on short documents, finite and off by 0.5 on long ones: wrong, but nothing underflowed.
    edit = ("        return jll - log_evidence\n",
            "        out = jll - log_evidence\n        return out + 0.5 * (np.asarray(X).sum(axis=1, keepdims=True) > 1000)\n")
    check = check_of(graded(tmp_path, "naive-bayes", edit=edit), LONG)
    assert check.status == "fail"
    assert UNDERFLOW not in check.message, check.message


def test_a_log_sum_exp_shifted_by_the_batch_maximum_is_named(tmp_path: Path) -> None:
    check = check_of(graded(tmp_path, "naive-bayes", bug="logsumexp_global_max"),
                     "documents of 10 to 5,000 tokens in one batch: each row is normalised by its own log-sum-exp")
    assert check.status == "fail" and "the largest score of the whole batch" in check.message, check.message


# -- ctr-calibration: a floating-point warning at p = 0 or 1 -----------------------------------------
ENDPOINTS = "correct_downsampled: p = 0 and p = 1 give 0 and 1, with no floating-point warning"
LOGIT = "A logit of p = 0 or 1"


def test_a_logit_of_the_endpoints_is_named_when_only_the_endpoints_warn(tmp_path: Path) -> None:
    check = check_of(graded(tmp_path, "ctr-calibration", bug="logit_of_endpoints"), ENDPOINTS)
    assert check.status == "fail" and LOGIT in check.message, check.message


def test_a_warning_that_is_not_about_the_endpoints_gets_no_logit_hint(tmp_path: Path) -> None:
    # Warns for every p (log of 0 on a zero array): the endpoints are not the cause.
    edit = ("    pw = p * w\n", "    pw = p * w + 0 * np.log(np.zeros_like(p))\n")
    check = check_of(graded(tmp_path, "ctr-calibration", edit=edit), ENDPOINTS)
    assert check.status == "fail" and "floating-point warning" in check.message
    assert LOGIT not in check.message, check.message


@pytest.mark.parametrize("exercise_id", ["early-stopping", "ctr-calibration", "naive-bayes"])
def test_the_reference_still_passes(tmp_path: Path, exercise_id: str) -> None:
    assert graded(tmp_path, exercise_id).passed
