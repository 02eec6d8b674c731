"""Where the learner stands (what `mlprep progress` shows): mastery per topic, time practised, recent
grades, interviews, hints and reveals, the streak of days."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, timedelta
from typing import NamedTuple

from mlprep.bank import Bank
from mlprep.clock import parse_iso
from mlprep.progress.store import GradeRecord, Interview, Reveal, Store


class Standing(NamedTuple):
    """topics: (topic, passed, attempted (started, not yet passed), todo, total); hints: exercise id ->
    (shown, available); diagnoses: exercise id -> diagnoses that named a known mistake (each counts as
    a hint used); streak: (current, longest) in days."""

    topics: list[tuple[str, int, int, int, int]]
    topic_seconds: dict[str, float]
    practised_s: float  # wall-clock time practised, each moment counted once
    grades: list[GradeRecord]
    grades_total: int
    attempts_started: int
    hints: dict[str, tuple[int, int]]
    diagnoses: dict[str, int]
    reveals: list[Reveal]
    streak: tuple[int, int]
    interviews: list[Interview]
    reviews_due: int


def standing(store: Store, bank: Bank, now: datetime, *, reviews_due: int, history: int) -> Standing:
    """The learner's standing at `now`; `history`: how many recent grades to list."""
    statuses, grades = store.statuses(), store.grades()
    practised, seconds = practice_time(store.practice_intervals())
    counts: dict[str, list[int]] = {}
    topic_seconds: dict[str, float] = {}
    for exercise in bank.exercises:
        row = counts.setdefault(exercise.topic, [0, 0, 0, 0])  # passed, attempted, todo, total
        row[("passed", "attempted", "todo").index(statuses.get(exercise.id, "todo"))] += 1
        row[3] += 1
        topic_seconds[exercise.topic] = topic_seconds.get(exercise.topic, 0.0) + seconds.get(exercise.id, 0.0)
    available = {e.id: len(e.hints) for e in bank.exercises}
    local_days = {parse_iso(g.graded_at).astimezone().date() for g in grades}  # the learner's days, not UTC's
    return Standing(
        topics=[(topic, *row) for topic, row in sorted(counts.items())],
        topic_seconds=topic_seconds,
        practised_s=practised,
        grades=grades[:history],
        grades_total=len(grades),
        attempts_started=len({a.exercise_id for a in store.attempts()}),
        hints={e: (n, available.get(e, n)) for e, n in store.hints_shown().items()},
        diagnoses=store.diagnoses_shown(),
        reveals=store.reveals(),
        streak=day_streaks(local_days, now.astimezone().date()),
        interviews=store.interviews(),
        reviews_due=reviews_due,
    )


def practice_time(intervals: Iterable[tuple[str, datetime, float]]) -> tuple[float, dict[str, float]]:
    """(the wall-clock seconds practised, the seconds per exercise): every moment counts once, however many
    stretches of practice cover it (the loop in one terminal while `mlprep grade` runs in another, several
    attempts graded at once), and a moment that several exercises' stretches cover is shared equally
    between them, so that the exercises' seconds add up to the total."""
    boundaries: list[tuple[datetime, int, str]] = []
    for exercise_id, start, seconds in intervals:
        if seconds > 0:
            boundaries += [(start, 1, exercise_id), (start + timedelta(seconds=seconds), -1, exercise_id)]
    boundaries.sort(key=lambda b: (b[0], b[1]))  # ends before starts at the same moment
    active: dict[str, int] = {}
    total, per_exercise = 0.0, {}
    previous = None
    for moment, change, exercise_id in boundaries:
        if previous is not None and active and moment > previous:
            span = (moment - previous).total_seconds()
            total += span
            for covering in active:
                per_exercise[covering] = per_exercise.get(covering, 0.0) + span / len(active)
        active[exercise_id] = active.get(exercise_id, 0) + change
        if not active[exercise_id]:
            del active[exercise_id]
        previous = moment
    return total, per_exercise


def day_streaks(days: set[date], today: date) -> tuple[int, int]:
    """(current, longest) runs of consecutive days with practice. The current run still counts when
    it ended yesterday: today is not over."""
    longest = run = 0
    previous = None
    for day in sorted(days):
        run = run + 1 if previous is not None and day - previous == timedelta(days=1) else 1
        longest = max(longest, run)
        previous = day
    current = 0
    day = today if today in days else today - timedelta(days=1)
    while day in days:
        current += 1
        day -= timedelta(days=1)
    return current, longest
