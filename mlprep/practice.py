"""Where attempts live and what comes next: the core the `attempt`, `watch`, `interview` and
`review` commands share. Light (no numpy, no torch), like the commands that import it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from mlprep.bank import Bank, Exercise
from mlprep.clock import parse_iso
from mlprep.errors import MlprepError
from mlprep.review import FAILED_REVIEW_AFTER, DueItem, GradeHistory, Seed, due_now, schedule, seeds_from_grades
from mlprep.store import Store
from mlprep.workspace import atomic_create, atomic_write, attempt_path, backup_file, default_workspace

if TYPE_CHECKING:
    from mlprep.results import GradeResult


def attempt_location(store: Store, exercise: Exercise, workspace: Path | None) -> Path:
    """Where the learner's attempt of `exercise` is (or goes): --workspace, else the recorded
    attempt if its file still exists, else the default workspace."""
    if workspace is not None:
        return attempt_path(workspace, exercise.id, exercise.kind).absolute()
    recorded = store.latest_attempt(exercise.id)
    if recorded is not None and recorded.path.exists():
        return recorded.path
    return attempt_path(default_workspace(), exercise.id, exercise.kind).absolute()


def start_attempt(store: Store, exercise: Exercise, workspace: Path | None = None) -> tuple[Path, bool]:
    """Write the stub at the attempt's location unless a file is there (never overwritten), record
    the attempt; return (path, whether the stub was written)."""
    path = attempt_location(store, exercise, workspace)
    try:
        atomic_create(path, starting_text(exercise))
        created = True
    except FileExistsError:
        created = False
    except OSError as exc:
        raise MlprepError(f"cannot write {path}: {exc.strerror or exc}") from None
    recorded = store.latest_attempt(exercise.id)
    if created or recorded is None or recorded.path != path.resolve():
        store.record_attempt(exercise.id, path)
    return path, created


def starting_text(exercise: Exercise) -> str:
    """What a fresh attempt holds: the stub; a quiz's answers file (the questions in an order of a
    new seed); a story's STAR template."""
    if exercise.kind == "quiz":
        from mlprep.quiz import answers_template, load_quiz, new_seed

        return answers_template(load_quiz(exercise), new_seed())
    return exercise.stub()


def is_untouched(exercise: Exercise, path: Path) -> bool:
    """The attempt holds nothing of the learner's yet: the stub as written, or a quiz's answers file with no answer."""
    try:
        if exercise.kind == "quiz":
            from mlprep.quiz import load_quiz, read_answers_file

            _, responses, problems = read_answers_file(load_quiz(exercise), path)
            return all(r is None for r in responses.values()) and not any(problems.values())
        return path.read_bytes() == exercise.stub().encode("utf-8")
    except (OSError, MlprepError):
        return False


def grade_attempt(exercise: Exercise, path: Path, *, device: str = "auto", timeout_s: float | None = None, reveal: bool = False) -> "GradeResult":
    """Grade an attempt of any kind: code runs through the engine (heavy: imported here), a quiz's
    answers and a story's structure are marked by mlprep itself."""
    if exercise.kind == "quiz":
        from mlprep.quiz import grade_answers_file

        return grade_answers_file(exercise, path, reveal=reveal)
    if exercise.kind == "story":
        from mlprep.story import grade_story

        return grade_story(exercise, path)
    from mlprep.engine import grade_file

    return grade_file(exercise, path, device=device, timeout_s=timeout_s)


def fresh_stub(exercise: Exercise, path: Path) -> Path | None:
    """Put the untouched stub at `path` (an interview's or a review's own file); an earlier file
    there that differs from the stub is backed up first, never lost. Returns the backup, if any."""
    backup = None
    try:
        if path.is_file():
            if is_untouched(exercise, path):  # a quiz's blank answers file too, whatever its seed
                return None
            backup = backup_file(path)
        atomic_write(path, starting_text(exercise))
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


QUESTION = "question"  # the review kind of one quiz question: item id "<quiz id>/<question id>"


def review_schedule(store: Store, bank: Bank) -> list[DueItem]:
    """Every scheduled review item of this bank, soonest first (see mlprep.review). A quiz is not an
    item: its questions are, each missed question of its latest grade on its own."""
    kinds = {e.id: e.kind for e in bank.exercises}
    latest = store.latest_grades()
    history = {
        exercise_id: GradeHistory(kinds[exercise_id], parse_iso(graded_at), status == "pass")
        for exercise_id, (graded_at, status) in latest.items()
        if exercise_id in kinds and kinds[exercise_id] not in ("quiz", "story")  # gone from the bank: nothing to practise; a story is no recall
    }
    seeds = seeds_from_grades(history)
    for exercise_id, (graded_at, _) in latest.items():
        if kinds.get(exercise_id) == "quiz":
            [record] = store.grades(exercise_id, limit=1)
            for check in store.check_results(record.id):
                question = check.details.get("question")
                if check.status != "pass" and isinstance(question, str):
                    when = parse_iso(graded_at)
                    seeds.append(Seed(QUESTION, f"{exercise_id}/{question}", when + FAILED_REVIEW_AFTER, f"missed in the quiz on {when:%Y-%m-%d}"))
    # A question's state counts while its quiz is in the bank (a question removed since is skipped when its review comes).
    states = {key: state for key, state in store.review_states().items()
              if key[1] in kinds or (key[0] == QUESTION and kinds.get(key[1].split("/", 1)[0]) == "quiz")}
    return schedule(seeds, states)


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
