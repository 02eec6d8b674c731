"""What the self-check proves of one exercise: the submissions it grades and the outcome it reports.

Each kind fills an ExerciseSelfCheck in its own way (mlprep.kinds.code for code and debug, .quiz, .story):
`reference` and `stub` are the statuses of what must pass and of what must fail (a quiz's key and an
empty answers file; a story's sample and its template), `bugs` the known mistakes and which checks
caught them (a quiz's misconceptions and the questions that marked them wrong), and `problems` every
miss, each in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mlprep.results import GradeResult


@dataclass(frozen=True)
class ToGrade:
    """One submission the self-check grades: its role (reference, stub, bug, alternative, generated), its name, its file."""

    role: str
    name: str
    path: Path

    @property
    def label(self) -> str:
        return f"{self.role} {self.name}" if self.role in ("bug", "alternative", "generated") else self.role


Graded = tuple[ToGrade, GradeResult]


@dataclass
class BugOutcome:
    """How one known bug fared in the self-check: its status, the checks that caught it, what it was diagnosed as."""
    name: str
    summary: str
    status: str
    caught_by: list[str]
    diagnosed_as: list[str] = field(default_factory=list)  # the known mistakes its grade matches
    identical_to: list[str] = field(default_factory=list)  # of those, the ones that fail every check the same way
    internal_error: bool = False  # its grade broke (a problem reported on its own): nothing to diagnose

    @property
    def diagnosed_alone(self) -> bool:
        return self.diagnosed_as == [self.name]


@dataclass
class VariantOutcome:
    """How one alternative solution (or generated variant) fared in the self-check."""
    name: str
    status: str
    failed: list[str]
    diagnosed_as: list[str] = field(default_factory=list)


@dataclass
class ExerciseSelfCheck:
    """The self-check's proof of one exercise: reference, stub, bugs, alternatives, and any problems."""
    id: str
    reference: str = "missing"
    stub: str = "missing"
    bugs: list[BugOutcome] = field(default_factory=list)
    alternatives: list[VariantOutcome] = field(default_factory=list)
    generated: list[VariantOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    grades: dict[str, dict] = field(default_factory=dict)  # "bug NAME", "alternative NAME", "reference"... -> the full grade
    kind: str = "code"
    cached: bool = False  # from the cache of proofs: nothing it depends on changed since it was proved

    @property
    def ok(self) -> bool:
        return not self.problems

    @classmethod
    def from_dict(cls, data: dict) -> ExerciseSelfCheck:
        fields = {key: value for key, value in data.items() if key in cls.__dataclass_fields__}
        fields["bugs"] = [BugOutcome(**b) for b in data.get("bugs", [])]
        fields["alternatives"] = [VariantOutcome(**a) for a in data.get("alternatives", [])]
        fields["generated"] = [VariantOutcome(**g) for g in data.get("generated", [])]
        return cls(**fields)
