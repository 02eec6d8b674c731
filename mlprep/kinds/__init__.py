"""Kinds of exercise: what an attempt is, how it is graded, shown, proved by the self-check and reviewed.

    kind_of(exercise) -> Kind       chosen once from the exercise's metadata (exercise.toml `kind`)

    base        the Kind interface, and what a kind shows (Block, Note, Lines)
    code        code: a stub to fill in, judged by a grader module in a sandbox
    debug       debug: a program with planted bugs to fix, judged like code
    quiz        quiz: questions with a hidden key (the question sets themselves: questions)
    story       story: a STAR answer, its structure checked
    proof       what the self-check reports of one exercise; selfcheck runs it over a bank

Nothing outside this package asks which kind an exercise is: it calls the kind. Light: no numpy, no
torch (the kinds import the grading engine only to grade).
"""

from __future__ import annotations

from mlprep.bank import Exercise
from mlprep.kinds.base import Block, Kind, Lines, Note, Shown
from mlprep.kinds.code import CodeKind
from mlprep.kinds.debug import DebugKind
from mlprep.kinds.quiz import QUESTION, QuizKind
from mlprep.kinds.story import StoryKind

KINDS: dict[str, Kind] = {kind.name: kind for kind in (CodeKind(), DebugKind(), QuizKind(), StoryKind())}


def kind_of(exercise: Exercise) -> Kind:
    return KINDS[exercise.kind]


__all__ = ["KINDS", "QUESTION", "Block", "Kind", "Lines", "Note", "Shown", "kind_of"]
