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
A quiz's questions and key, a story's template and sample answer, take the places of the stub and the
reference (LAYOUTS); neither has a grader.

Where the exercises come from: the bank inside mlprep (a source checkout, or the copy in the wheel),
or instead the folders $MLPREP_BANK names (several, separated by os.pathsep); and always the packs
installed as Python packages, through the entry point group `mlprep.banks` (each entry point names a
module whose folder is a bank, or a path, or a function returning one). An exercise's id is unique
across all of them.

This module must stay light (no numpy, no torch): `mlprep list` and friends import it. Finding the
installed packs needs importlib.metadata (20-30 ms, most of a quick command's budget), so what it
finds is cached in the data folder, keyed by the modification times of the folders on sys.path that
hold distributions (installing or removing one changes its folder's, and its number of entries).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import NamedTuple

from mlprep.errors import MlprepError, UnknownExercise
from mlprep.text import inert

FORMAT_VERSION = 1
DIFFICULTIES = ("easy", "medium", "hard")
PACK_GROUP = "mlprep.banks"  # the entry point group through which installed packages add exercises
BUILTIN_PACK = "mlprep"


class BankSource(NamedTuple):
    """Where one bank's exercises come from: a pack's name and its folder."""
    pack: str  # the pack's name: "mlprep" (built in), an entry point's name, or a $MLPREP_BANK folder's name
    root: Path


def builtin_root() -> Path:
    """mlprep's own bank: a source checkout's, else the copy inside the wheel."""
    package_dir = Path(__file__).resolve().parent
    checkout = package_dir.parent
    if (checkout / "exercises").is_dir() and (checkout / "graders").is_dir():
        return checkout
    return package_dir / "_bank"


def bank_sources() -> list[BankSource]:
    """Every bank in use: $MLPREP_BANK's folders (else the built-in bank), then the installed packs."""
    override = os.environ.get("MLPREP_BANK")
    if override:
        sources = [BankSource(Path(folder).resolve().name, Path(folder).resolve()) for folder in override.split(os.pathsep) if folder]
    else:
        sources = [BankSource(BUILTIN_PACK, builtin_root())]
    return sources + installed_packs()


def installed_packs() -> list[BankSource]:
    """The banks of the installed packs (entry point group mlprep.banks), cached (see the module's docstring)."""
    import json

    key = [[entry, stamp] for entry in sys.path if (stamp := _distributions_stamp(entry)) is not None]
    cache = _packs_cache()
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("key") == key:
            return [BankSource(name, Path(root)) for name, root in cached["packs"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    packs = _find_packs()
    try:
        from mlprep.workspace import atomic_write

        atomic_write(cache, json.dumps({"key": key, "packs": [[p.pack, str(p.root)] for p in packs]}))
    except OSError:
        pass  # a read-only data folder: found again next time
    return packs


def _distributions_stamp(entry: str) -> list[int] | None:
    """For a folder on sys.path that holds installed distributions: its modification time and its number
    of entries (a coarse clock may not tick between two installs), both of which change when one is
    installed there or removed. None for any other entry: the folder a command runs in (a learner's
    workspace changes all the time) holds none, and a distribution installed there makes it count."""
    try:
        names = os.listdir(entry or ".")
        if not any(name.endswith((".dist-info", ".egg-info")) for name in names):
            return None
        return [os.stat(entry or ".").st_mtime_ns, len(names)]
    except OSError:
        return None


def _packs_cache() -> Path:
    from mlprep.workspace import data_dir

    return data_dir() / "cache" / "packs.json"


def _find_packs() -> list[BankSource]:
    from importlib.metadata import entry_points

    packs = []
    for entry in sorted(entry_points(group=PACK_GROUP), key=lambda e: e.name):
        try:
            target = entry.load()
            if callable(target):
                target = target()
            root = Path(target.__file__).parent if hasattr(target, "__file__") else Path(target)
        except Exception as exc:  # noqa: BLE001 - a broken pack is named, never fatal to the rest
            raise MlprepError(f"the exercise pack {entry.name!r} ({entry.value}) cannot be loaded: {type(exc).__name__}: {exc}") from None
        packs.append(BankSource(entry.name, root.resolve()))
    return packs


class Layout(NamedTuple):
    """The files of an exercise of one kind: what an attempt starts from (in exercises/<id>/), the hidden
    answer (in solutions/<id>/), and whether a grader module (graders/<id>.py) judges it."""

    start: str
    answer: str
    grader: bool


# The records here and in the progress store are NamedTuples, not frozen dataclasses: every quick
# command imports these modules, and a frozen dataclass costs about half a millisecond to define.

# What each kind of exercise holds (how each kind behaves is mlprep.kinds' business).
LAYOUTS = {
    "code": Layout("stub.py", "reference.py", grader=True),
    "debug": Layout("stub.py", "reference.py", grader=True),  # the stub: the program with its bugs planted
    "quiz": Layout("quiz.toml", "key.toml", grader=False),  # the questions, the key
    "story": Layout("template.md", "sample.md", grader=False),  # the STAR template, the sample answer
}
KINDS = tuple(LAYOUTS)


class Bug(NamedTuple):
    """A known mistake of an exercise: its name, what it gets wrong, and the edits that plant it in the reference."""
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


class Exercise(NamedTuple):
    """One exercise of a bank, as its exercise.toml describes it; its files are found from `root` and `id`."""
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
    root: Path  # the bank root
    pack: str = BUILTIN_PACK  # the bank it comes from (mlprep list --pack)

    @property
    def dir(self) -> Path:
        return self.root / "exercises" / self.id

    @property
    def prompt_path(self) -> Path:
        return self.dir / "prompt.md"

    @property
    def layout(self) -> Layout:
        return LAYOUTS[self.kind]

    @property
    def stub_path(self) -> Path:
        """What an attempt starts from: the stub (code, debug), the questions (quiz: the answers file
        is made from them), the STAR template (story)."""
        return self.dir / self.layout.start

    @property
    def grader_path(self) -> Path:
        return self.root / "graders" / f"{self.id}.py"

    @property
    def solution_dir(self) -> Path:
        return self.root / "solutions" / self.id

    @property
    def reference_path(self) -> Path:
        """The hidden answer: the reference solution, the quiz's key, the story's sample answer."""
        return self.solution_dir / self.layout.answer

    def prompt(self) -> str:
        return self.prompt_path.read_text(encoding="utf-8")

    def stub(self) -> str:
        return self.stub_path.read_text(encoding="utf-8")

    def bugs(self) -> list[Bug]:
        import tomllib

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
    def __init__(self, root: Path, exercises: list[Exercise], broken: list[tuple[str, str]], packs: list[str] | None = None):
        self.root = root  # the first bank's folder
        self.exercises = exercises
        self.broken = broken  # (folder name, reason): shown, never fatal to the rest of the bank
        self.packs = packs or [BUILTIN_PACK]

    def ids(self) -> list[str]:
        return [e.id for e in self.exercises]

    def matching(self, *, topic: str | None = None, kind: str | None = None, pack: str | None = None) -> list[Exercise]:
        """The exercises of this topic, kind and pack (None: any); an unknown topic or pack is an error that says what there is."""
        topics = sorted({e.topic for e in self.exercises})
        if topic is not None and topic not in topics:
            from mlprep.text import suggestions

            close = suggestions(topic, topics, n=2)
            suggestion = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else f"; topics: {', '.join(topics)}"
            raise MlprepError(f"no topic {topic!r}{suggestion}")
        if pack is not None and pack not in self.packs:
            raise MlprepError(f"no pack {pack!r}; the packs in use: {', '.join(self.packs)}")
        return [e for e in self.exercises if topic in (None, e.topic) and kind in (None, e.kind) and pack in (None, e.pack)]

    def get(self, exercise_id: str) -> Exercise:
        for exercise in self.exercises:
            if exercise.id == exercise_id:
                return exercise
        for name, reason in self.broken:
            if name == exercise_id:
                raise MlprepError(f"exercise {exercise_id!r} is broken in this bank: {reason}")
        raise UnknownExercise(exercise_id, self.ids())


def _read_meta(folder: str, index: dict, fresh: dict) -> dict:
    """exercise.toml's contents, from the metadata index when the file is unchanged since it was
    indexed (its size and modification time), else parsed (and put in `fresh` for the next index)."""
    meta_path = os.path.join(folder, "exercise.toml")
    try:
        stat = os.stat(meta_path)
    except FileNotFoundError:
        raise ValueError("no exercise.toml") from None
    except OSError as exc:
        raise ValueError(f"exercise.toml cannot be read: {exc.strerror or exc}") from None
    stamp = [stat.st_mtime_ns, stat.st_size]
    known = index.get(meta_path)
    if known is not None and known[0] == stamp:
        fresh[meta_path] = known
        return known[1]
    import tomllib  # only for a file the index does not hold: most quick commands never parse TOML

    try:
        with open(meta_path, encoding="utf-8") as file:
            meta = tomllib.loads(file.read())
    except FileNotFoundError:
        raise ValueError("no exercise.toml") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"exercise.toml does not parse: {exc}") from None
    except OSError as exc:  # unreadable, or a folder where the file should be
        raise ValueError(f"exercise.toml cannot be read: {exc.strerror or exc}") from None
    fresh[meta_path] = [stamp, meta]
    return meta


_ID = re.compile(r"[a-z0-9][a-z0-9-]*")


def _read_exercise(name: str, root: Path, pack: str = BUILTIN_PACK, index: dict | None = None, fresh: dict | None = None) -> Exercise:
    """The exercise in root/exercises/<name>. Plain strings and os.stat, not pathlib: a quick command reads
    every exercise, and pathlib's joins were most of its time."""
    meta = _read_meta(os.path.join(root, "exercises", name), index if index is not None else {}, fresh if fresh is not None else {})
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"exercise.toml format_version is {meta.get('format_version')!r}, this mlprep reads {FORMAT_VERSION}")
    for listed in ("functions", "hints"):
        if not isinstance(meta.get(listed, []), list):  # a bare string would become a tuple of its letters
            raise ValueError(f"exercise.toml: {listed} must be a list of strings, not {type(meta[listed]).__name__}")
    if not _ID.fullmatch(name):
        raise ValueError("its folder's name is not an exercise id (lowercase letters, digits and -, as in `focal-loss`)")
    try:
        exercise = Exercise(
            id=name,
            title=inert(str(meta["title"])),  # a pack's text reaches the terminal: shown, never obeyed
            kind=str(meta["kind"]),
            topic=inert(str(meta["topic"])),
            difficulty=str(meta["difficulty"]),
            source=inert(str(meta.get("source", ""))),
            functions=tuple(str(f) for f in meta.get("functions", [])),
            timeout_s=float(meta.get("timeout_s", 10)),
            memory_mb=int(meta.get("memory_mb", 2048)),
            order=int(meta.get("order", 1000)),
            hints=tuple(inert(str(h)) for h in meta.get("hints", [])),
            root=root,
            pack=pack,
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
    layout = exercise.layout
    required = [("exercises", name, "prompt.md"), ("exercises", name, layout.start), ("solutions", name, layout.answer)]
    for parts in required + ([("graders", f"{name}.py")] if layout.grader else []):
        if not os.path.isfile(os.path.join(root, *parts)):
            raise ValueError(f"missing {'/'.join(parts)}")
    return exercise


def load_bank(root: Path | None = None) -> Bank:
    """The exercises of one bank folder (`root`), or of every bank in use (bank_sources)."""
    sources = [BankSource(Path(root).resolve().name, Path(root).resolve())] if root is not None else bank_sources()
    exercises: list[Exercise] = []
    broken: list[tuple[str, str]] = []
    where: dict[str, BankSource] = {}
    index, fresh = _load_index(), {}
    for source in sources:
        exercises_dir = source.root / "exercises"
        if not exercises_dir.is_dir():
            raise MlprepError(f"no exercise bank at {source.root} (expected an exercises/ folder)"
                              + ("" if source.pack == BUILTIN_PACK else f"; it comes from the pack {source.pack!r}"))
        for name in sorted(e.name for e in os.scandir(exercises_dir) if e.is_dir() and not e.name.startswith((".", "_"))):
            if name in where:
                first = where[name]
                raise MlprepError(f"exercise id {name!r} is in two banks: the pack {first.pack!r} ({first.root}) and the pack"
                                  f" {source.pack!r} ({source.root}); ids must be unique: rename one, or uninstall one of the packs")
            where[name] = source
            try:
                exercises.append(_read_exercise(name, source.root, source.pack, index, fresh))
            except ValueError as exc:
                broken.append((name, str(exc)))
    exercises.sort(key=lambda e: (e.order, e.id))
    if any(index.get(path) != entry for path, entry in fresh.items()):
        _save_index({**index, **fresh})
    return Bank(sources[0].root, exercises, broken, [s.pack for s in sources])


# The metadata index: every exercise.toml read, with its size and modification time, in one JSON file
# in the data folder. Parsing 37 TOML files costs a quick command a fifth of its budget; one JSON file
# and a stat per exercise, a tenth of that.
INDEX_FORMAT = 1


def _index_path() -> Path:
    from mlprep.workspace import data_dir

    return data_dir() / "cache" / "bank-index.json"


def _load_index() -> dict:
    import json

    try:
        data = json.loads(_index_path().read_text(encoding="utf-8"))
        return data["files"] if data.get("format") == INDEX_FORMAT and isinstance(data.get("files"), dict) else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _save_index(files: dict) -> None:
    import json

    from mlprep.workspace import atomic_write

    try:
        atomic_write(_index_path(), json.dumps({"format": INDEX_FORMAT, "files": files}))
    except (OSError, TypeError, ValueError):
        pass  # a read-only data folder, or a value JSON cannot hold (a TOML date): parsed again next time
