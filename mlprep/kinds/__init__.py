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

import importlib
from collections.abc import Iterator, Mapping

from mlprep.bank import Exercise
from mlprep.kinds.base import QUESTION, Block, Kind, Lines, Note, Shown

# Where each kind lives. A kind's module is imported the first time the kind is asked for: a command
# about one exercise loads one kind, and `mlprep list` none.
_KIND_CLASSES = {"code": "code.CodeKind", "debug": "debug.DebugKind", "quiz": "quiz.QuizKind", "story": "story.StoryKind"}


class _Kinds(Mapping[str, Kind]):
    def __init__(self) -> None:
        self._made: dict[str, Kind] = {}

    def __getitem__(self, name: str) -> Kind:
        if name not in self._made:
            module, _, cls = _KIND_CLASSES[name].partition(".")
            self._made[name] = getattr(importlib.import_module(f"mlprep.kinds.{module}"), cls)()
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_KIND_CLASSES)

    def __len__(self) -> int:
        return len(_KIND_CLASSES)


KINDS: Mapping[str, Kind] = _Kinds()


def kind_of(exercise: Exercise) -> Kind:
    return KINDS[exercise.kind]


__all__ = ["KINDS", "QUESTION", "Block", "Kind", "Lines", "Note", "Shown", "kind_of"]
