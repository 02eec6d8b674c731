"""Mock interviews: pick a mostly unseen mix, run it in the practice loop against a countdown, then
grade everything once more and keep a report (in the store, and as report.json in its folder).

Each interview works in its own folder (<workspace>/interviews/<UTC time>), on fresh stubs: the
learner's practice attempts are never touched, and never handed to them as a head start.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.text import Text

from mlprep.bank import Bank, Exercise
from mlprep.clock import Clock, iso
from mlprep.errors import MlprepError
from mlprep.kinds import kind_of
from mlprep.practice.attempts import fresh_stub
from mlprep.practice.grading import grade_attempt
from mlprep.practice.questions import ask_followups
from mlprep.practice.watch import LoopItem, LoopOutcome, LoopPolicy, PracticeLoop
from mlprep.progress.store import Interview, InterviewItem, Store
from mlprep.text import plural
from mlprep.workspace import default_workspace

TIERS = ("todo", "attempted", "passed")  # unseen first: an interview is about what you have not practised


def pick_exercises(exercises: Sequence[Exercise], statuses: dict[str, str], *, count: int, topic: str | None, rng: random.Random) -> list[Exercise]:
    """`count` exercises (fewer if the bank has fewer), unseen ones first; within each tier the
    kinds take turns, so a bank with code and quiz exercises gives a mix of both."""
    candidates = [e for e in exercises if topic is None or e.topic == topic]
    picked: list[Exercise] = []
    for tier in TIERS:
        by_kind: dict[str, list[Exercise]] = {}
        for exercise in candidates:
            if statuses.get(exercise.id, "todo") == tier:
                by_kind.setdefault(exercise.kind, []).append(exercise)
        for group in by_kind.values():
            rng.shuffle(group)
        kinds = sorted(by_kind)
        rng.shuffle(kinds)
        while any(by_kind.values()):
            for kind in kinds:
                if by_kind[kind]:
                    picked.append(by_kind[kind].pop())
    picked = picked[:count]
    rng.shuffle(picked)  # the unseen ones need not come first on the day
    return picked


def interview_folder(workspace: Path, clock: Clock) -> Path:
    base = workspace / "interviews" / clock.now().strftime("%Y%m%dT%H%M%SZ")
    folder, n = base, 1
    while folder.exists():
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    return folder


def finish_interview(
    store: Store,
    outcome: LoopOutcome,
    *,
    started_at: str,
    clock: Clock,
    minutes: float,
    seed: int,
    topic: str | None,
    folder: Path,
    grade: Callable[[Exercise, Path], object] | None,
    on_graded: Callable[[Exercise], None] = lambda _exercise: None,
) -> Interview:
    """Grade every exercise of the interview as it is now (reusing the loop's grade when the file has
    not changed since), record the interview, write report.json; return it. `grade` None: no
    final grading (after SIGTERM), the loop's latest grades stand."""
    rows = []
    for item in outcome.items:
        result, grade_id = item.result, item.grade_id
        if grade is not None and item.path is not None and item.path.is_file():
            content = item.path.read_bytes()
            if result is None or content != item.graded_content:
                result = grade(item.exercise, item.path)
                grade_id = store.record_grade(result, source="interview", path=item.path)
            on_graded(item.exercise)
        if result is None:
            rows.append(InterviewItem(item.exercise.id, item.exercise.kind, "not graded", (), round(item.seconds, 1), item.hints_used, None))
            continue
        failed = tuple(c.name for c in result.failed_checks())
        status = "internal error" if result.internal_error else result.status
        rows.append(InterviewItem(item.exercise.id, item.exercise.kind, status, failed, round(item.seconds, 1), item.hints_used, grade_id))
    interview = Interview(started_at, iso(clock.now()), minutes, seed, topic, "time" if outcome.ended_by == "time" else "quit", str(folder), tuple(rows))
    interview_id = store.record_interview(interview)
    interview = interview._replace(id=interview_id)
    write_report(interview, folder / "report.json")
    return interview


def review_next(interview: Interview, bank: Bank) -> list[str]:
    """What to look at next, most useful first: what did not pass, then what passed only with hints."""
    lines = []
    known = {e.id: e for e in bank.exercises}
    for item in interview.items:
        if item.status != "pass":
            first = f": first failed check: {item.checks_failed[0]}" if item.checks_failed else ""
            lines.append(f"{item.exercise_id} did not pass{first} — `mlprep attempt {item.exercise_id}` to work on it, or `mlprep review` tomorrow")
    for item in interview.items:
        if item.status == "pass" and item.hints_used:
            lines.append(f"{item.exercise_id} passed with {plural(item.hints_used, 'hint')} — redo it without them in a few days")
    weak = sorted({known[i.exercise_id].topic for i in interview.items if i.status != "pass" and i.exercise_id in known})
    if weak:
        lines.append(f"topics to revisit: {', '.join(weak)} (`mlprep list --topic {weak[0]}`)")
    return lines


