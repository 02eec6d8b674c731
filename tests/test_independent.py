"""Correct solutions written apart from the bank, straight from the prompts (tests/fixtures/independent/
<exercise>__<how>.py): each passes its grader. The graders are calibrated against the references and
the alternatives in the bank; these are the learner's side of that: other styles, other libraries."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlprep.bank import load_bank
from mlprep.grading.engine import grade_file

REPO = Path(__file__).resolve().parents[1]
FILES = sorted((REPO / "tests" / "fixtures" / "independent").glob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_correct_solution_written_apart_passes(path: Path) -> None:
    exercise = load_bank(REPO).get(path.stem.split("__")[0].replace("_", "-"))
    result = grade_file(exercise, path)
    assert result.passed, "\n".join(f"{c.name}: {c.message}" for c in result.failed_checks())
