"""The exercise bank: one folder per exercise, discovered, never registered by hand.

Layout (relative to the bank root):
    exercises/<id>/exercise.toml   metadata (format_version 1)
    exercises/<id>/prompt.md       the task
    exercises/<id>/stub.py         what the learner starts from
    solutions/<id>/reference.py    the hidden reference
    solutions/<id>/bugs.toml       known-bug variants, as edits of reference.py
                                   (a `debug` exercise marks the bugs its stub holds `planted = true`)
    solutions/<id>/alternatives/   other correct implementations (must pass)
    graders/<id>.py                the checks

This module must stay light (no numpy, no torch): `mlprep list` and friends import it.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from mlprep.errors import MlprepError, UnknownExercise

FORMAT_VERSION = 1
KINDS = ("code", "debug", "quiz", "story")
DIFFICULTIES = ("easy", "medium", "hard")


def bank_root() -> Path:
    """Where the bank lives: $MLPREP_BANK, else a source checkout, else the copy inside the wheel."""
    override = os.environ.get("MLPREP_BANK")
    if override:
        return Path(override).resolve()
    package_dir = Path(__file__).resolve().parent
    checkout = package_dir.parent
    if (checkout / "exercises").is_dir() and (checkout / "graders").is_dir():
        return checkout
    return package_dir / "_bank"


@dataclass(frozen=True)
class Bug:
    name: str
    summary: str
    edits: tuple[tuple[str, str], ...]
    planted: bool = False  # a `debug` exercise's stub holds this bug: the stub is the reference with every planted bug

    def apply(self, reference_source: str) -> str:
        """The reference with this bug's edits; each `old` must occur exactly once."""
        source = reference_source
        for old, new in self.edits:
            count = source.count(old)
            if count != 1:
                raise MlprepError(f"bug {self.name!r}: edit text occurs {count} times in reference.py (needs exactly 1): {old[:60]!r}")
            source = source.replace(old, new)
        return source


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    kind: str
    topic: str
    difficulty: str
    source: str
    functions: tuple[str, ...]
    timeout_s: float
    memory_mb: int
    order: int
    hints: tuple[str, ...]
    root: Path = field(repr=False)  # the bank root

    @property
    def dir(self) -> Path:
        return self.root / "exercises" / self.id

    @property
    def prompt_path(self) -> Path:
        return self.dir / "prompt.md"

    @property
    def stub_path(self) -> Path:
        return self.dir / "stub.py"

    @property
    def grader_path(self) -> Path:
        return self.root / "graders" / f"{self.id}.py"

    @property
    def solution_dir(self) -> Path:
        return self.root / "solutions" / self.id

    @property
    def reference_path(self) -> Path:
        return self.solution_dir / "reference.py"

    def prompt(self) -> str:
        return self.prompt_path.read_text(encoding="utf-8")

    def stub(self) -> str:
        return self.stub_path.read_text(encoding="utf-8")

    def bugs(self) -> list[Bug]:
        path = self.solution_dir / "bugs.toml"
        if not path.exists():
            return []
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            return [
                Bug(b["name"], b["summary"], tuple((e["old"], e["new"]) for e in b["edit"]), bool(b.get("planted", False)))
                for b in data.get("bug", [])
            ]
        except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
            raise MlprepError(f"{path}: broken bugs.toml ({exc})") from None

    def planted_source(self) -> str:
        """The reference with every planted bug, in bugs.toml's order: what a `debug` exercise's stub must be."""
        source = self.reference_path.read_text(encoding="utf-8")
        for bug in self.bugs():
            if bug.planted:
                source = bug.apply(source)
        return source

    def alternatives(self) -> list[Path]:
        return sorted((self.solution_dir / "alternatives").glob("*.py"))


class Bank:
    def __init__(self, root: Path, exercises: list[Exercise], broken: list[tuple[str, str]]):
        self.root = root
        self.exercises = exercises
        self.broken = broken  # (folder name, reason): shown, never fatal to the rest of the bank

    def ids(self) -> list[str]:
        return [e.id for e in self.exercises]

    def get(self, exercise_id: str) -> Exercise:
        for exercise in self.exercises:
            if exercise.id == exercise_id:
                return exercise
        for name, reason in self.broken:
            if name == exercise_id:
                raise MlprepError(f"exercise {exercise_id!r} is broken in this bank: {reason}")
        raise UnknownExercise(exercise_id, self.ids())


def _read_exercise(folder: Path, root: Path) -> Exercise:
    meta_path = folder / "exercise.toml"
    try:
        meta = tomllib.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError("no exercise.toml") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"exercise.toml does not parse: {exc}") from None
    except OSError as exc:  # unreadable, or a folder where the file should be
        raise ValueError(f"exercise.toml cannot be read: {exc.strerror or exc}") from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"exercise.toml format_version is {meta.get('format_version')!r}, this mlprep reads {FORMAT_VERSION}")
    for name in ("functions", "hints"):
        if not isinstance(meta.get(name, []), list):  # a bare string would become a tuple of its letters
            raise ValueError(f"exercise.toml: {name} must be a list of strings, not {type(meta[name]).__name__}")
    try:
        exercise = Exercise(
            id=folder.name,
            title=str(meta["title"]),
            kind=str(meta["kind"]),
            topic=str(meta["topic"]),
            difficulty=str(meta["difficulty"]),
            source=str(meta.get("source", "")),
            functions=tuple(str(f) for f in meta.get("functions", [])),
            timeout_s=float(meta.get("timeout_s", 10)),
            memory_mb=int(meta.get("memory_mb", 2048)),
            order=int(meta.get("order", 1000)),
            hints=tuple(str(h) for h in meta.get("hints", [])),
            root=root,
        )
    except KeyError as exc:
        raise ValueError(f"exercise.toml lacks {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"exercise.toml has a bad value: {exc}") from None
    if exercise.kind not in KINDS:
        raise ValueError(f"kind {exercise.kind!r} is not one of {', '.join(KINDS)}")
    if not exercise.timeout_s > 0:
        raise ValueError(f"timeout_s must be more than 0 seconds, not {exercise.timeout_s:g}")
    if exercise.difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty {exercise.difficulty!r} is not one of {', '.join(DIFFICULTIES)}")
    for required in (exercise.prompt_path, exercise.stub_path, exercise.grader_path, exercise.reference_path):
        if not required.is_file():
            raise ValueError(f"missing {required.relative_to(root)}")
    return exercise


def load_bank(root: Path | None = None) -> Bank:
    root = Path(root).resolve() if root is not None else bank_root()
    exercises_dir = root / "exercises"
    if not exercises_dir.is_dir():
        raise MlprepError(f"no exercise bank at {root} (expected an exercises/ folder)")
    exercises: list[Exercise] = []
    broken: list[tuple[str, str]] = []
    for folder in sorted(p for p in exercises_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        try:
            exercises.append(_read_exercise(folder, root))
        except ValueError as exc:
            broken.append((folder.name, str(exc)))
    exercises.sort(key=lambda e: (e.order, e.id))
    return Bank(root, exercises, broken)
