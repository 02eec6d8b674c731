"""Attempts: where the learner's file of an exercise is, starting it, putting the stub back, the solution
once it may be shown, and the exercise that comes next. Light (no numpy, no torch), like the commands
that use it; what an attempt holds is its kind's business (mlprep.kinds)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mlprep.bank import Exercise
from mlprep.errors import MlprepError
from mlprep.kinds import Shown, kind_of
from mlprep.progress.store import Store
from mlprep.workspace import atomic_create, atomic_write, backup_file, default_workspace, latest_backup


def attempt_location(store: Store, exercise: Exercise, workspace: Path | None) -> Path:
    """Where the learner's attempt of `exercise` is (or goes): --workspace, else the recorded
    attempt if its file still exists, else the default workspace."""
    if workspace is not None:
        return kind_of(exercise).attempt_path(workspace, exercise).absolute()
    recorded = store.latest_attempt(exercise.id)
    if recorded is not None and recorded.path.exists():
        return recorded.path
    return kind_of(exercise).attempt_path(default_workspace(), exercise).absolute()


def start_attempt(store: Store, exercise: Exercise, workspace: Path | None = None) -> tuple[Path, bool]:
    """Write the stub at the attempt's location unless a file is there (never overwritten), record
    the attempt; return (path, whether the stub was written)."""
    path = attempt_location(store, exercise, workspace)
    try:
        atomic_create(path, kind_of(exercise).starting_text(exercise))
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
    kind = kind_of(exercise)
    backup = None
    try:
        if path.is_file():
            if kind.is_untouched(exercise, path):  # a quiz's blank answers file too, whatever its seed
                return None
            backup = backup_file(path)
        atomic_write(path, kind.starting_text(exercise))
    except OSError as exc:
        raise MlprepError(f"cannot write {path}: {exc.strerror or exc}") from None
    return backup


def reset_attempt(store: Store, exercise: Exercise, workspace: Path | None, *, undo: bool = False) -> str:
    """Put the stub back (the attempt backed up first), or with `undo` the latest backup (what it
    replaces backed up first); what happened, in words."""
    kind = kind_of(exercise)
    path = attempt_location(store, exercise, workspace)
    if store.latest_attempt(exercise.id) is None and not path.exists():
        raise MlprepError(f"nothing to reset: {exercise.id} has no attempt yet; start it with `mlprep attempt {exercise.id}`")
    try:
        if undo:
            previous = latest_backup(path)
            if previous is None:
                raise MlprepError(f"no backup of {path} to put back (a reset keeps one in {path.parent / 'backups'})")
            content = previous.read_bytes()
            if path.is_file() and path.read_bytes() == content:
                return f"{path} is already the same as its latest backup {previous}; nothing to undo"
            replaced = backup_file(path) if path.is_file() and not kind.is_untouched(exercise, path) else None
            atomic_write(path, content)
            done = f"put back {previous} at {path}" + (f"\nwhat was there is saved as {replaced}" if replaced else "")
        elif path.is_file():
            if kind.is_untouched(exercise, path):
                return f"{path} is already the untouched stub; nothing to reset"
            backup = backup_file(path)  # complete and synced before the attempt is replaced
            atomic_write(path, kind.starting_text(exercise))
            done = f"restored the stub at {path}\nyour previous attempt is saved as {backup} (`mlprep reset {exercise.id} --undo` puts it back)"
        else:
            atomic_create(path, kind.starting_text(exercise))
            done = f"there was no file at {path} any more; wrote a fresh stub"
    except OSError as exc:
        raise MlprepError(f"cannot reset {path}: {exc.strerror or exc}") from None
    store.record_attempt(exercise.id, path)
    return done


def reveal_solution(store: Store, exercise: Exercise, *, force: bool = False, attempt: Path | None = None) -> Shown:
    """The solution, compared with the attempt (`attempt`, else the recorded one): once the exercise is
    passed, or with `force` (recorded as a reveal before passing); refused otherwise."""
    passed = store.has_passed(exercise.id)
    if not passed and not force:
        raise MlprepError(f"the solution of {exercise.id} unlocks once you pass it (`mlprep grade {exercise.id}`); "
                          f"to see it now anyway: `mlprep solution {exercise.id} --force` (recorded as revealed)")
    store.record_reveal(exercise.id, forced=not passed)
    if attempt is None:
        recorded = store.latest_attempt(exercise.id)
        attempt = recorded.path if recorded is not None else None
    return kind_of(exercise).solution(exercise, attempt if attempt is not None and attempt.is_file() else None)


def next_in_order(exercises: Sequence[Exercise], current: Exercise, statuses: dict[str, str]) -> Exercise | None:
    """The exercise after `current` in the bank's suggested order (exercise.toml `order`) that is
    not passed yet, wrapping around; None when every other exercise is passed."""
    ids = [e.id for e in exercises]
    start = ids.index(current.id) if current.id in ids else -1
    following = list(exercises[start + 1:]) + list(exercises[:max(start, 0)])
    return next((e for e in following if statuses.get(e.id) != "passed" and e.id != current.id), None)
