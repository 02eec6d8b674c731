"""Grading what the learner wrote: deciding what to grade (the attempted exercises, files, a folder, a
shard of it), grading it (one function grades an attempt, whatever its kind), recording the grades,
and what may follow a failed grade (the diagnosis of a known mistake, repro scripts). The `grade`
command, the practice loop, interviews and `pytest --mlprep` all grade through here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from mlprep.bank import Bank, Exercise
from mlprep.errors import MlprepError
from mlprep.kinds import kind_of
from mlprep.practice.attempts import attempt_location
from mlprep.progress.store import Store

if TYPE_CHECKING:
    from mlprep.grading.diagnosis import Diagnosis
    from mlprep.grading.repro import ReproScripts
    from mlprep.results import GradeResult


@dataclass(frozen=True)
class Target:
    """A file to grade against an exercise; `source` "workspace" (the learner's attempt) or "file" (any file)."""

    exercise: Exercise
    path: Path
    source: str


def grade_attempt(exercise: Exercise, path: Path, *, device: str = "auto", timeout_s: float | None = None, reveal: bool = False) -> GradeResult:
    """Grade one attempt of any kind (code runs through the engine, imported only then)."""
    return kind_of(exercise).grade(exercise, path, device=device, timeout_s=timeout_s, reveal=reveal)


def choose_targets(store: Store, bank: Bank, ids: Sequence[str], files: Sequence[Path], folder: Path | None,
                   shard: tuple[int, int] | None) -> tuple[list[Target], list[str]]:
    """What `mlprep grade` grades: the files of --file/--dir (a --shard K/N of them) against one exercise,
    else the attempts of the exercises named, else of every attempted one. Returns (targets, warnings
    about attempts skipped)."""
    if shard is not None and not (files or folder):
        raise MlprepError("--shard slices the files of --file/--dir: give them too")
    if files or folder is not None:
        if len(ids) != 1:
            raise MlprepError("--file and --dir grade files against exactly one exercise: give one ID, e.g. `mlprep grade ID --file PATH`")
        exercise = bank.get(ids[0])
        targets = [Target(exercise, path, "file") for path in submissions(files, folder, shard)]
        if not targets:
            raise MlprepError(f"--shard {shard[0]}/{shard[1]}: this slice holds none of the files")
        return targets, []
    warnings = []
    explicit = bool(ids)
    if not explicit:
        known = set(bank.ids())
        attempted = store.attempted_ids()
        warnings += [f"skipping {gone!r}: attempted, but no longer in the bank" for gone in attempted if gone not in known]
        ids = [i for i in attempted if i in known]
        if not ids:
            raise MlprepError("nothing to grade: no attempts yet; start one with `mlprep attempt ID`, or grade a file with `mlprep grade ID --file PATH`")
    targets = []
    for exercise_id in ids:
        exercise = bank.get(exercise_id)
        path = attempt_location(store, exercise, None)
        if path.is_file():
            targets.append(Target(exercise, path, "workspace"))
        elif explicit:
            raise MlprepError(f"no attempt of {exercise.id!r} at {path}: start it with `mlprep attempt {exercise.id}`, or grade a file with --file PATH")
        else:
            warnings.append(f"skipping {exercise.id!r}: its attempt {path} is gone (`mlprep reset {exercise.id}` writes a fresh stub)")
    if not targets:
        raise MlprepError("nothing to grade: none of the attempted exercises has a file left")
    return targets, warnings


def submissions(files: Sequence[Path], folder: Path | None, shard: tuple[int, int] | None) -> list[Path]:
    """The files to grade against one exercise: those named, then the folder's *.py (sorted), each
    once (as given: the engine resolves them); with a shard K/N, every N-th of them from the K-th on (the same slices on every machine)."""
    paths = list(files)
    if folder is not None:
        if not folder.is_dir():
            raise MlprepError(f"--dir: not a folder: {folder}")
        paths += sorted(p for p in folder.glob("*.py") if not p.name.startswith("."))
        if not paths:
            raise MlprepError(f"--dir: no .py files in {folder}")
    for path in paths:
        if not path.exists():
            raise no_such_file(path)
        if not path.is_file():
            raise MlprepError(f"not a file: {path}")
    unique = list({path.resolve(): path for path in paths}.values())
    if shard is not None:
        k, n = shard
        unique = unique[k - 1::n]
    return unique


def no_such_file(path: Path) -> MlprepError:
    """The error for a file that is not there, with the likeliest fix: a file of a close name beside
    it, the missing folder, or where a relative path was looked for."""
    folder = path.parent
    if not folder.is_dir():
        return MlprepError(f"no such file: {path} (there is no folder {folder})")
    import difflib

    close = difflib.get_close_matches(path.name, [p.name for p in folder.iterdir() if p.is_file()], n=1, cutoff=0.6)
    if close:
        return MlprepError(f"no such file: {path}; did you mean {folder / close[0]}?")
    if not path.is_absolute():
        return MlprepError(f"no such file: {path} (looked for {path.absolute()})")
    return MlprepError(f"no such file: {path}")


def grade_targets(store: Store, targets: Sequence[Target], *, device: str = "auto", timeout_s: float | None = None, record_files: bool = False,
                  parallel: bool = False, on_result: Callable[[Target, GradeResult], None] | None = None) -> list[GradeResult]:
    """Grade each target, in order; with `parallel`, code in parallel over the cores (one judge, one warm
    fork server, each file still in a sandbox of its own). A workspace attempt's grade is recorded, and
    the practice time up to it counted; a file's only with `record_files`."""
    if any(kind_of(t.exercise).runs_code for t in targets):
        from mlprep.grading.engine import require_device  # heavy: only grading code pays for it

        require_device(device)  # --device cuda without a GPU is a usage error, never a grade
    if parallel and all(kind_of(t.exercise).runs_code for t in targets):
        from mlprep.grading.engine import grade_files

        by_path = {t.path: t for t in targets}
        results = grade_files([(t.exercise, t.path) for t in targets], device=device, timeout_s=timeout_s,
                              on_result=None if on_result is None else lambda path, result: on_result(by_path[path], result))
    else:
        results = []
        for target in targets:
            if target.source == "workspace":  # before the grade: the time up to it since the last event, if the file was worked on
                store.record_cli_practice(target.exercise.id, _modified_at(target.path))
            results.append(grade_attempt(target.exercise, target.path, device=device, timeout_s=timeout_s, reveal=store.has_passed(target.exercise.id)))
            if on_result is not None:
                on_result(target, results[-1])
    for target, result in zip(targets, results):
        if target.source == "workspace" or record_files:
            store.record_grade(result, source=target.source, path=target.path)
    return results


def _modified_at(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None


def diagnose_grade(store: Store, exercise: Exercise, result: GradeResult, *, device: str = "auto",
                   on_learning: Callable[[int], None] | None = None) -> Diagnosis:
    """Whether a failed grade matches one of the exercise's known mistakes; one that names a mistake counts as a hint."""
    from mlprep.grading.diagnosis import diagnose

    diagnosis = diagnose(exercise, result, device=device, on_learning=on_learning)
    if diagnosis.found:
        store.record_diagnosis(exercise.id, [bug.name for bug in diagnosis.matched])
    return diagnosis


def write_repro(exercise: Exercise, result: GradeResult, path: Path) -> ReproScripts:
    """A standalone script per failed check, next to the file that was graded."""
    from mlprep.grading.repro import write_repro_scripts

    try:
        return write_repro_scripts(exercise, result, path)
    except OSError as exc:
        raise MlprepError(f"cannot write the repro scripts next to {path}: {exc.strerror or exc}") from None