def report_dict(interview: Interview, followups: list[dict] | None = None) -> dict:
    """followups: the follow-up questions asked after the code ({exercise, question, text, right,
    explanation}), scored apart from it."""
    data = {
        "id": interview.id,
        "started_at": interview.started_at,
        "finished_at": interview.finished_at,
        "minutes": interview.minutes,
        "seed": interview.seed,
        "topic": interview.topic,
        "ended_by": interview.ended_by,
        "passed": interview.passed,
        "exercises": [
            {"id": i.exercise_id, "kind": i.kind, "status": i.status, "checks_failed": list(i.checks_failed), "seconds": i.seconds, "hints_used": i.hints_used}
            for i in interview.items
        ],
    }
    if followups:
        data["followups"] = {"right": sum(f["right"] for f in followups), "asked": len(followups), "questions": followups}
    return data


def write_report(interview: Interview, path: Path, followups: list[dict] | None = None) -> None:
    from mlprep.workspace import atomic_write

    try:
        atomic_write(path, json.dumps(report_dict(interview, followups), indent=2) + "\n")
    except OSError as exc:
        raise MlprepError(f"the interview is recorded, but its report could not be written to {path}: {exc.strerror or exc}") from None


def interview_candidates(bank: Bank) -> list[Exercise]:
    """What an interview picks from: code is written in the loop; the quizzes' questions come as each exercise's follow-ups."""
    return [e for e in bank.exercises if kind_of(e).runs_code]


@dataclass
class InterviewRun:
    """A finished mock interview: its record, the follow-ups asked, how it ended, and where its report is."""
    record: Interview
    followups: list[dict]  # the follow-up questions asked after the code, marked (see practice.questions.ask_followups)
    ended_by: str  # how the practice loop ended
    report_path: Path


def run_interview(store: Store, bank: Bank, picked: list[Exercise], clock: Clock, console: Console, *, minutes: float, seed: int,
                  topic: str | None = None, manual: bool = False, editor: str | None = None, stdin: TextIO | None = None) -> InterviewRun:
    """The interview of the exercises `picked`: the practice loop against a countdown on fresh stubs in
    the interview's own folder, then everything graded once more, the follow-up questions asked, and
    the report recorded and written."""
    folder = interview_folder(default_workspace(), clock)
    started_at = iso(clock.now())

    def prepare(exercise: Exercise) -> Path:
        path = kind_of(exercise).attempt_path(folder, exercise)
        fresh_stub(exercise, path)
        return path

    items = [LoopItem(e, prepare(e)) for e in picked]  # every file exists from the start: the learner may open them all
    policy = LoopPolicy(mode="interview", source="interview", prepare=prepare, free_navigation=True, solutions=False,
                        deadline=clock.monotonic() + minutes * 60, confirm_quit=True, editor=editor)
    loop = PracticeLoop(store, bank, items, policy, clock=clock, console=console, manual=manual, stdin=stdin)
    loop.notes = [Text(f"mock interview: {plural(len(items), 'exercise')}, {plural(minutes, 'minute')} (seed {seed}); "
                       f"files in {folder}; n/p move between them; q ends early; solutions open afterwards", style="bold")]
    outcome = loop.run()
    console.print("time is up" if outcome.ended_by == "time" else "the interview is over", style="bold", markup=False)
    terminated = outcome.ended_by == "terminate"
    if not terminated:
        console.print(f"grading {plural(len(items), 'exercise')}…", markup=False)
    record = finish_interview(store, outcome, started_at=started_at, clock=clock, minutes=minutes, seed=seed, topic=topic, folder=folder,
                              grade=None if terminated else grade_attempt)
    # The follow-ups are about the code: an exercise left as its stub has none to ask.
    written = [item.exercise for item in outcome.items if item.path is not None and item.path.is_file()
               and not kind_of(item.exercise).is_untouched(item.exercise, item.path)]
    followups = [] if terminated else ask_followups(written, console, random.Random(seed), stdin or sys.stdin)
    if followups:
        write_report(record, folder / "report.json", followups)
    return InterviewRun(record, followups, outcome.ended_by, folder / "report.json")
