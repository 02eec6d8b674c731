"""The self-check: proof that every grader does its job, over a bank.

Each exercise's kind says what it grades (`to_grade`: for code, the reference, the stub, every known
bug, every alternative and a generated file whose functions return None) and what those grades must
show (`prove`; see mlprep.kinds.code, .debug, .quiz, .story). Here they are graded, in parallel
over the cores through one fork server, and each exercise's proof is collected into one report.
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from mlprep.bank import Bank, Exercise
from mlprep.errors import MlprepError
from mlprep.kinds import KINDS, kind_of
from mlprep.kinds.proof import ExerciseSelfCheck, ToGrade
from mlprep.results import GradeResult


@dataclass
class SelfCheckReport:
    exercises: list[ExerciseSelfCheck]
    submissions: int = 0
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return all(e.ok for e in self.exercises)

    def counted(self, variants: str) -> list:
        """The outcomes of every exercise whose kind calls its `bugs` so ("bugs", "misconceptions")."""
        return [b for e in self.exercises if KINDS[e.kind].proof_variants == variants for b in e.bugs]

    def diagnosis_rate(self) -> tuple[int, int, int]:
        """(caught bugs diagnosed as themselves alone, as themselves among others, all caught bugs)."""
        bugs = [b for b in self.counted("bugs") if b.status != "pass" and not b.internal_error]
        alone = sum(b.diagnosed_alone for b in bugs)
        shared = sum(b.name in b.diagnosed_as and not b.diagnosed_alone for b in bugs)
        return alone, shared, len(bugs)

    def to_dict(self, *, grades: bool = False) -> dict:
        """grades: with every graded variant's full grade (the --report file), else the outcomes only."""
        exercises = []
        for e in self.exercises:
            data = {**asdict(e), "ok": e.ok}
            if not grades:
                del data["grades"]
            exercises.append(data)
        return {"ok": self.ok, "submissions": self.submissions, "wall_s": round(self.wall_s, 2), "exercises": exercises}


def selfcheck_exercises(bank: Bank, ids: list[str] | None = None) -> list[Exercise]:
    """The exercises named, or every one of the bank."""
    return [bank.get(i) for i in ids] if ids else list(bank.exercises)


def run_selfcheck(bank: Bank, ids: list[str] | None = None, *, device: str = "auto", jobs: int | None = None,
                  on_planned: Callable[[int], None] | None = None, on_result: Callable[[str, str, GradeResult], None] | None = None) -> SelfCheckReport:
    """Prove the exercises named (or all): `on_planned(n)` once the n submissions to grade are known,
    `on_result(exercise id, variant, grade)` as each is graded."""
    from mlprep.grading.engine import grade_file

    started = time.perf_counter()
    exercises = selfcheck_exercises(bank, ids)
    with tempfile.TemporaryDirectory(prefix="mlprep-selfcheck-") as tmp:
        plan: list[tuple[Exercise, ToGrade]] = []
        setup_problems: dict[str, list[str]] = {}
        for exercise in exercises:
            try:
                plan += [(exercise, item) for item in kind_of(exercise).to_grade(exercise, Path(tmp))]
            except MlprepError as exc:
                setup_problems.setdefault(exercise.id, []).append(exc.message)
        if on_planned is not None:
            on_planned(len(plan))

        def grade(planned: tuple[Exercise, ToGrade]) -> GradeResult:
            exercise, item = planned
            result = grade_file(exercise, item.path, device=device)
            if on_result is not None:
                on_result(exercise.id, item.label, result)
            return result

        # The judges mostly wait on their sandbox processes, so threads keep every core busy.
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
            graded = list(zip(plan, pool.map(grade, plan)))

    reports = []
    for exercise in exercises:
        outcomes = [(item, result) for (planned, item), result in graded if planned is exercise]
        report = kind_of(exercise).prove(exercise, outcomes, device)
        report.problems = setup_problems.get(exercise.id, []) + report.problems
        reports.append(report)
    return SelfCheckReport(reports, submissions=len(plan), wall_s=time.perf_counter() - started)
