"""Mistake diagnosis: does a failing submission behave exactly like one of the exercise's known bugs?

    diagnose(exercise, result, device="auto") -> Diagnosis

Each known-bug variant (solutions/<id>/bugs.toml) is graded like any submission, once per version of
the exercise (grader, reference, bugs, toolkit) and device, and what its grade shows is kept as a
fingerprint (cached in the data folder; the self-check fills the cache as it goes). A failing grade
matches a variant when

  - the same checks do not pass, with the same status (fail, error, timeout): checks that did not
    run in either grade (skipped) are left out; an error must be the same exception on the same input;
  - where both failed a check on the same input, they agree on what failed: the same quantity
    (`what`), at the same index, with values within the check's tolerance; and a check that failed on
    different inputs without shrinking (its cases are fixed) is a difference in behaviour.

So a diagnosis is evidence about behaviour on the grader's inputs, not about the code: two mistakes
that fail the same checks the same way cannot be told apart (the diagnosis names both), and a
submission with a known mistake plus another one matches none; the diagnosis then says which known
mistake explains part of its failures (every check that mistake fails, it fails too, some the same
way), and which failures are left.

Inputs are compared up to rounding (a trajectory's later steps start from the submission's own
state), values within the check's tolerance, messages of checks that record no value with their
numbers at 4 significant digits.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mlprep.bank import Bug, Exercise
from mlprep.results import GradeResult

NOT_PASSING = ("fail", "error", "timeout")
_FORMAT = 4  # of the cached fingerprints: raise it whenever `fingerprint` changes


@dataclass(frozen=True)
class CheckPrint:
    """What one check's verdict shows of a submission's behaviour."""

    status: str
    input: str = ""  # the failing input, when its check's cases are fixed (not shrunk)
    first_failure: str = ""  # the case the check first failed on, when the input was shrunk
    what: str = ""
    index: str = ""
    got: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    error_type: str = ""
    message: str = ""  # the failure's message, numbers rounded: compared where no quantity (`what`, `got`) is recorded


_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")


_TRACEBACK_LINE = re.compile(r"^\s+line \d+, in .*$", re.MULTILINE)
_NON_FINITE = re.compile(r"(?<![\w.])-?(?:nan|inf)(?![\w.])")


def _rounded(message: str) -> str:
    """The message as evidence of behaviour: every decimal number at 4 significant digits (rounding
    noise of another implementation of the same behaviour is no difference), inf and NaN alike (which
    of them an overflow ends in depends on the formula), and the lines of the learner's traceback left
    out (they name the learner's own lines)."""
    message = _TRACEBACK_LINE.sub("", message).rstrip()
    message = _NON_FINITE.sub("non-finite", message)
    return _NUMBER.sub(lambda m: f"{float(m.group()):.4g}", message)


def fingerprint(result: GradeResult) -> dict[str, CheckPrint]:
    """Per check that ran: its status and, for a failure, what it compared and the value it got."""
    prints = {}
    for check in result.checks:
        if check.status == "skip":
            continue
        details = check.details if check.status in NOT_PASSING else {}
        shrunk = "first_failure" in details
        prints[check.name] = CheckPrint(
            status=check.status,
            input="" if shrunk or check.status == "pass" else check.failing_input,
            first_failure=str(details.get("first_failure", "")),
            what=str(details.get("what", "")),
            index=str(details.get("first_index", "")),
            got=str(details.get("got", "")),
            rtol=_number(details.get("rtol")) or 0.0,
            atol=_number(details.get("atol")) or 0.0,
            error_type=str(details.get("type", "")) if check.status == "error" else "",
            # A check that records no compared quantity is told apart by what its message says.
            message=_rounded(check.message) if check.status == "fail" and not ({"what", "got"} & details.keys()) else "",
        )
    return prints


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


_ANY_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d*)?(?:e[-+]?\d+)?")
INPUT_RTOL = 1e-3  # inputs built from the submission's own earlier results carry its rounding (float16's included)


def _same_input(a: str, b: str) -> bool:
    """The same code with the same numbers, up to rounding: a failing input can hold values the
    submission computed itself (the state after step 1 of a trajectory), and another implementation
    of the same behaviour rounds them differently in the last digits."""
    if a == b:
        return True
    if _ANY_NUMBER.split(a) != _ANY_NUMBER.split(b):
        return False
    x, y = [float(n) for n in _ANY_NUMBER.findall(a)], [float(n) for n in _ANY_NUMBER.findall(b)]
    return all(abs(p - q) <= INPUT_RTOL * max(abs(p), abs(q)) for p, q in zip(x, y))


