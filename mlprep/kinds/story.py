"""Behavioural stories: a STAR answer written into a template, checked for structure only.

A story is a bank folder (kind = "story"): exercises/<id>/prompt.md (the question),
exercises/<id>/template.md (the headings the learner fills in), solutions/<id>/sample.md (a sample
answer, shown after grading for comparison), and in exercise.toml `sample_origin`, which says
truthfully where the sample comes from: "source" (the source text's own sample answer), "adapted"
(the source's sample, edited for mlprep: `sample_note` says how) or "outline" (written for mlprep
from the outline of an answer the source gives; the source has no sample).

What is checked is what an interviewer's rubric checks before the content: every section of
Situation, Task, Action, Result, Prevention is there and specific (enough words of the learner's own,
not the template's prompt), the Result has a quantified outcome (a before -> after of numbers, a
number with a metric's name or a unit, a percentage) and the Prevention a step or a lesson (a check
added, a process changed, what you would do differently). It never judges whether the story is good:
the grade says so.

Bounded like code grading: a story file over MAX_STORY_BYTES is refused (a usage error), every check
is linear in the text (no regular expression that can backtrack), and the grade stops at its time
limit (`--timeout`, else the exercise's timeout_s) with a timeout, checked between its steps.

Its self-check: the sample passes its own checks; the template, the sample without its Result's
numbers, and the sample without its Prevention, fail; the sample's origin is declared.

Light (no numpy, no torch).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from mlprep.bank import Exercise
from mlprep.errors import MlprepError
from mlprep.kinds.base import Block, Kind, Note, Shown
from mlprep.kinds.proof import ExerciseSelfCheck, Graded
from mlprep.results import CheckResult, GradeResult
from mlprep.text import plural, seconds_text

SECTIONS = ("Situation", "Task", "Action", "Result", "Prevention")
MIN_WORDS = {"Situation": 15, "Task": 10, "Action": 20, "Result": 10, "Prevention": 10}
MAX_STORY_BYTES = 256 * 1024  # about 40,000 words: a hundred times a long answer; grading stays in milliseconds
NOTICE = "mlprep checks your answer's structure, not its content: compare it with the sample answer"
ORIGINS = {  # each follows "the sample answer, "
    "source": "from the source text",
    "adapted": "from the source text, edited for mlprep",
    "outline": "written for mlprep from the source's outline (the source gives no sample)",
}

# -- reading the text: every pass below is linear in it --------------------------------------------

_HEADING = re.compile(r"^#{1,6}[ \t]*(.*)$", re.MULTILINE)
# A token: a number (digits with , or . between them, a currency sign before), an arrow, a word, or one other character.
_TOKEN = re.compile(r"[$€£]?\d+(?:[.,]\d+)*|->|=>|→|[A-Za-z][A-Za-z0-9_'’@-]*|\S")
_NUMBER = re.compile(r"[$€£]?\d")


def _without_comments(text: str) -> str:
    """The text with its <!-- ... --> comments removed (an unclosed one runs to the end), in one pass."""
    parts, start = [], 0
    while True:
        opening = text.find("<!--", start)
        if opening < 0:
            parts.append(text[start:])
            return "".join(parts)
        parts.append(text[start:opening])
        closing = text.find("-->", opening + 4)
        if closing < 0:
            return "".join(parts)
        start = closing + 3


def sections(text: str) -> dict[str, str]:
    """The text under each STAR heading (comments removed); a heading is matched by its first word."""
    found: dict[str, str] = {}
    matches = list(_HEADING.finditer(text))
    for number, match in enumerate(matches):
        words = match.group(1).strip().strip("#").split()
        title = words[0].rstrip(":").capitalize() if words else ""
        end = matches[number + 1].start() if number + 1 < len(matches) else len(text)
        if title in SECTIONS and title not in found:
            found[title] = _without_comments(text[match.end():end]).strip()
    return found


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9][\w'%.-]*", text)


# -- a quantified outcome -------------------------------------------------------------------------

PERCENT = {"%", "percent", "percentage", "pp", "bps", "bp"}
UNITS = {  # after a number: "40 min", "2 GB", "3x", "14 tickets"
    "x", "×", "ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr", "hrs", "hour", "hours",
    "day", "days", "week", "weeks", "month", "months", "quarter", "quarters", "year", "years",
    "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib", "byte", "bytes", "k", "m", "bn", "million", "billion", "thousand",
    "qps", "rps", "tps", "usd", "eur", "gbp", "dollars", "euros", "points", "point", "times", "fold",
    "users", "customers", "rows", "records", "requests", "orders", "tickets", "transactions", "jobs", "incidents", "alerts", "pages",
    "files", "runs", "models", "gpus", "nodes", "servers", "teams", "engineers", "queries", "samples", "labels", "errors", "bugs",
    "mismatches", "outages", "defects", "complaints", "clicks", "sessions", "calls", "steps", "epochs", "features", "documents",
}
METRICS = {  # a number within a few words of one of these: "accuracy 0.71", "F1 of 0.79", "p95 latency from 900"
    "accuracy", "precision", "recall", "f1", "f1-score", "auc", "roc-auc", "pr-auc", "auroc", "auprc", "ap", "map", "mrr", "ndcg",
    "bleu", "rouge", "perplexity", "loss", "log-loss", "error", "rmse", "mae", "mse", "mape", "r2", "latency", "throughput", "ctr",
    "cvr", "conversion", "revenue", "cost", "costs", "uptime", "availability", "coverage", "score", "rate", "p50", "p90", "p95", "p99",
    "ece", "brier", "calibration", "top-1", "top-5", "retention", "churn", "sla", "slo", "speedup", "memory", "savings", "agreement",
    "misrouted", "false", "positives", "negatives", "fpr", "tpr", "wer", "cer",
}
ARROWS = {"->", "=>", "→", "to"}
WINDOW = 3  # words between a number and its metric, or its arrow and the number after it


def quantified(text: str) -> bool:
    """Whether the text gives a quantified outcome: a number with a percentage or a unit after it, a
    number within a few words of a metric's name, or a before -> after of numbers. One pass over its
    tokens; a number is a number only in digits (a Result with no digit has none)."""
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    words = [t for t in tokens if t[0].isalnum() or t in ARROWS or t in PERCENT or t[0] in "$€£"]  # punctuation dropped
    for n, word in enumerate(words):
        if not _NUMBER.match(word):
            continue
        following, preceding = words[n + 1:n + 1 + WINDOW], words[max(0, n - WINDOW):n]
        if word[0] in "$€£" or (following and (following[0] in PERCENT or following[0] in UNITS)):
            return True  # "12%", "$40", "40 min", "3x"
        if any(w in METRICS for w in preceding + following[:2]):
            return True  # "accuracy 0.71", "F1 of 0.79", "0.84 AUC"
        for offset, w in enumerate(following):
            if w in ARROWS and any(_NUMBER.match(after) for after in words[n + 2 + offset:n + 2 + offset + WINDOW]):
                return True  # "0.71 -> 0.84", "from 40 to 6"
    return False


# -- a step, or a lesson, that keeps it from happening again ----------------------------------------

_STEP_WORDS = (  # word beginnings: "added", "tests", "monitoring", "validated", "automated"...
    "add", "alert", "monitor", "test", "check", "automat", "runbook", "dashboard", "validat", "gate", "review", "guard", "pin",
    "document", "rollout", "canary", "schema", "contract", "postmortem", "post-mortem", "retro", "checklist", "playbook", "process",
    "policy", "standard", "requir", "enforc", "introduc", "built", "wrote", "creat", "chang", "audit", "track", "measur", "version",
    "lesson", "learn", "hindsight", "would", "should", "wish", "next", "now", "since", "henceforth", "afterwards", "instead", "owner",
)
_STEP_PHRASES = ("set up", "made sure", "going forward", "from then on", "from now on", "i'd", "i’d", "we'd", "we’d", "do differently")


def has_step(text: str) -> bool:
    """Whether the text names a step (a check added, a process changed) or a lesson (what you would
    do differently next time, what you learned)."""
    lowered = text.lower()
    if any(phrase in lowered for phrase in _STEP_PHRASES):
        return True
    return any(word.startswith(_STEP_WORDS) for word in re.findall(r"[a-z][a-z'’-]*", lowered))


# -- grading ----------------------------------------------------------------------------------------


def story_meta(exercise: Exercise) -> dict:
    import tomllib  # only to grade or show a story

    try:
        return tomllib.loads((exercise.dir / "exercise.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def sample_label(exercise: Exercise, *, note: bool = False) -> str:
    """Where the sample answer comes from, in words (exercise.toml sample_origin), to follow "the
    sample answer, "; `note`: with what was changed from the source's (sample_note)."""
    meta = story_meta(exercise)
    label = ORIGINS.get(str(meta.get("sample_origin", "")), "of unstated origin")
    changed = str(meta.get("sample_note", "")).strip()
    return f"{label} ({changed})" if note and changed else label


