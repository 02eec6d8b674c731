"""The interface every kind of exercise implements, and what a kind shows (a solution, a sample answer).

A kind says what an attempt is (its file, what it starts from, whether it is still untouched), how
it is graded, how its solution is shown, what the self-check proves of it and which review items
it yields. It is chosen once from the exercise's metadata (mlprep.kinds.kind_of); the commands, the
practice loop, the store and the screen call it and never ask which kind an exercise is.

What a kind shows is plain data (Block, Note, Lines): the screen lays it out (mlprep.screen.render),
so no kind imports the screen.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple

from mlprep.workspace import attempt_path

if TYPE_CHECKING:
    from mlprep.bank import Exercise
    from mlprep.kinds.proof import ExerciseSelfCheck, Graded, ToGrade
    from mlprep.progress.schedule import Seed
    from mlprep.results import CheckResult, GradeResult

QUESTION = "question"  # the review item of one quiz question: item id "<quiz id>/<question id>"


class Block(NamedTuple):
    """A titled text shown as `syntax`: "python" (numbered lines), "diff" or "markdown"."""

    title: str
    text: str
    syntax: str


class Note(NamedTuple):
    """A line of text a kind shows, in one style."""
    text: str
    style: str = "dim"


Cell = tuple[str, str]  # (text, style): style is "" or words such as "bold green"


class Lines(NamedTuple):
    """Styled lines, each a tuple of cells."""

    lines: tuple[tuple[Cell, ...], ...]


Shown = tuple[Block | Note | Lines, ...]


class Kind:
    """What differs between kinds of exercise. Subclasses set the attributes and override what differs."""

    name = ""
    runs_code = False  # graded by running the learner's code in a sandbox: the practice loop, batch grading, diagnosis, repro, `pytest --mlprep`
    asks_questions = False  # `mlprep attempt` asks its questions in the terminal (else it writes the attempt's file to edit)
    attempt_suffix = ".py"  # of the attempt's file, after the id with _ for -
    written = "the stub"  # what `mlprep attempt` writes, in words
    proof_variants = ""  # what the self-check's `bugs` of this kind are, in words ("bugs", "misconceptions"): counted apart in its totals

    def header_note(self, exercise: Exercise) -> str:
        """What the exercise's header says after what to define: how to work on it."""
        return ""

    def attempt_path(self, workspace: Path, exercise: Exercise) -> Path:
        return attempt_path(workspace, exercise.id, self.attempt_suffix)

    def starting_text(self, exercise: Exercise) -> str:
        """What a fresh attempt holds."""
        return exercise.stub()

    def is_untouched(self, exercise: Exercise, path: Path) -> bool:
        """The attempt holds nothing of the learner's yet (it may be replaced without a backup)."""
        try:
            return path.read_bytes() == exercise.stub().encode("utf-8")
        except OSError:
            return False

    def grade(self, exercise: Exercise, path: Path, *, device: str = "auto", timeout_s: float | None = None, reveal: bool = False) -> GradeResult:
        """Grade the attempt at `path`; `reveal`: its answers may be shown (the exercise was passed before)."""
        raise NotImplementedError

    def shown_after_grade(self, exercise: Exercise, result: GradeResult) -> Shown:
        """What a grade is followed by on the screen (a story's sample answer)."""
        return ()

    def solution(self, exercise: Exercise, attempt: Path | None) -> Shown:
        """The solution, compared with the learner's attempt where there is one."""
        raise NotImplementedError

    def to_grade(self, exercise: Exercise, folder: Path) -> list[ToGrade]:
        """The submissions the self-check grades for this exercise (files written in `folder`); none
        for a kind that runs no code."""
        return []

    def prove(self, exercise: Exercise, graded: list[Graded], device: str) -> ExerciseSelfCheck:
        """What the self-check proves of this exercise, from the grades of `to_grade`'s submissions."""
        raise NotImplementedError

    def proof_line(self, outcome: ExerciseSelfCheck) -> str:
        """The self-check's one line about this exercise, after its id and verdict."""
        return ""

    def review_seeds(self, exercise: Exercise, graded_at: datetime, passed: bool, checks: Callable[[], list[CheckResult]]) -> list[Seed]:
        """The review items the exercise's latest grade puts in the schedule (`checks()` reads its checks)."""
        return []
