"""The `quiz` kind: questions with a hidden key (mlprep.kinds.questions), asked in the terminal or answered
in a TOML answers file.

Its self-check: the key passes under several seeds (the letters move, the key must not), an empty
answers file fails, each recorded misconception is marked wrong, and named, on every question it
answers, and no key can be found without the knowledge: by its length, alone or across the bank's
quizzes, or from another question's text (mlprep.kinds.questions.cue_problems).

A missed question comes back in spaced review on its own: its review item is "<quiz id>/<question id>";
review shows its answer after a miss, and counts that as a reveal. The solution view follows the
learner's answers file: its order, its letters, their answer beside the key.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from mlprep.bank import Exercise
from mlprep.errors import MlprepError
from mlprep.kinds.base import QUESTION, Kind, Lines, Shown

if TYPE_CHECKING:
    from mlprep.kinds.proof import ExerciseSelfCheck, Graded
    from mlprep.progress.schedule import Seed
    from mlprep.results import CheckResult, GradeResult



def _shown_response(question, presentation, response) -> str:
    """A response in the attempt's letters (first to last for an order), or the number with its unit."""
    if question.type == "numeric":
        return f"{response:g}" + (f" {question.unit}" if question.unit else "")
    if question.type == "single":
        return presentation.letter(question.id, response)
    if question.type == "multiple":
        return ", ".join(sorted(presentation.letter(question.id, i) for i in response))
    return ", ".join(presentation.letter(question.id, i) for i in response)


def _shown_key(question, presentation, answer) -> str:
    if question.type == "numeric":
        bound = max(answer.tolerance, answer.rel_tolerance * abs(answer.correct))
        return _shown_response(question, presentation, answer.correct) + (f" (± {bound:g})" if bound else "")
    return _shown_response(question, presentation, answer.correct)


class QuizKind(Kind):
    name = "quiz"
    asks_questions = True
    attempt_suffix = "_answers.toml"
    written = "the answers file (its questions are in it)"
    proof_variants = "misconceptions"

    def header_note(self, exercise: Exercise) -> str:
        return f"\nanswer it: `mlprep attempt {exercise.id}` asks here; `--file` writes an answers file"

    def starting_text(self, exercise: Exercise) -> str:
        from mlprep.kinds.questions import answers_template, load_quiz, new_seed

        return answers_template(load_quiz(exercise), new_seed())

    def is_untouched(self, exercise: Exercise, path: Path) -> bool:
        """A quiz's answers file with no answer given, whatever its seed."""
        from mlprep.kinds.questions import load_quiz, read_answers_file

        try:
            _, responses, problems = read_answers_file(load_quiz(exercise), path)
        except MlprepError:
            return False
        return all(r is None for r in responses.values()) and not any(problems.values())

    def grade(self, exercise: Exercise, path: Path, *, device: str = "auto", timeout_s: float | None = None, reveal: bool = False) -> GradeResult:
        from mlprep.kinds.questions import grade_answers_file

        return grade_answers_file(exercise, path, reveal=reveal, timeout_s=timeout_s)

    def solution(self, exercise: Exercise, attempt: Path | None) -> Shown:
        """Every question with its answer and explanation: in the order and with the letters of the
        learner's answers file (its seed) when there is one, each with their answer beside the key."""
        from mlprep.kinds.questions import Presentation, load_quiz, read_answers_file

        quiz = load_quiz(exercise)
        presentation, responses, note, read = Presentation.canonical(quiz), {}, "", False
        if attempt is not None:
            try:
                presentation, responses, _ = read_answers_file(quiz, attempt)
                note, read = f"in the order and with the letters of your answers file {attempt}, your answers beside the key", True
            except MlprepError as exc:
                note = f"your answers file could not be read ({exc.message}), so the questions are in the quiz's own order"
        lines: list[tuple[tuple[str, str], ...]] = [((note, "dim"),), ()] if note else []
        for number, question_id in enumerate(presentation.questions, start=1):
            question, answer = quiz.question(question_id), quiz.key[question_id]
            lines.append(((f"Q{number}. {question.text}", "bold"),))
            right = {answer.correct} if question.type == "single" else set(answer.correct) if question.type == "multiple" else set()
            for index in presentation.options[question_id]:
                lines.append(((f"  {presentation.letter(question_id, index)}) {question.options[index]}", "green" if index in right else ""),))
            given = responses.get(question_id)
            key = _shown_key(question, presentation, answer)
            if not read:
                lines.append(((f"  answer: {key}", "green"),))
            else:
                ok = answer.accepts(given)
                mine = "no answer" if given is None else _shown_response(question, presentation, given)
                lines.append(((f"  your answer: {mine} ", ""), ("✓" if ok else "✗", "green" if ok else "red"),
                              *(() if ok else ((f"   the answer: {key}", "green"),))))
            lines += [((f"  {answer.explanation}", "dim"),), ()]
        return (Lines(tuple(lines)),)

    def review_seeds(self, exercise: Exercise, graded_at: datetime, passed: bool, checks: Callable[[], list[CheckResult]]) -> list[Seed]:
        """Each question its latest grade missed, on its own (the quiz is not an item)."""
        from mlprep.progress.schedule import FAILED_REVIEW_AFTER, Seed

        seeds = []
        for check in checks():
            question = check.details.get("question")
            if check.status != "pass" and isinstance(question, str):
                seeds.append(Seed(QUESTION, f"{exercise.id}/{question}", graded_at + FAILED_REVIEW_AFTER, f"missed in the quiz on {graded_at:%Y-%m-%d}"))
        return seeds

    def prove(self, exercise: Exercise, graded: list[Graded], device: str) -> ExerciseSelfCheck:
        from mlprep.kinds.proof import BugOutcome, ExerciseSelfCheck
        from mlprep.kinds.questions import check_quiz

        report = ExerciseSelfCheck(exercise.id, kind=self.name)
        checked = check_quiz(exercise)
        report.problems = checked.problems
        if checked.key is not None:
            report.reference, report.stub = checked.key.status, checked.empty.status
        for misconception, _, wrong in checked.misconceptions:
            report.bugs.append(BugOutcome(misconception.name, misconception.summary, "fail" if wrong else "pass", wrong, [misconception.name]))
        return report

    def proof_line(self, outcome: ExerciseSelfCheck) -> str:
        caught = sum(b.status != "pass" for b in outcome.bugs)
        return f"key {outcome.reference} · empty {outcome.stub} · misconceptions {caught}/{len(outcome.bugs)}"