def _values_agree(a: CheckPrint, b: CheckPrint) -> bool:
    if a.got == b.got:
        return True
    x, y = _number(a.got), _number(b.got)
    if x is None or y is None:
        return False
    if not (math.isfinite(x) and math.isfinite(y)):  # an overflow ends in inf or NaN depending on the formula
        return not math.isfinite(x) and not math.isfinite(y)
    rtol, atol = max(a.rtol, b.rtol), max(a.atol, b.atol)
    return abs(x - y) <= atol + rtol * max(abs(x), abs(y))


def same_behaviour(a: CheckPrint, b: CheckPrint) -> bool:
    """Whether two verdicts of one check show the same behaviour, as far as they can be compared."""
    if a.status != b.status:
        return False
    if a.status == "error":  # the same exception, on the same input
        same_type = not (a.error_type and b.error_type) or a.error_type == b.error_type
        return same_type and (not (a.input and b.input) or _same_input(a.input, b.input))
    if a.status != "fail":
        return True
    if a.input and b.input:  # fixed cases: the first failing case and what failed on it must agree
        if not _same_input(a.input, b.input):
            return False
        if a.message or b.message:  # the check recorded no value: its message says what failed
            return a.message == b.message
        return a.what == b.what and a.index == b.index and _values_agree(a, b)
    if a.first_failure and b.first_failure:  # both shrunk: they first failed on the same case
        return a.first_failure == b.first_failure
    return True  # one shrunk, the other not: nothing to compare


def matches(learner: dict[str, CheckPrint], variant: dict[str, CheckPrint]) -> bool:
    """Same checks not passing, the same way, on every check both ran."""
    common = learner.keys() & variant.keys()
    failing = [name for name in common if learner[name].status in NOT_PASSING]
    if not failing:
        return False
    return all(same_behaviour(learner[name], variant[name]) for name in common)


def explained_part(learner: dict[str, CheckPrint], variant: dict[str, CheckPrint]) -> list[str] | None:
    """The learner's failures a variant explains, when it explains some but not all (a known mistake
    plus another): every check the variant fails, the learner fails too, at least one of them the same
    way, and the learner fails more. None otherwise. (A second mistake can make a check the variant
    fails fail earlier, for the other reason: that check is then not counted as explained.)"""
    common = learner.keys() & variant.keys()
    theirs = [name for name in common if variant[name].status in NOT_PASSING]
    ours = {name for name in common if learner[name].status in NOT_PASSING}
    if not theirs or not set(theirs) <= ours:
        return None
    explained = [name for name in theirs if same_behaviour(learner[name], variant[name])]
    return explained if explained and len(explained) < len(ours) else None


def same_failing_checks(learner: dict[str, CheckPrint], variant: dict[str, CheckPrint]) -> bool:
    common = learner.keys() & variant.keys()
    return any(learner[n].status in NOT_PASSING for n in common) and all(
        (learner[n].status in NOT_PASSING) == (variant[n].status in NOT_PASSING) for n in common)


@dataclass
class Diagnosis:
    """Which known mistakes a failing grade matches, resembles, or partly explains."""
    exercise_id: str
    known: int  # how many known mistakes the exercise has
    matched: list[Bug] = field(default_factory=list)
    similar: list[Bug] = field(default_factory=list)  # the same checks fail, but not the same way
    partly: list[tuple[Bug, list[str], list[str]]] = field(default_factory=list)  # (mistake, checks it explains, the other failures)
    passed: bool = False

    @property
    def found(self) -> bool:
        return bool(self.matched)

    def text(self) -> str:
        if self.passed:
            return f"Nothing to diagnose: this grade of {self.exercise_id} passed."
        if not self.known:
            return f"{self.exercise_id} has no known mistakes to compare with."
        if len(self.matched) == 1:
            return f"This matches a known mistake: {self.matched[0].summary} ({self.matched[0].name})."
        if self.matched:
            names = "\n".join(f"  - {bug.summary} ({bug.name})" for bug in self.matched)
            return f"This matches {len(self.matched)} known mistakes, which fail the grader's checks in the same way:\n{names}"
        text = (f"This does not match any of the {self.known} known mistakes of {self.exercise_id}: none of them fails the same checks"
                " in the same way.")
        if self.partly:
            bug, explained, others = self.partly[0]
            text += (f" Part of it does: {bug.summary} ({bug.name}) fails {_names(explained)} the same way, but your code also fails"
                     f" {_names(others)}, which that mistake alone does not.")
        elif self.similar:
            names = ", ".join(bug.name for bug in self.similar)
            text += f" ({names} fail{'s' * (len(self.similar) == 1)} the same checks, with other values or on other inputs.)"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"exercise": self.exercise_id, "known_mistakes": self.known, "passed": self.passed,
                "matched": [{"name": b.name, "summary": b.summary} for b in self.matched],
                "partly": [{"name": b.name, "explains": explained, "other_failures": others} for b, explained, others in self.partly],
                "similar": [b.name for b in self.similar], "text": self.text()}


