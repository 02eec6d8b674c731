"""The one user-facing error type and the exit codes every command uses."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    FAILED = 1  # graded, and something failed (or a self-check found a miss)
    USAGE = 2  # bad arguments, unknown id, missing file
    INTERNAL = 3  # a bug in mlprep itself, never the learner's fault


class MlprepError(Exception):
    """An error the user can act on: printed as one line on stderr, no traceback."""

    exit_status = ExitStatus.USAGE

    def __init__(self, message: str, exit_status: ExitStatus | None = None):
        super().__init__(message)
        self.message = message
        if exit_status is not None:
            self.exit_status = exit_status


class UnknownExercise(MlprepError):
    def __init__(self, exercise_id: str, known: list[str]):
        from mlprep.text import suggestions

        close = suggestions(exercise_id, known)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "; run `mlprep list` to see them"
        super().__init__(f"no exercise {exercise_id!r}{hint}")
        self.exercise_id = exercise_id
        self.suggestions = close


class InternalError(MlprepError):
    """A defect in mlprep or in a grader: never reported as the learner passing or failing."""

    exit_status = ExitStatus.INTERNAL
