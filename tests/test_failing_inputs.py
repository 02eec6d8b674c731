"""Every exercise, graded on one of its known bugs, shows the smallest failing input of its
failed checks as Python a learner can paste: written out in full (no value too large to show), and
reproducing the failure: run against the buggy file and against the reference, it gives different
results.

An input is a call expression (`adamw(np.array(0.0), ...)`) or a few lines of code whose last line
is an expression; it runs with `np`, `torch` and the submission's names in scope."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from bank_bugs import BUGS

from mlprep.bank import load_bank
from mlprep.grading.engine import grade_file
from mlprep.grading._files import load_module
from mlprep.grading._calls import complete
from mlprep.grading.repro import run_input

REPO = Path(__file__).resolve().parents[1]

# One known bug per exercise, chosen so the failure shows in the values (not only in a type or a timing).


def plain(value):
    """Nested Python data of floats, to compare results of any container and library."""
    if isinstance(value, torch.Tensor):
        return plain(value.detach().cpu().double().numpy() if value.is_floating_point() else value.detach().cpu().numpy())
    if isinstance(value, (np.ndarray, np.generic)):
        return plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    return a == b


@pytest.mark.parametrize("exercise_id", sorted(BUGS))
def test_a_failing_grade_shows_the_smallest_failing_input_and_it_reproduces(exercise_id: str, tmp_path: Path) -> None:
    exercise = load_bank(REPO).get(exercise_id)
    bug = next(b for b in exercise.bugs() if b.name == BUGS[exercise_id])
    path = tmp_path / f"{exercise_id.replace('-', '_')}_{bug.name}.py"
    path.write_text(bug.apply(exercise.reference_path.read_text()))
    result = grade_file(exercise, path, device="cpu")
    failed = [c for c in result.checks if c.status == "fail"]
    assert failed, result.message
    first = failed[0]
    assert first.failing_input and complete(first.failing_input), (first.name, first.failing_input)
    buggy = load_module(f"failing_input_bug_{exercise_id.replace('-', '_')}", path)
    reference = load_module(f"failing_input_reference_{exercise_id.replace('-', '_')}", exercise.reference_path)
    got, want = plain(run_input(first.failing_input, buggy)), plain(run_input(first.failing_input, reference))
    assert not same(got, want), f"{first.name}: {first.failing_input} gives the same result for the bug and the reference: {got}"
    # Every failed check that made a call shows its input, and none of them is too large to show in full.
    assert all(c.failing_input for c in failed), [c.name for c in failed if not c.failing_input]
