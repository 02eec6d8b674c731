"""Spaced review: what is due (each kind says which items its grades seed; SM-2 itself is
mlprep.progress.schedule), and the review session: due quiz questions asked here, due exercises redone
from a fresh stub in the practice loop, each rescheduled by how it went."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mlprep.bank import Bank, Exercise
from mlprep.clock import Clock, parse_iso
from mlprep.kinds import QUESTION, kind_of
from mlprep.practice.attempts import fresh_stub
from mlprep.progress.schedule import DueItem, due_now, quality, schedule
from mlprep.progress.store import Store
from mlprep.workspace import default_workspace

if TYPE_CHECKING:
    from rich.console import Console

    from mlprep.progress.schedule import ReviewState


def review_schedule(store: Store, bank: Bank) -> list[DueItem]:
    """Every scheduled review item of this bank, soonest first: the items each exercise's latest grade
    seeds (its kind says which), and every item reviewed before, by its SM-2 state."""
    exercises = {e.id: e for e in bank.exercises}
    seeds = []
    for exercise_id, (graded_at, status) in store.latest_grades().items():
        exercise = exercises.get(exercise_id)
        if exercise is None:
            continue  # gone from the bank: nothing to practise
        seeds += kind_of(exercise).review_seeds(exercise, parse_iso(graded_at), status == "pass", lambda i=exercise_id: _latest_checks(store, i))
    # A question's state counts while its quiz is in the bank (a question removed since is skipped when its review comes).
    states = {key: state for key, state in store.review_states().items()
              if key[1] in exercises or (key[0] == QUESTION and key[1].split("/", 1)[0] in exercises)}
    return schedule(seeds, states)


def _latest_checks(store: Store, exercise_id: str) -> list:
    [record] = store.grades(exercise_id, limit=1)
    return store.check_results(record.id)


def due_reviews(store: Store, bank: Bank, now: datetime) -> list[DueItem]:
    return due_now(review_schedule(store, bank), now)


class ReviewOutcome:
    """A review session: what was scheduled and due, and how each item reviewed was rescheduled. A plain
    class: `mlprep progress` imports this module, and the dataclass machinery costs a quick command more
    than this class's four fields are worth."""

    def __init__(self, scheduled: list[DueItem], due: list[DueItem]) -> None:
        self.scheduled = scheduled  # everything in the schedule
        self.due = due  # what was due (within --ahead), before --limit
        self.rescheduled: list[tuple[str, bool, ReviewState]] = []  # (item, recalled, its new state)
        self.ended_by = ""  # how the practice loop ended, if it ran


def run_review(store: Store, bank: Bank, clock: Clock, console: Console, *, limit: int, ahead_days: float = 0.0, list_only: bool = False,
               manual: bool = False, editor: str | None = None, stdin: TextIO | None = None) -> ReviewOutcome:
    """Show what is due and review up to `limit` of it: questions here, exercises in the practice loop."""
    from rich.text import Text  # the session's modules: `mlprep progress` counts what is due without them

    from mlprep.practice.questions import review_questions
    from mlprep.practice.watch import LoopItem, LoopPolicy, PracticeLoop
    from mlprep.screen.render import review_table

    now = clock.now()
    scheduled = review_schedule(store, bank)
    outcome = ReviewOutcome(scheduled, due_now(scheduled, now + timedelta(days=ahead_days)))
    if list_only or not outcome.due:
        if scheduled:
            console.print(review_table(scheduled, now))
        return outcome
    due = outcome.due[:limit]
    console.print(review_table(due, now))
    outcome.rescheduled = review_questions(store, bank, [item for item in due if item.kind == QUESTION], clock.now, console, stdin or sys.stdin)
    exercises = [bank.get(item.item_id) for item in due if item.kind != QUESTION]
    if not exercises:
        return outcome
    folder = default_workspace() / "review"

    def prepare(exercise: Exercise) -> Path:
        path = kind_of(exercise).attempt_path(folder, exercise)
        fresh_stub(exercise, path)  # a review is a recall: from the stub, not from your old answer
        return path

    items = [LoopItem(exercise) for exercise in exercises]
    policy = LoopPolicy(mode="review", source="review", prepare=prepare, free_navigation=True, editor=editor)
    loop = PracticeLoop(store, bank, items, policy, clock=clock, console=console, manual=manual, stdin=stdin)
    loop.notes = [Text(f"review: {len(items)} due (of {len(due)}); redo each from the stub; n/p move between them; l lists them; q stops", style="bold")]
    ended = loop.run()
    outcome.ended_by = ended.ended_by
    for item in ended.items:
        if item.result is None:
            continue  # never graded: not reviewed, still due
        q = quality(item.passed, item.hints_used, len(item.exercise.hints))
        outcome.rescheduled.append((item.exercise.id, item.passed, store.record_review(item.exercise.kind, item.exercise.id, q, clock.now())))
    return outcome
