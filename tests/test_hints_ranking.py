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