def _names(checks: list[str], at_most: int = 3) -> str:
    quoted = [f"'{name}'" for name in checks[:at_most]] + ([f"{len(checks) - at_most} more checks"] if len(checks) > at_most else [])
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def diagnose_prints(exercise: Exercise, learner: dict[str, CheckPrint], known: dict[str, dict[str, CheckPrint]], passed: bool = False) -> Diagnosis:
    bugs = {bug.name: bug for bug in exercise.bugs()}
    diagnosis = Diagnosis(exercise.id, len(bugs), passed=passed)
    if passed:
        return diagnosis
    for name, variant in known.items():
        if name not in bugs:
            continue
        if matches(learner, variant):
            diagnosis.matched.append(bugs[name])
        elif same_failing_checks(learner, variant):
            diagnosis.similar.append(bugs[name])
        elif (explained := explained_part(learner, variant)) is not None:
            others = [n for n, p in learner.items() if p.status in NOT_PASSING and n not in explained]
            diagnosis.partly.append((bugs[name], explained, others))
    diagnosis.partly.sort(key=lambda part: len(part[2]))  # the mistake that explains the most failures first
    return diagnosis


def diagnose(exercise: Exercise, result: GradeResult, *, device: str = "auto", on_learning: Callable[[int], None] | None = None) -> Diagnosis:
    """Compare a grade with the known mistakes' grades on the same device setting (learned on first use)."""
    if result.passed:
        return Diagnosis(exercise.id, len(exercise.bugs()), passed=True)
    return diagnose_prints(exercise, fingerprint(result), known_prints(exercise, device, on_learning=on_learning))


# ---------------------------------------------------------------------------------------------
# The known mistakes' fingerprints, graded once per version of the exercise and cached
# ---------------------------------------------------------------------------------------------
_cache: dict[str, dict[str, dict[str, CheckPrint]]] = {}
_cache_lock = threading.Lock()


def _key(exercise: Exercise, device: str) -> str:
    from mlprep.grading.engine import version_key

    digest = hashlib.sha256(version_key(exercise, device).encode())
    bugs_file = exercise.root / "solutions" / exercise.id / "bugs.toml"
    digest.update(bugs_file.read_bytes() if bugs_file.is_file() else b"")
    digest.update(f"format {_FORMAT}".encode())
    return digest.hexdigest()[:32]


def _cache_file(exercise: Exercise) -> Path:
    from mlprep.workspace import data_dir

    return data_dir() / "cache" / "diagnosis" / f"{exercise.id}.json"


def _load(exercise: Exercise, key: str) -> dict[str, dict[str, CheckPrint]]:
    try:
        data = json.loads(_cache_file(exercise).read_text(encoding="utf-8"))
        if data.get("key") != key:
            return {}
        return {bug: {check: CheckPrint(**fields) for check, fields in prints.items()} for bug, prints in data["bugs"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def _save(exercise: Exercise, key: str, known: dict[str, dict[str, CheckPrint]]) -> None:
    """Best effort: a data folder that cannot be written only means grading the variants again next time."""
    from dataclasses import asdict

    from mlprep.workspace import atomic_write

    data = {"key": key, "bugs": {bug: {check: asdict(p) for check, p in prints.items()} for bug, prints in known.items()}}
    try:
        atomic_write(_cache_file(exercise), json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass


def remember(exercise: Exercise, device: str, prints: dict[str, dict[str, CheckPrint]]) -> None:
    """Keep the fingerprints of known-bug grades, also of grades made elsewhere (the self-check grades every variant anyway)."""
    key = _key(exercise, device)
    with _cache_lock:
        known = _cache.setdefault(key, _load(exercise, key))
        known.update(prints)
        _save(exercise, key, known)


def known_prints(exercise: Exercise, device: str, *, on_learning: Callable[[int], None] | None = None) -> dict[str, dict[str, CheckPrint]]:
    """Fingerprints of every known-bug variant: from the cache, else graded now (in parallel)."""
    from mlprep.grading.engine import grade_file

    key = _key(exercise, device)
    with _cache_lock:
        known = _cache.setdefault(key, _load(exercise, key))
        missing = [bug for bug in exercise.bugs() if bug.name not in known]
    if missing:
        if on_learning is not None:
            on_learning(len(missing))
        reference = exercise.reference_path.read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix="mlprep-diagnosis-") as tmp:
            def grade(bug: Bug) -> tuple[str, GradeResult]:
                path = Path(tmp) / f"bug_{bug.name}.py"
                path.write_text(bug.apply(reference), encoding="utf-8")
                return bug.name, grade_file(exercise, path, device=device)

            with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
                graded = dict(pool.map(grade, missing))
        remember(exercise, device, {name: fingerprint(result) for name, result in graded.items() if not result.internal_error})
    with _cache_lock:
        return dict(_cache[key])