def read_story(path: Path) -> str:
    """The story file's text; one too large to be an answer is a usage error, never a grade."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_STORY_BYTES + 1)
    except OSError as exc:
        raise MlprepError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_STORY_BYTES:
        raise MlprepError(f"{path} is over {MAX_STORY_BYTES // 1024} KiB: a story answer is a page or two of text, not a file of that size")
    return data.decode("utf-8", errors="replace")


def grade_story(exercise: Exercise, path: Path, *, timeout_s: float | None = None) -> GradeResult:
    return grade_story_text(exercise, read_story(path), timeout_s=timeout_s)


class _Deadline:
    def __init__(self, limit_s: float):
        self.limit_s, self.started = limit_s, time.monotonic()

    @property
    def passed(self) -> bool:
        return time.monotonic() - self.started > self.limit_s


def grade_story_text(exercise: Exercise, text: str, *, timeout_s: float | None = None) -> GradeResult:
    """The structure checks of a story's text, each with the sample's text of its section in its
    details (`sample`), for the screen to compare. Stops with a timeout once `timeout_s` (default:
    the exercise's) has passed, checked between the steps."""
    deadline = _Deadline(float(timeout_s) if timeout_s is not None else exercise.timeout_s)
    if len(text.encode("utf-8", errors="replace")) > MAX_STORY_BYTES:
        raise MlprepError(f"the story is over {MAX_STORY_BYTES // 1024} KiB: a story answer is a page or two of text")
    found = sections(text)
    template = sections(exercise.stub())
    try:
        sample = sections(sample_answer(exercise))
    except OSError:
        sample = {}
    checks: list[CheckResult] = []

    def timed_out() -> GradeResult | None:
        if not deadline.passed:
            return None
        done = ", ".join(c.name for c in checks) or "none"
        return GradeResult(exercise.id, "timeout", f"grading stopped at its time limit ({seconds_text(deadline.limit_s)}); checks done: {done}",
                           checks, device="")

    for name in SECTIONS:
        body = found.get(name)
        details = {"section": name, "sample": sample.get(name, "")}
        if body is None:
            checks.append(CheckResult(f"{name}: present", "fail", f"no `## {name}` section: keep the template's five headings and write under each",
                                      details))
        elif len(_words(body)) < MIN_WORDS[name] or body == template.get(name, None):
            checks.append(CheckResult(f"{name}: present and specific", "fail",
                                      f"{plural(len(_words(body)), 'word')} under `## {name}`: at least {MIN_WORDS[name]} of your own make it"
                                      " specific (what, where, when, who, how much)", details))
        else:
            checks.append(CheckResult(f"{name}: present and specific", "pass", "", details))
        stopped = timed_out()
        if stopped is not None:
            return stopped
    if quantified(found.get("Result", "")):
        checks.append(CheckResult("Result: a measured outcome", "pass", "", {"section": "Result"}))
    else:
        checks.append(CheckResult("Result: a measured outcome", "fail",
                                  "the Result has no quantified outcome: give numbers, in digits, with what they measure (\"accuracy 0.71 -> 0.84\","
                                  " \"p95 latency from 900 ms to 120 ms\", \"5% of orders\", \"2 days earlier\")", {"section": "Result"}))
    stopped = timed_out()
    if stopped is not None:
        return stopped
    if has_step(found.get("Prevention", "")):
        checks.append(CheckResult("Prevention: a step or a lesson", "pass", "", {"section": "Prevention"}))
    else:
        checks.append(CheckResult("Prevention: a step or a lesson", "fail",
                                  "the Prevention names no step and no lesson: what did you add or change so that it cannot happen again"
                                  " (a test, a check, an alert, a review), or what would you do differently next time?", {"section": "Prevention"}))
    bad = sum(c.status != "pass" for c in checks)
    status = "pass" if not bad else "fail"
    message = (f"the structure is complete: all {len(checks)} checks passed" if not bad else f"{bad} of {len(checks)} structure checks did not pass") \
        + f". {NOTICE}, {sample_label(exercise)}."
    return GradeResult(exercise.id, status, message, checks, device="")


def sample_answer(exercise: Exercise) -> str:
    return exercise.reference_path.read_text(encoding="utf-8")


def _strip_numbers(text: str) -> str:
    return re.sub(r"\d", "", text)


def check_story(exercise: Exercise) -> list[str]:
    """The self-check of a story: the sample passes; the template, the sample without its Result's
    numbers, and the sample without its Prevention fail; the sample's origin is declared."""
    problems = []
    sample = sample_answer(exercise)
    if not grade_story_text(exercise, sample).passed:
        problems.append("the sample answer does not pass its own structure checks")
    if grade_story_text(exercise, exercise.stub()).passed:
        problems.append("the untouched template passes")
    found = sections(sample)
    if "Result" in found and grade_story_text(exercise, sample.replace(found["Result"], _strip_numbers(found["Result"]))).passed:
        problems.append("the sample with the Result's numbers removed still passes")
    if "Prevention" in found and grade_story_text(exercise, sample.replace(found["Prevention"], "")).passed:
        problems.append("the sample without its Prevention still passes")
    for name in SECTIONS:
        if f"## {name}" not in exercise.stub():
            problems.append(f"template.md lacks the heading `## {name}`")
    meta = story_meta(exercise)
    if meta.get("sample_origin") not in ORIGINS:
        problems.append(f"exercise.toml must say where the sample comes from: sample_origin = {' | '.join(repr(o) for o in ORIGINS)}")
    elif meta["sample_origin"] == "adapted" and not str(meta.get("sample_note", "")).strip():
        problems.append("an adapted sample needs a sample_note saying what was changed from the source's")
    return problems


class StoryKind(Kind):
    name = "story"
    attempt_suffix = ".md"
    written = "the STAR template"

    def header_note(self, exercise: Exercise) -> str:
        return f"\nwrite it: `mlprep attempt {exercise.id}` writes the STAR template"

    def grade(self, exercise: Exercise, path: Path, *, device: str = "auto", timeout_s: float | None = None, reveal: bool = False) -> GradeResult:
        return grade_story(exercise, path, timeout_s=timeout_s)

    def shown_after_grade(self, exercise: Exercise, result: GradeResult) -> Shown:
        """Nothing more: the grade itself shows the sample's sections beside its checks (mlprep.screen.render)."""
        return ()

    def solution(self, exercise: Exercise, attempt: Path | None) -> Shown:
        changed = str(story_meta(exercise).get("sample_note", "")).strip()
        return (Block(f"the sample answer, {sample_label(exercise)}", sample_answer(exercise), "markdown"),
                *((Note(f"what mlprep changed from the source's sample: {changed}"),) if changed else ()))

    def prove(self, exercise: Exercise, graded: list[Graded], device: str) -> ExerciseSelfCheck:
        """Its sample passes; its template, and the sample without a measured result or a prevention, fail. No sandbox: nothing runs."""
        return ExerciseSelfCheck(exercise.id, reference=grade_story_text(exercise, sample_answer(exercise)).status,
                                 stub=grade_story_text(exercise, exercise.stub()).status, problems=check_story(exercise), kind=self.name)

    def proof_line(self, outcome: ExerciseSelfCheck) -> str:
        return f"sample {outcome.reference} · template {outcome.stub}"
