"""The self-check: proof that every grader does its job, over a bank.

Each exercise's kind says what it grades (`to_grade`: for code, the reference, the stub, every known
bug, every alternative and a generated file whose functions return None) and what those grades must
show (`prove`; see mlprep.kinds.code, .debug, .quiz, .story). Here they are graded, in parallel
over the cores through one fork server, and each exercise's proof is collected into one report.
A proof that holds is cached in the data folder, keyed by the content of everything it depends on:
`mlprep selfcheck --changed` proves only what changed since (a cold cache proves everything).
"""

from __future__ import annotations

import functools
import hashlib
import json
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
    """The self-check of a bank: each exercise's proof and what it cost."""
    exercises: list[ExerciseSelfCheck]
    submissions: int = 0
    wall_s: float = 0.0
    isolated: bool | None = None  # the sandboxes in namespaces of their own, the bank out of their sight (None: no sandbox ran)

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
        return {"ok": self.ok, "submissions": self.submissions, "wall_s": round(self.wall_s, 2), "isolated": self.isolated, "exercises": exercises}


def selfcheck_exercises(bank: Bank, ids: list[str] | None = None) -> list[Exercise]:
    """The exercises named, or every one of the bank."""
    return [bank.get(i) for i in ids] if ids else list(bank.exercises)


def run_selfcheck(bank: Bank, ids: list[str] | None = None, *, device: str = "auto", jobs: int | None = None, changed_only: bool = False,
                  on_planned: Callable[[int], None] | None = None, on_result: Callable[[str, str, GradeResult], None] | None = None) -> SelfCheckReport:
    """Prove the exercises named (or all): `on_planned(n)` once the n submissions to grade are known,
    `on_result(exercise id, variant, grade)` as each is graded. Each proof that holds is cached, keyed by
    the content of the exercise's files and of mlprep's own; `changed_only`: an exercise whose cached
    proof has the same key is not proved again (its outcome comes from the cache, marked so)."""
    from mlprep.grading.engine import grade_file, sandboxes_isolated

    started = time.perf_counter()
    exercises = selfcheck_exercises(bank, ids)
    keys = {e.id: proof_key(e, _devices(device)) for e in exercises}
    cached = {e.id: outcome for e in exercises if changed_only and (outcome := _cached_proof(e, keys[e.id])) is not None}
    with tempfile.TemporaryDirectory(prefix="mlprep-selfcheck-") as tmp:
        plan: list[tuple[Exercise, ToGrade]] = []
        setup_problems: dict[str, list[str]] = {}
        for exercise in (e for e in exercises if e.id not in cached):
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
        if exercise.id in cached:
            reports.append(cached[exercise.id])
            continue
        outcomes = [(item, result) for (planned, item), result in graded if planned is exercise]
        report = kind_of(exercise).prove(exercise, outcomes, device)
        report.problems = setup_problems.get(exercise.id, []) + report.problems
        if report.ok:
            _cache_proof(exercise, keys[exercise.id], report)
        reports.append(report)
    isolated = sandboxes_isolated() if any(kind_of(exercise).runs_code for exercise, _ in plan) else None
    return SelfCheckReport(reports, submissions=len(plan), wall_s=time.perf_counter() - started, isolated=isolated)


# -- the cache of proofs ------------------------------------------------------------------------------

PROOF_FORMAT = 1


@functools.cache
def _mlprep_digest() -> str:
    """mlprep's own sources, hashed once per process."""
    digest = hashlib.sha256(f"proof {PROOF_FORMAT}".encode())
    package = Path(__file__).resolve().parents[1]
    for file in sorted(package.rglob("*.py")):
        digest.update(str(file.relative_to(package)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def _devices(device: str) -> str:
    """The devices a proof ran on: a proof on a machine with a GPU is not one on a machine without."""
    if device == "cpu":
        return "cpu"
    try:
        import torch
    except ImportError:
        return f"{device} without torch"
    return f"{device} cuda={torch.cuda.is_available()}"


def proof_key(exercise: Exercise, machine: str) -> str:
    """What a proof depends on: every file of the exercise (its folder, its solutions, its grader), mlprep's
    own sources, and the devices it ran on."""
    digest = hashlib.sha256(f"{_mlprep_digest()} {machine}".encode())
    for folder in (exercise.dir, exercise.solution_dir):
        for file in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(str(file.relative_to(exercise.root)).encode() + b"\0" + file.read_bytes() + b"\0")
    if exercise.grader_path.is_file():
        digest.update(exercise.grader_path.read_bytes())
    return digest.hexdigest()


def _proof_file(exercise: Exercise) -> Path:
    from mlprep.workspace import data_dir

    return data_dir() / "cache" / "selfcheck" / f"{exercise.id}.json"


def _cached_proof(exercise: Exercise, key: str) -> ExerciseSelfCheck | None:
    try:
        data = json.loads(_proof_file(exercise).read_text(encoding="utf-8"))
        if data.get("key") != key:
            return None
        outcome = ExerciseSelfCheck.from_dict(data["outcome"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    outcome.cached = True
    return outcome


def _cache_proof(exercise: Exercise, key: str, outcome: ExerciseSelfCheck) -> None:
    """Best effort: a data folder that cannot be written only means proving it again next time."""
    from mlprep.workspace import atomic_write

    try:
        atomic_write(_proof_file(exercise), json.dumps({"key": key, "outcome": asdict(outcome)}, allow_nan=False))
    except (OSError, ValueError):
        pass
