"""Where attempts live and what comes next: the core the `attempt`, `watch`, `interview` and
`review` commands share. Light (no numpy, no torch), like the commands that import it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path

from mlprep.bank import Bank, Exercise
from mlprep.clock import parse_iso
from mlprep.errors import MlprepError
from mlprep.review import DueItem, GradeHistory, due_now, schedule, seeds_from_grades
from mlprep.store import Store
from mlprep.workspace import atomic_create, atomic_write, attempt_path, backup_file, default_workspace


def attempt_location(store: Store, exercise: Exercise, workspace: Path | None) -> Path:
    """Where the learner's attempt of `exercise` is (or goes): --workspace, else the recorded
    attempt if its file still exists, else the default workspace."""
    if workspace is not None:
        return attempt_path(workspace, exercise.id).absolute()
    recorded = store.latest_attempt(exercise.id)
    if recorded is not None and recorded.path.exists():
        return recorded.path
    return attempt_path(default_workspace(), exercise.id).absolute()


def start_attempt(store: Store, exercise: Exercise, workspace: Path | None = None) -> tuple[Path, bool]:
    """Write the stub at the attempt's location unless a file is there (never overwritten), record
    the attempt; return (path, whether the stub was written)."""
    path = attempt_location(store, exercise, workspace)
    try:
        atomic_create(path, exercise.stub())
        created = True
    except FileExistsError:
        created = False
    except OSError as exc:
        raise MlprepError(f"cannot write {path}: {exc.strerror or exc}") from None
    recorded = store.latest_attempt(exercise.id)
    if created or recorded is None or recorded.path != path.resolve():
        store.record_attempt(exercise.id, path)
    return path, created


def fresh_stub(exercise: Exercise, path: Path) -> Path | None:
    """Put the untouched stub at `path` (an interview's or a review's own file); an earlier file
    there that differs from the stub is backed up first, never lost. Returns the backup, if any."""
    stub = exercise.stub()
    backup = None
    try:
        if path.is_file():
            if path.read_bytes() == stub.encode("utf-8"):
                return None
            backup = backup_file(path)
        atomic_write(path, stub)
    except OSError as exc:
        raise MlprepError(f"cannot write {path}: {exc.strerror or exc}") from None
    return backup


def next_in_order(exercises: Sequence[Exercise], current: Exercise, statuses: dict[str, str]) -> Exercise | None:
    """The exercise after `current` in the bank's suggested order (exercise.toml `order`) that is
    not passed yet, wrapping around; None when every other exercise is passed."""
    ids = [e.id for e in exercises]
    start = ids.index(current.id) if current.id in ids else -1
    following = list(exercises[start + 1:]) + list(exercises[:max(start, 0)])
    return next((e for e in following if statuses.get(e.id) != "passed" and e.id != current.id), None)


def review_schedule(store: Store, bank: Bank) -> list[DueItem]:
    """Every scheduled review item of this bank, soonest first (see mlprep.review)."""
    kinds = {e.id: e.kind for e in bank.exercises}
    history = {
        exercise_id: GradeHistory(kinds[exercise_id], parse_iso(graded_at), status == "pass")
        for exercise_id, (graded_at, status) in store.latest_grades().items()
        if exercise_id in kinds  # gone from the bank: nothing to practise
    }
    # Only exercises of this bank can be practised today; quiz questions join once quizzes exist.
    states = {key: state for key, state in store.review_states().items() if key[1] in kinds}
    return schedule(seeds_from_grades(history), states)


def due_reviews(store: Store, bank: Bank, now: datetime) -> list[DueItem]:
    return due_now(review_schedule(store, bank), now)


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
