"""Question sets asked in the terminal: a quiz attempt, an interview's follow-up questions, a missed quiz
question under review. The questions and their key are mlprep.kinds.questions; the asking is
mlprep.screen.asker."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.text import Text

from mlprep.bank import Bank, Exercise
from mlprep.errors import MlprepError
from mlprep.kinds import QUESTION
from mlprep.kinds.questions import Presentation, as_grade, fill_answers, has_followups, load_quiz, mark, new_seed, read_answers_file, show_response
from mlprep.practice.attempts import fresh_stub, start_attempt
from mlprep.progress.store import Store
from mlprep.screen.asker import QuizAborted, ask_questions
from mlprep.text import plural

if TYPE_CHECKING:
    from mlprep.progress.schedule import DueItem, ReviewState
    from mlprep.results import GradeResult


def ask_quiz(store: Store, exercise: Exercise, workspace: Path | None, console: Console, stdin: TextIO) -> tuple[Path, GradeResult | None]:
    """Ask the quiz's questions here, one by one, in the order of the attempt's seed; write the answers
    into the attempt's answers file; grade and record it. Returns (the answers file, the grade; None when
    the learner left before the end: nothing is graded)."""
    quiz = load_quiz(exercise)
    path, _ = start_attempt(store, exercise, workspace)
    try:
        presentation, _, _ = read_answers_file(quiz, path)
    except MlprepError:  # an answers file broken by hand: a fresh one, the old one kept as a backup
        fresh_stub(exercise, path)
        presentation, _, _ = read_answers_file(quiz, path)
    console.print(Text(f"{exercise.title} ({exercise.id}): {plural(len(quiz.questions), 'question')}, the pass mark is {quiz.pass_mark:.0%}. "
                       "Single keys pick an option; q leaves (nothing is graded)."))
    try:
        responses = ask_questions(quiz, presentation, stdin, console)
    except (QuizAborted, KeyboardInterrupt):
        return path, None
    fill_answers(quiz, path, presentation.seed, responses)
    result = as_grade(mark(quiz, presentation, responses), reveal=store.has_passed(exercise.id))
    store.record_grade(result, source="workspace", path=path)
    return path, result


def ask_followups(exercises: Sequence[Exercise], console: Console, rng: random.Random, stdin: TextIO) -> list[dict]:
    """The interviewer's follow-up questions of each exercise, asked here after the code is graded;
    the answers, marked, for the report (scored apart from the code)."""
    asked = []
    for exercise in exercises:
        if not has_followups(exercise):
            continue
        quiz = load_quiz(exercise, followups=True)
        presentation = Presentation.of(quiz, rng.randrange(1, 2**31))
        console.print(f"\nfollow-up questions on {exercise.id} ({exercise.title}): as an interviewer asks once the code works", style="bold", markup=False)
        try:
            responses = ask_questions(quiz, presentation, stdin, console)
        except (QuizAborted, KeyboardInterrupt):
            console.print("follow-ups skipped: the report scores the code alone", markup=False)
            return []
        outcome = mark(quiz, presentation, responses)
        for question_id in presentation.questions:
            asked.append({"exercise": exercise.id, "question": question_id, "text": quiz.question(question_id).text, "right": outcome.right[question_id],
                          "explanation": quiz.key[question_id].explanation})
    return asked


def review_questions(store: Store, bank: Bank, due: Sequence[DueItem], now: Callable[[], datetime], console: Console,
                     stdin: TextIO) -> list[tuple[str, bool, ReviewState]]:
    """Ask each due quiz question alone (in a fresh order of its options), mark it, and reschedule it:
    quality 5 when recalled, 1 when not. `now()` is the time of each review. Returns (item id, recalled,
    new state) of those answered."""
    answered = []
    for item in due:
        quiz_id, question_id = item.item_id.split("/", 1)
        quiz = load_quiz(bank.get(quiz_id))
        if question_id not in {question.id for question in quiz.questions}:
            console.print(Text(f"{item.item_id}: that question is no longer in {quiz_id}; skipped", style="dim"))
            continue
        presentation = Presentation.of(quiz, new_seed())
        console.print(f"\nreview: a question you missed in {quiz_id} ({quiz.title})", style="bold", markup=False)
        try:
            responses = ask_questions(quiz, presentation, stdin, console, only=[question_id])
        except (QuizAborted, KeyboardInterrupt):
            console.print("review stopped: the rest stays due", markup=False)
            break
        question, answer = quiz.question(question_id), quiz.key[question_id]
        recalled = answer.accepts(responses[question_id])
        console.print(Text(("✓ right. " if recalled else f"✗ the answer: {show_response(question, presentation, answer.correct)}. ") + answer.explanation,
                           style="green" if recalled else "yellow"))
        if not recalled:  # the answer was shown: a reveal, as `mlprep solution` records one
            passed = store.has_passed(quiz_id)
            store.record_reveal(quiz_id, forced=not passed)
            if not passed:
                console.print(Text(f"(counted as a reveal of {quiz_id}'s answers: you have not passed it yet)", style="dim"))
        state = store.record_review(QUESTION, item.item_id, 5 if recalled else 1, now())
        answered.append((item.item_id, recalled, state))
    return answered
