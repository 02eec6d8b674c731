"""Hints of the ranking and clustering graders follow the evidence (issue 25, item 9): each hint added or changed
there is shown when the values show its cause, and is absent when they do not."""

from __future__ import annotations

from pathlib import Path

from mlprep.bank import load_bank
from mlprep.grading.engine import grade_file

REPO = Path(__file__).resolve().parents[1]
ONE_CENTRE = "one number for every coordinate"


def graded(tmp_path: Path, exercise_id: str, bug: str):
    exercise = load_bank(REPO).get(exercise_id)
    text = next(b for b in exercise.bugs() if b.name == bug).apply(exercise.reference_path.read_text())
    path = tmp_path / f"{exercise_id.replace('-', '_')}_attempt.py"
    path.write_text(text)
    return grade_file(exercise, path, device="cpu")


def check_of(result, name: str):
    return next(c for c in result.checks if c.name.startswith(name))


def test_one_centre_for_all_columns_is_named_when_the_controls_show_it(tmp_path: Path) -> None:
    result = graded(tmp_path, "knn", "centre_global_mean")
    columns = check_of(result, "far from the origin, columns at")
    assert columns.status == "fail" and ONE_CENTRE in columns.message


def test_data_not_centred_at_all_is_not_told_it_used_one_centre(tmp_path: Path) -> None:
    result = graded(tmp_path, "knn", "not_centred")
    for name in ("far from the origin (offset", "far from the origin, columns at"):
        check = check_of(result, name)
        assert check.status == "fail" and ONE_CENTRE not in check.message


# -- auc-ranking: over the 10x budget with a growth that passed -----------------------------------
PER_ROW = "so the algorithm is right; each row costs more"
SLOW_PER_ROW = '''import numpy as np


def _walk(y, score):
    """One sort, then a Python walk that does far more per row than it needs (the cost per row, not the algorithm)."""
    order = np.argsort(-np.asarray(score, dtype=float), kind="stable")
    s, positive = np.asarray(score, dtype=float)[order].tolist(), (np.asarray(y)[order] == 1).tolist()
    runs, i = [], 0
    while i < len(s):
        j, p = i, 0
        while j < len(s) and s[j] == s[i]:
            p += [int(str(int(positive[j]))) for _ in range(10)][0]  # ten Python objects per row
            j += 1
        runs.append((p, j - i - p))
        i = j
    return runs


def roc_auc(y, score):
    runs = _walk(y, score)
    P, N = sum(p for p, _ in runs), sum(q for _, q in runs)
    if P == 0 or N == 0:
        raise ValueError("one class")
    above, total = 0, 0.0
    for p, q in runs:
        total += q * (above + p / 2)
        above += p
    return total / (P * N)


def average_precision(y, score):
    runs = _walk(y, score)
    P = sum(p for p, _ in runs)
    if P == 0:
        raise ValueError("no positive")
    tp = k = 0
    total = 0.0
    for p, q in runs:
        tp, k = tp + p, k + p + q
        total += p / P * tp / k
    return total
'''


def test_a_slow_walk_that_grows_right_is_told_the_cost_is_per_row(tmp_path: Path) -> None:
    path = tmp_path / "auc_ranking_attempt.py"
    path.write_text(SLOW_PER_ROW)
    speed = check_of(grade_file(load_bank(REPO).get("auc-ranking"), path, device="cpu"), "speed: roc_auc")
    assert speed.status == "fail" and PER_ROW in speed.message, speed.message


def test_a_quadratic_count_is_not_told_its_algorithm_is_right(tmp_path: Path) -> None:
    speed = check_of(graded(tmp_path, "auc-ranking", "quadratic_pairs"), "speed: roc_auc")
    assert speed.status == "fail" and PER_ROW not in speed.message, speed.message
