"""Behavioural stories: a STAR answer written into a template, checked for structure only.

A story is a bank folder (kind = "story"): exercises/<id>/prompt.md (the question),
exercises/<id>/template.md (the headings the learner fills in), solutions/<id>/sample.md (the
sample answer from the source text, shown after grading for comparison).

What is checked is what an interviewer's rubric checks before the content: every section of
Situation, Task, Action, Result, Prevention is there and specific (enough words of the learner's own,
not the template's prompt), the Result has a measured outcome (a number with a unit, or a
percentage) and the Prevention a step. It never judges whether the story is good: the grade says so.

Its self-check: the sample passes its own checks; the template, the sample without its Result's
numbers, and the sample without its Prevention, fail.

Light (no numpy, no torch).
"""

from __future__ import annotations

import re
from pathlib import Path

from mlprep.bank import Exercise
from mlprep.errors import MlprepError
from mlprep.kinds.base import Block, Kind, Shown
from mlprep.kinds.proof import ExerciseSelfCheck, Graded
from mlprep.results import CheckResult, GradeResult

SECTIONS = ("Situation", "Task", "Action", "Result", "Prevention")
MIN_WORDS = {"Situation": 15, "Task": 10, "Action": 20, "Result": 10, "Prevention": 10}
NOTICE = "mlprep checks your answer's structure, not its content: compare it with the sample answer below."
# A measured result: a number with a unit or a percentage ("from 40 min to 6 min", "12%", "3x faster", "2 days").
MEASURED = re.compile(
    r"\d[\d,.]*\s*(%|percent|x\b|×|ms|s\b|sec|second|minute|min\b|hour|h\b|day|week|month|"
    r"[kmgt]i?b\b|[kmgt]?bytes?|gb|mb|tb|qps|rps|requests?|users?|jobs?|rows?|records?|orders?|points?|pp\b|"
    r"bps|basis points|\$|usd|eur|dollars?|customers?|models?|gpus?|nodes?|incidents?|pages?|alerts?|files?|runs?|p\d\d)",
    re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}\s*(.+?)\s*#*\s*$", re.MULTILINE)


def sections(text: str) -> dict[str, str]:
    """The text under each STAR heading (comments removed); a heading is matched by its first word."""
    found: dict[str, str] = {}
    matches = list(_HEADING.finditer(text))
    for number, match in enumerate(matches):
        title = match.group(1).strip().split()[0].rstrip(":").capitalize() if match.group(1).strip() else ""
        end = matches[number + 1].start() if number + 1 < len(matches) else len(text)
        if title in SECTIONS and title not in found:
            found[title] = _COMMENT.sub("", text[match.end():end]).strip()
    return found


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9][\w'%.-]*", text)


def grade_story(exercise: Exercise, path: Path) -> GradeResult:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MlprepError(f"cannot read {path}: {exc.strerror or exc}") from None
    return grade_story_text(exercise, text)


def grade_story_text(exercise: Exercise, text: str) -> GradeResult:
    found = sections(text)
    template = sections(exercise.stub())
    checks = []
    for name in SECTIONS:
        body = found.get(name)
        if body is None:
            checks.append(CheckResult(f"{name}: present", "fail", f"no `## {name}` section: keep the template's five headings and write under each"))
            continue
        words = _words(body)
        if len(words) < MIN_WORDS[name] or body == template.get(name, None):
            checks.append(CheckResult(f"{name}: present and specific", "fail",
                                      f"{len(words)} words under `## {name}`: at least {MIN_WORDS[name]} of your own make it specific"
                                      " (what, where, when, who, how much)"))
        else:
            checks.append(CheckResult(f"{name}: present and specific", "pass"))
    result = found.get("Result", "")
    if MEASURED.search(result):
        checks.append(CheckResult("Result: a measured outcome", "pass"))
    else:
        checks.append(CheckResult("Result: a measured outcome", "fail",
                                  "the Result has no measured outcome: give a number with its unit or a percentage (\"p95 latency from 900 ms to"
                                  " 120 ms\", \"5% of orders\", \"2 days earlier\")"))
    prevention = found.get("Prevention", "")
    if re.search(r"\b(added|add|alert|monitor|test|check|automat|runbook|dashboard|validat|gate|review|guard|pin|document|rollout|canary|schema)",
                 prevention, re.IGNORECASE):
        checks.append(CheckResult("Prevention: a step that keeps it from happening again", "pass"))
    else:
        checks.append(CheckResult("Prevention: a step that keeps it from happening again", "fail",
                                  "the Prevention names no step: what did you add so that it cannot happen again (a test, a check, an"
                                  " alert, a validation, a review)?"))
    bad = sum(c.status != "pass" for c in checks)
    status = "pass" if not bad else "fail"
    message = (f"the structure is complete: all {len(checks)} checks passed" if not bad else f"{bad} of {len(checks)} structure checks did not pass") + f". {NOTICE}"
    return GradeResult(exercise.id, status, message, checks, device="")


def sample_answer(exercise: Exercise) -> str:
    return exercise.reference_path.read_text(encoding="utf-8")


def check_story(exercise: Exercise) -> list[str]:
    """The self-check of a story: the sample passes; the template, the sample without its Result's
    numbers, and the sample without its Prevention fail."""
    problems = []
    sample = sample_answer(exercise)
    if not grade_story_text(exercise, sample).passed:
        problems.append("the sample answer does not pass its own structure checks")
    if grade_story_text(exercise, exercise.stub()).passed:
        problems.append("the untouched template passes")
    found = sections(sample)
    if "Result" in found and grade_story_text(exercise, sample.replace(found["Result"], re.sub(r"\d", "", found["Result"]))).passed:
        problems.append("the sample with the Result's numbers removed still passes")
    if "Prevention" in found and grade_story_text(exercise, sample.replace(found["Prevention"], "")).passed:
        problems.append("the sample without its Prevention still passes")
    for name in SECTIONS:
        if f"## {name}" not in exercise.stub():
            problems.append(f"template.md lacks the heading `## {name}`")
    return problems


class StoryKind(Kind):
    name = "story"
    attempt_suffix = ".md"
    written = "the STAR template"

    def header_note(self, exercise: Exercise) -> str:
        return f"\nwrite it: `mlprep attempt {exercise.id}` writes the STAR template"

    def grade(self, exercise: Exercise, path: Path, *, device: str = "auto", timeout_s: float | None = None, reveal: bool = False) -> GradeResult:
        return grade_story(exercise, path)

    def shown_after_grade(self, exercise: Exercise, result: GradeResult) -> Shown:
        return () if result.internal_error else self.solution(exercise, None)

    def solution(self, exercise: Exercise, attempt: Path | None) -> Shown:
        return (Block("the sample answer, from the source text (compare yours with it)", sample_answer(exercise), "markdown"),)

    def prove(self, exercise: Exercise, graded: list[Graded], device: str) -> ExerciseSelfCheck:
        """Its sample passes; its template, and the sample without a measured result or a prevention, fail. No sandbox: nothing runs."""
        return ExerciseSelfCheck(exercise.id, reference=grade_story_text(exercise, sample_answer(exercise)).status,
                                 stub=grade_story_text(exercise, exercise.stub()).status, problems=check_story(exercise), kind=self.name)

    def proof_line(self, outcome: ExerciseSelfCheck) -> str:
        return f"sample {outcome.reference} · template {outcome.stub}"
