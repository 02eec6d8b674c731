"""The `mlprep` command line: parse, call one core function, render. No grading logic here.

Exit statuses (mlprep.errors.ExitStatus): 0 ok; 1 graded and something did not pass, or a
self-check miss; 2 usage: bad arguments, unknown id (with a suggestion), missing file, a refused
`solution`, an unusable progress store; 3 a bug in mlprep or a grader. 130: interrupted.

Errors: an MlprepError is printed to stderr as one line with its exit status; a usage error from
the argument parser likewise (exit 2); anything else is a bug in mlprep (exit 3). `--traceback`
(a global option: `mlprep --traceback grade ...`) adds the traceback. All of that happens once, in
MlprepGroup.main, which both `python -m mlprep` and typer's CliRunner go through.

Import time matters: `list`, `show`, `attempt`, `hint`, `solution`, `reset`, `progress` must never
import numpy or torch, so mlprep.engine and mlprep.selfcheck are imported inside `grade` and
`selfcheck` only (and by the practice loop's grader thread, on its first grade).

The practice loop (`attempt --watch`, `watch`, `interview`, `review`) lives in mlprep.watch; these
commands only pick what to practise, build its LoopPolicy and report the outcome.

No `from __future__ import annotations` here: typer would have to eval every annotation string of
every command at start-up (about 10 ms of each quick command).
"""

import json
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from mlprep import __version__
from mlprep.bank import KINDS, Bank, Exercise, load_bank
from mlprep.errors import ExitStatus, MlprepError
from mlprep.store import Store
from mlprep.term import plural

try:  # typer >= 0.2x vendors click; its parse errors derive from TyperException
    from typer import TyperException as _ParseError
except ImportError:  # pragma: no cover - older typer on top of click
    from click.exceptions import ClickException as _ParseError  # type: ignore[no-redef]

if TYPE_CHECKING:
    from rich.console import Console

    from mlprep.clock import Clock
    from mlprep.results import GradeResult
    from mlprep.watch import LoopItem, LoopOutcome, LoopPolicy


class Device(str, Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class ProgressStatus(str, Enum):
    todo = "todo"
    attempted = "attempted"
    passed = "passed"


Kind = Enum("Kind", {kind: kind for kind in KINDS}, type=str)  # the bank's kinds: code, debug, quiz, story


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _error(message: str) -> None:
    sys.stderr.write(f"mlprep: error: {_one_line(message)}\n")


def _warn(message: str) -> None:
    sys.stderr.write(f"mlprep: warning: {_one_line(message)}\n")


class MlprepGroup(TyperGroup):
    """The one place errors become exit statuses and one-line messages."""

    show_traceback = False

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        self.show_traceback = False  # set by the --traceback callback once parsing reaches it
        try:
            result = super().main(args=args, prog_name=prog_name or "mlprep", complete_var=complete_var, standalone_mode=False, **extra)
            # Non-standalone click returns the exit code of a typer.Exit, or the command's return value.
            code = result if isinstance(result, int) and not isinstance(result, bool) else 0
        except MlprepError as exc:
            self._maybe_traceback(exc)
            _error(exc.message)
            code = int(exc.exit_status)
        except _ParseError as exc:
            code = int(getattr(exc, "exit_code", ExitStatus.USAGE))
            context = getattr(exc, "ctx", None)
            where = context.command_path if context is not None else "mlprep"
            help_hint = f" (see `{where} --help`)" if context is not None else ""
            sys.stderr.write(f"{where}: error: {_one_line(exc.format_message())}{help_hint}\n")
        except typer.Abort:
            sys.stderr.write("mlprep: aborted\n")
            code = 130
        except Exception as exc:  # noqa: BLE001 - the last line of defence: a bug in mlprep
            self._maybe_traceback(exc)
            _error(f"internal error (a bug in mlprep, not in your code): {type(exc).__name__}: {exc}"
                   + ("" if self.show_traceback else "; rerun with `mlprep --traceback ...` and report it"))
            code = int(ExitStatus.INTERNAL)
        sys.stdout.flush()
        if standalone_mode:
            sys.exit(code)
        return code

    def _maybe_traceback(self, exc: BaseException) -> None:
        if self.show_traceback:
            import traceback

            traceback.print_exception(exc, file=sys.stderr)


app = typer.Typer(
    cls=MlprepGroup,
    name="mlprep",
    help="Practise the implementation side of ML interviews, offline: attempt an exercise, grade it, take hints.",
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish and PowerShell
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"mlprep {__version__}\n")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def _global_options(
    ctx: typer.Context,
    traceback: Annotated[bool, typer.Option("--traceback", help="Show the full traceback of errors (for reporting a bug).")] = False,
    version: Annotated[bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None,
) -> None:
    root = ctx.find_root().command
    if isinstance(root, MlprepGroup):
        root.show_traceback = traceback
    if ctx.invoked_subcommand is None:
        sys.stdout.write(ctx.get_help() + "\n")


# -- helpers ---------------------------------------------------------------------------------------


def _stdout() -> "Console":
    from rich.console import Console

    return Console(highlight=False)


def _stderr() -> "Console":
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _bank() -> Bank:
    return load_bank()


def _clock() -> "Clock":
    from mlprep.clock import SystemClock

    return SystemClock()


def _editor_setting() -> tuple[str | None, bool]:
    """(the `editor` setting, the `auto_edit` setting) from the config file."""
    from mlprep.config import load_config

    config = load_config()
    return config.get("editor"), bool(config.get("auto_edit", False))


def _check_topic(bank: Bank, topic: str | None) -> None:
    topics = sorted({e.topic for e in bank.exercises})
    if topic is not None and topic not in topics:
        import difflib

        close = difflib.get_close_matches(topic, topics, n=2, cutoff=0.5)
        suggestion = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else f"; topics: {', '.join(topics)}"
        raise MlprepError(f"no topic {topic!r}{suggestion}")


def _no_such_file(path: Path) -> MlprepError:
    """The error for a --file that is not there, with the likeliest fix: a file of a close name
    beside it, the missing folder, or where a relative path was looked for."""
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


def _write_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, allow_nan=False, default=str) + "\n")


def _positive(value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise typer.BadParameter("must be more than 0")
    return value


def _exit(status: ExitStatus) -> None:
    if status != ExitStatus.OK:
        raise typer.Exit(int(status))


def _complete_ids(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of an exercise id: the bank's ids starting with what is typed, with their titles."""
    try:
        return [(e.id, e.title) for e in load_bank().exercises if e.id.startswith(incomplete)]
    except MlprepError:
        return []  # a broken bank completes nothing; the command itself will say why


ExerciseId = Annotated[str, typer.Argument(metavar="ID", help="The exercise id (see `mlprep list`).", show_default=False, autocompletion=_complete_ids)]
WorkspaceOption = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", file_okay=False, help="Workspace folder [default: ~/mlprep, or $MLPREP_HOME/workspace].", show_default=False),
]
DeviceOption = Annotated[
    Device,
    typer.Option(
        "--device",
        help="Which device scenarios to run: cpu, cuda, or auto (both; the cuda ones are reported as skipped without a GPU).",
        case_sensitive=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


# -- commands --------------------------------------------------------------------------------------


@app.command("list")
def list_exercises(
    topic: Annotated[str | None, typer.Option("--topic", help="Only exercises of this topic.")] = None,
    status: Annotated[ProgressStatus | None, typer.Option("--status", help="Only exercises with this status.", case_sensitive=False)] = None,
    kind: Annotated[Kind | None, typer.Option("--kind", help="Only exercises of this kind.", case_sensitive=False)] = None,
    pack: Annotated[str | None, typer.Option("--pack", help="Only exercises of this pack (mlprep's own bank is 'mlprep').")] = None,
    as_json: JsonOption = False,
) -> None:
    """List the exercises with their status (todo, attempted, passed)."""
    from mlprep.term import Out, print_exercise_list

    bank = _bank()
    for name, reason in bank.broken:
        _warn(f"exercise {name!r} is broken and left out: {reason}")
    _check_topic(bank, topic)
    if pack is not None and pack not in bank.packs:
        raise MlprepError(f"no pack {pack!r}; the packs in use: {', '.join(bank.packs)}")
    with Store.open_default() as store:
        statuses = store.statuses()
    rows = [
        e for e in bank.exercises
        if (topic is None or e.topic == topic) and (status is None or statuses.get(e.id, "todo") == status.value)
        and (kind is None or e.kind == kind.value) and (pack is None or e.pack == pack)
    ]
    if as_json:
        _write_json([
            {"id": e.id, "title": e.title, "kind": e.kind, "topic": e.topic, "difficulty": e.difficulty, "status": statuses.get(e.id, "todo"), "pack": e.pack}
            for e in rows
        ])
        return
    out = Out()
    if rows:
        print_exercise_list(out, rows, statuses)
    else:
        out.line("no exercises match")


@app.command()
def show(exercise_id: ExerciseId) -> None:
    """Show an exercise's prompt (the task, its interface and what is graded)."""
    from mlprep.term import Out, print_exercise

    exercise = _bank().get(exercise_id)
    with Store.open_default() as store:
        status = store.statuses().get(exercise.id, "todo")
        recorded = store.latest_attempt(exercise.id)
    out = Out()
    print_exercise(out, exercise, status)
    if recorded is not None and recorded.path.exists():
        out.line(f"your attempt: {recorded.path}")
    else:
        out.line(f"start it with: mlprep attempt {exercise.id}")


ManualRunOption = Annotated[
    bool, typer.Option("--manual-run", help="Don't watch the file; regrade when you press r (for file systems where change events don't arrive).")
]
EditOption = Annotated[bool, typer.Option("--edit", "-e", help="Open the attempt in your editor (the editor setting, $VISUAL or $EDITOR).")]


@app.command()
def attempt(
    exercise_id: ExerciseId,
    edit: EditOption = False,
    watch: Annotated[bool, typer.Option("--watch", help="Stay in the practice loop: regrade on every save, keys for hints and the next exercise.")] = False,
    manual_run: ManualRunOption = False,
    workspace: WorkspaceOption = None,
    answers_file: Annotated[
        bool, typer.Option("--file", help="A quiz: write an answers file (TOML, the questions in it) to fill in and grade with `mlprep grade ID`,"
                                          " instead of asking here.")
    ] = False,
) -> None:
    """Start an exercise: write its stub to your workspace (never over an existing attempt). A quiz
    asks its questions here (or, with --file, writes an answers file); a story writes a STAR template."""
    from mlprep.practice import start_attempt
    from mlprep.term import Out, print_exercise
    from mlprep.workspace import open_in_editor

    bank = _bank()
    exercise = bank.get(exercise_id)
    editor, auto_edit = _editor_setting()
    if watch and not exercise.graded_by_code:
        raise MlprepError(f"{exercise.id} is a {exercise.kind}: the practice loop is for code; `mlprep attempt {exercise.id}` starts it")
    if answers_file and exercise.kind != "quiz":
        raise MlprepError(f"--file writes a quiz's answers file; {exercise.id} is a {exercise.kind}")
    with Store.open_default() as store:
        if exercise.kind == "quiz" and not answers_file:
            _exit(_quiz_in_terminal(store, exercise, workspace))
            return
        path, created = start_attempt(store, exercise, workspace)
        if watch:
            _exit(_watch_loop(store, bank, exercise, path, workspace, editor, manual_run, edit or auto_edit))
            return
        status = store.statuses().get(exercise.id, "todo")
    out = Out()
    if created:
        print_exercise(out, exercise, status)
        what = {"quiz": "the answers file (its questions are in it)", "story": "the STAR template"}.get(exercise.kind, "the stub")
        out.wrapped(f"\nwrote {what} to {path}")
    else:  # the prompt again would push this line off the screen: `mlprep show` has it
        out.wrapped(f"you already have an attempt at {path} (kept as it is; `mlprep show {exercise.id}` shows the prompt,"
                    f" `mlprep reset {exercise.id}` starts over)")
    loop = f"   (or stay in the loop: mlprep watch {exercise.id})" if exercise.graded_by_code else ""
    out.wrapped(f"edit it, then run: mlprep grade {exercise.id}{loop}")
    if edit or auto_edit:
        status_code = open_in_editor(path, editor)
        if status_code != 0:
            _warn(f"the editor exited with status {status_code}")


def _quiz_in_terminal(store: Store, exercise: Exercise, workspace: Path | None) -> ExitStatus:
    """Ask the quiz's questions here, one by one, in the order of the attempt's seed; write the
    answers into the attempt's answers file; grade and record it."""
    from mlprep.practice import start_attempt
    from mlprep.quiz import QuizAborted, as_grade, ask_questions, fill_answers, load_quiz, mark, read_answers_file
    from mlprep.render import render_grade

    quiz = load_quiz(exercise)
    path, _ = start_attempt(store, exercise, workspace)
    try:
        presentation, _, _ = read_answers_file(quiz, path)
    except MlprepError:  # an answers file broken by hand: a fresh one, the old one kept as a backup
        from mlprep.practice import fresh_stub

        fresh_stub(exercise, path)
        presentation, _, _ = read_answers_file(quiz, path)
    console = _stdout()
    console.print(f"{exercise.title} ({exercise.id}): {plural(len(quiz.questions), 'question')}, the pass mark is {quiz.pass_mark:.0%}. "
                  "Single keys pick an option; q leaves (nothing is graded).", markup=False, soft_wrap=True)
    try:
        responses = ask_questions(quiz, presentation, sys.stdin, console)
    except (QuizAborted, KeyboardInterrupt):
        console.print(f"\nleft the quiz: nothing graded (your answers file: {path})", markup=False, soft_wrap=True)
        return ExitStatus.OK
    fill_answers(quiz, path, presentation.seed, responses)
    result = as_grade(mark(quiz, presentation, responses), reveal=store.has_passed(exercise.id))
    store.record_grade(result, source="workspace", path=path)
    console.print()
    render_grade(console, result, path=str(path))
    return ExitStatus.OK if result.passed else ExitStatus.FAILED


@app.command()
def watch(
    exercise_id: Annotated[
        str | None, typer.Argument(metavar="ID", help="The exercise [default: the one you worked on last].", show_default=False, autocompletion=_complete_ids)
    ] = None,
    edit: EditOption = False,
    manual_run: ManualRunOption = False,
    workspace: WorkspaceOption = None,
) -> None:
    """The practice loop: regrade your attempt on every save. Keys: h hint, n next exercise (once this
    one passes), l list, s solution (after a pass), r regrade, e edit, q quit."""
    from mlprep.practice import start_attempt

    bank = _bank()
    editor, auto_edit = _editor_setting()
    with Store.open_default() as store:
        if exercise_id is None:
            known = set(bank.ids())
            code = {e.id for e in bank.exercises if e.graded_by_code}
            started = [a.exercise_id for a in store.attempts() if a.exercise_id in known and a.exercise_id in code]
            if not started:
                raise MlprepError("no exercise to resume: start one with `mlprep attempt ID --watch` or `mlprep watch ID`")
            exercise_id = started[-1]
        exercise = bank.get(exercise_id)
        if not exercise.graded_by_code:
            raise MlprepError(f"{exercise.id} is a {exercise.kind}: the practice loop is for code; `mlprep attempt {exercise.id}` starts it")
        path, _ = start_attempt(store, exercise, workspace)
        _exit(_watch_loop(store, bank, exercise, path, workspace, editor, manual_run, edit or auto_edit))


def _watch_loop(store: Store, bank: Bank, exercise: Exercise, path: Path, workspace: Path | None, editor: str | None, manual: bool, edit: bool) -> ExitStatus:
    from mlprep.practice import next_in_order, start_attempt
    from mlprep.watch import LoopItem, LoopPolicy

    policy = LoopPolicy(
        mode="watch",
        source="workspace",
        prepare=lambda e: start_attempt(store, e, workspace)[0],
        follow=lambda e: next_in_order([x for x in bank.exercises if x.graded_by_code], e, store.statuses()),
        editor=editor,
    )
    outcome = _run_loop(store, bank, [LoopItem(exercise, path)], policy, manual, clock=_clock(), edit=edit)
    console = _stdout()
    for item in outcome.items:
        verdict = "passed" if item.passed else "not graded" if item.result is None else item.result.status
        console.print(f"{item.exercise.id}: {verdict} ({item.path})", markup=False, soft_wrap=True)
    return _loop_exit(outcome)


def _run_loop(
    store: Store, bank: Bank, items: "list[LoopItem]", policy: "LoopPolicy", manual: bool, *, clock: "Clock", edit: bool = False, notes: Sequence[str] = (),
) -> "LoopOutcome":
    from rich.text import Text

    from mlprep.watch import PracticeLoop

    loop = PracticeLoop(store, bank, items, policy, clock=clock, console=_stdout(), manual=manual, open_editor_first=edit)
    loop.notes = [Text(note, style="bold") for note in notes]
    return loop.run()


def _loop_exit(outcome: "LoopOutcome") -> ExitStatus:
    if outcome.ended_by == "terminate":
        raise typer.Exit(128 + 15)  # the shell's convention for "ended by SIGTERM"
    return ExitStatus.OK


@app.command()
def interview(
    minutes: Annotated[float, typer.Option("--minutes", callback=_positive, help="How long the interview lasts (fractions allowed).")] = 45.0,
    topic: Annotated[str | None, typer.Option("--topic", help="Only exercises of this topic.")] = None,
    count: Annotated[int, typer.Option("--count", min=1, help="How many exercises.")] = 3,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the random pick (the same seed and progress pick the same exercises).", show_default=False)] = None,
    manual_run: ManualRunOption = False,
) -> None:
    """A timed mock interview: a random, mostly unseen mix of exercises, a countdown, and at the end
    (or when time runs out) everything graded, with a report (shown, and saved). Exit 1 if anything
    did not pass."""
    import random

    from mlprep.clock import iso
    from mlprep.interview import finish_interview, interview_folder, pick_exercises, review_next, write_report
    from mlprep.practice import fresh_stub
    from mlprep.render import render_interview_report
    from mlprep.watch import LoopItem, LoopPolicy, grade_exercise
    from mlprep.workspace import attempt_path, default_workspace

    bank = _bank()
    _check_topic(bank, topic)
    editor, _ = _editor_setting()
    clock = _clock()
    seed = seed if seed is not None else random.randrange(2**31)
    with Store.open_default() as store:
        # Code is written in the loop; the quizzes' questions come as each exercise's follow-ups.
        picked = pick_exercises([e for e in bank.exercises if e.graded_by_code], store.statuses(), count=count, topic=topic, rng=random.Random(seed))
        if len(picked) < count:
            _warn(f"--count {count}: only {plural(len(picked), 'exercise')}{f' of topic {topic!r}' if topic else ''} in the bank; the interview has {len(picked)}")
        folder = interview_folder(default_workspace(), clock)
        started_at = iso(clock.now())

        def prepare(exercise: Exercise) -> Path:
            path = attempt_path(folder, exercise.id)
            fresh_stub(exercise, path)
            return path

        items = [LoopItem(e, prepare(e)) for e in picked]  # every file exists from the start: the learner may open them all
        policy = LoopPolicy(
            mode="interview", source="interview", prepare=prepare, free_navigation=True, solutions=False,
            deadline=clock.monotonic() + minutes * 60, confirm_quit=True, editor=editor,
        )
        notes = [f"mock interview: {plural(len(items), 'exercise')}, {plural(minutes, 'minute')} (seed {seed}); "
                 f"files in {folder}; n/p move between them; q ends early; solutions open afterwards"]
        outcome = _run_loop(store, bank, items, policy, manual_run, clock=clock, notes=notes)
        console = _stdout()
        console.print("time is up" if outcome.ended_by == "time" else "the interview is over", style="bold", markup=False)
        final_grade = grade_exercise if outcome.ended_by != "terminate" else None
        if final_grade is not None:
            console.print(f"grading {plural(len(items), 'exercise')}…", markup=False)
        record = finish_interview(
            store, outcome, started_at=started_at, clock=clock, minutes=minutes, seed=seed, topic=topic, folder=folder, grade=final_grade,
        )
        followups = _ask_followups(picked, console, random.Random(seed)) if outcome.ended_by != "terminate" else []
        if followups:
            write_report(record, folder / "report.json", followups)
        render_interview_report(console, record, review_next(record, bank), str(folder / "report.json"), followups)
    _loop_exit(outcome)
    if record.passed < len(record.items):
        _exit(ExitStatus.FAILED)


@app.command()
def review(
    list_only: Annotated[bool, typer.Option("--list", help="Only show the schedule (what is due, and when the rest is).")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Review at most this many due items.")] = 5,
    ahead: Annotated[
        float, typer.Option("--ahead", min=0, help="Also review what falls due within this many days (early: before an interview, say).")
    ] = 0.0,
    manual_run: ManualRunOption = False,
) -> None:
    """Spaced review (SM-2): exercises you failed, or passed long ago, come back when due; each is
    redone from a fresh stub in the practice loop and rescheduled by the result. A quiz question you
    missed comes back alone, asked here."""
    from mlprep.practice import QUESTION, fresh_stub, review_schedule
    from mlprep.render import review_table
    from mlprep.review import due_now, quality
    from mlprep.watch import LoopItem, LoopPolicy
    from mlprep.workspace import attempt_path, default_workspace

    bank = _bank()
    clock = _clock()
    editor, _ = _editor_setting()
    console = _stdout()
    with Store.open_default() as store:
        now = clock.now()
        scheduled = review_schedule(store, bank)
        due = due_now(scheduled, now + timedelta(days=ahead))
        if list_only or not due:
            if scheduled:
                console.print(review_table(scheduled, now))
            if not due:
                within = f" within {plural(ahead, 'day')}" if ahead else ""
                console.print(f"nothing is due for review{within}" + ("" if scheduled else ": failed or long-passed exercises come back here"), markup=False)
            return
        console.print(review_table(due[:limit], now))
        due = due[:limit]
        rescheduled = _review_questions(store, bank, [item for item in due if item.kind == QUESTION], clock, console)
        due = [item for item in due if item.kind != QUESTION]
        if not due:
            for item_id, passed, state in rescheduled:
                console.print(f"{item_id}: {'recalled' if passed else 'not recalled'}; next review in {plural(state.interval_days, 'day')}", markup=False)
            _exit(ExitStatus.OK if all(passed for _, passed, _ in rescheduled) else ExitStatus.FAILED)
            return
        folder = default_workspace() / "review"

        def prepare(exercise: Exercise) -> Path:
            path = attempt_path(folder, exercise.id, exercise.kind)
            fresh_stub(exercise, path)  # a review is a recall: from the stub, not from your old answer
            return path

        items = [LoopItem(bank.get(item.item_id)) for item in due]
        policy = LoopPolicy(mode="review", source="review", prepare=prepare, free_navigation=True, editor=editor)
        notes = [f"review: {len(items)} due (of {len(due)}); redo each from the stub; n/p move between them; l lists them; q stops"]
        outcome = _run_loop(store, bank, items, policy, manual_run, clock=clock, notes=notes)
        for item in outcome.items:
            if item.result is None:
                continue  # never graded: not reviewed, still due
            q = quality(item.passed, item.hints_used, len(item.exercise.hints))
            state = store.record_review(item.exercise.kind, item.exercise.id, q, clock.now())
            rescheduled.append((item.exercise.id, item.passed, state))
    for exercise_id, passed, state in rescheduled:
        days = plural(state.interval_days, "day")
        console.print(f"{exercise_id}: {'recalled' if passed else 'not recalled'}; next review in {days}", markup=False)
    if not rescheduled:
        console.print("nothing was graded, so nothing was rescheduled", markup=False)
    _exit(_loop_exit(outcome))


def _ask_followups(exercises: list[Exercise], console: "Console", rng: Any) -> list[dict]:
    """The interviewer's follow-up questions of each exercise, asked here after the code is graded;
    the answers, marked, for the report (scored apart from the code)."""
    from mlprep.quiz import Presentation, QuizAborted, ask_questions, has_followups, load_quiz, mark

    asked = []
    for exercise in exercises:
        if not has_followups(exercise):
            continue
        quiz = load_quiz(exercise, followups=True)
        presentation = Presentation.of(quiz, rng.randrange(1, 2**31))
        console.print(f"\nfollow-up questions on {exercise.id} ({exercise.title}): as an interviewer asks once the code works", style="bold", markup=False)
        try:
            responses = ask_questions(quiz, presentation, sys.stdin, console)
        except (QuizAborted, KeyboardInterrupt):
            console.print("follow-ups skipped: the report scores the code alone", markup=False)
            return []
        outcome = mark(quiz, presentation, responses)
        for question_id in presentation.questions:
            right, answer = outcome.right[question_id], quiz.key[question_id]
            asked.append({"exercise": exercise.id, "question": question_id, "text": quiz.question(question_id).text, "right": right,
                          "explanation": answer.explanation})
    return asked


def _review_questions(store: Store, bank: Bank, due: list, clock: "Clock", console: "Console") -> list[tuple[str, bool, Any]]:
    """Ask each due quiz question alone (in a fresh order of its options), mark it, and reschedule it:
    quality 5 when recalled, 1 when not. Returns (item id, recalled, new state) of those answered."""
    from mlprep.practice import QUESTION
    from mlprep.quiz import Presentation, QuizAborted, ask_questions, load_quiz, new_seed, show_response

    answered = []
    for item in due:
        quiz_id, question_id = item.item_id.split("/", 1)
        quiz = load_quiz(bank.get(quiz_id))
        if question_id not in {question.id for question in quiz.questions}:
            console.print(f"{item.item_id}: that question is no longer in {quiz_id}; skipped", style="dim", markup=False)
            continue
        presentation = Presentation.of(quiz, new_seed())
        console.print(f"\nreview: a question you missed in {quiz_id} ({quiz.title})", style="bold", markup=False)
        try:
            responses = ask_questions(quiz, presentation, sys.stdin, console, only=[question_id])
        except (QuizAborted, KeyboardInterrupt):
            console.print("review stopped: the rest stays due", markup=False)
            break
        question, answer = quiz.question(question_id), quiz.key[question_id]
        recalled = answer.accepts(responses[question_id])
        console.print(("✓ right. " if recalled else f"✗ the answer: {show_response(question, presentation, answer.correct)}. ") + answer.explanation,
                      style="green" if recalled else "yellow", markup=False, soft_wrap=True)
        state = store.record_review(QUESTION, item.item_id, 5 if recalled else 1, clock.now())
        answered.append((item.item_id, recalled, state))
    return answered


@app.command()
def config(
    key: Annotated[str | None, typer.Argument(metavar="KEY", help="A setting: editor, auto_edit.", show_default=False)] = None,
    value: Annotated[str | None, typer.Argument(metavar="VALUE", help="Its new value.", show_default=False)] = None,
    unset: Annotated[bool, typer.Option("--unset", help="Remove the setting.")] = False,
) -> None:
    """Show or change settings (a TOML file in the data folder): `mlprep config editor "code -w"`."""
    from mlprep.config import SETTINGS, config_path, load_config, parse_value, set_value, setting

    if key is None:
        current = load_config()
        for name, setting in SETTINGS.items():
            shown = json.dumps(current[name]) if name in current else "(not set)"
            sys.stdout.write(f"{name} = {shown}    # {setting.help}\n")
        sys.stdout.write(f"# {config_path()}\n")
        return
    if unset:
        if value is not None:
            raise MlprepError("--unset takes no value")
        set_value(key, None)
        return
    if value is None:
        setting(key)  # an unknown key is an error that lists the known ones
        current = load_config()
        if key in current:
            sys.stdout.write(f"{str(current[key]).lower() if isinstance(current[key], bool) else current[key]}\n")
        return
    set_value(key, parse_value(key, value))


def _parse_shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        k, n = (int(part) for part in value.split("/"))
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not K/N (the K-th of N slices, e.g. 2/4)") from None
    if not 1 <= k <= n:
        raise typer.BadParameter(f"{value!r}: K must be between 1 and N")
    return k, n


def _submissions(exercise: Exercise, files: list[Path], folder: Path | None, shard: tuple[int, int] | None) -> list[Path]:
    """The files to grade against one exercise: those named, then the folder's *.py (sorted), each
    once; with a shard K/N, every N-th of them from the K-th on (the same slices on every machine)."""
    paths = list(files)
    if folder is not None:
        if not folder.is_dir():
            raise MlprepError(f"--dir: not a folder: {folder}")
        paths += sorted(p for p in folder.glob("*.py") if not p.name.startswith("."))
        if not paths:
            raise MlprepError(f"--dir: no .py files in {folder}")
    for path in paths:
        if not path.exists():
            raise _no_such_file(path)
        if not path.is_file():
            raise MlprepError(f"not a file: {path}")
    unique = list({path.resolve(): path for path in paths}.values())
    if shard is not None:
        k, n = shard
        unique = unique[k - 1::n]
    return unique


@app.command()
def grade(
    exercise_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="ID", help="Exercises to grade [default: every attempted one].", show_default=False, autocompletion=_complete_ids),
    ] = None,
    files: Annotated[
        list[Path] | None,
        typer.Option("--file", "-f", help="Grade this file against ONE exercise, without touching the workspace (repeat it for several).", show_default=False),
    ] = None,
    folder: Annotated[Path | None, typer.Option("--dir", help="Grade every .py file in this folder against ONE exercise.", show_default=False)] = None,
    shard: Annotated[
        str | None, typer.Option("--shard", help="Grade only the K-th of N slices of the files (K/N, e.g. 2/4): for CI jobs that share a cohort.",
                                 show_default=False)
    ] = None,
    record: Annotated[bool, typer.Option("--record", help="Record the grades of --file/--dir files in your progress store too.")] = False,
    device: DeviceOption = Device.auto,
    as_json: JsonOption = False,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write the results as JUnit XML to this path (a testsuite per file).", show_default=False)] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", callback=_positive, show_default=False,
                     help="Time limit in seconds for grading one exercise, all its checks together [default: the exercise's]."),
    ] = None,
    diagnose_mistake: Annotated[
        bool, typer.Option("--diagnose", help="When a grade fails, say whether it matches one of the exercise's known mistakes (counts as a hint).")
    ] = False,
    repro: Annotated[
        bool, typer.Option("--repro", help="Write a standalone script per failed check next to the file: it runs your code on the smallest failing input.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show everything: every check's message, every failure in full with its details.")] = False,
) -> None:
    """Grade your attempts (recorded in your progress), or files (--file, --dir: many at once, in
    parallel, each in its own sandbox). Exit 1 if anything did not pass, 3 if mlprep itself failed
    (never your code's fault)."""
    from mlprep.practice import attempt_location
    from mlprep.render import grade_line, render_grade

    bank = _bank()
    ids = list(dict.fromkeys(exercise_ids or []))
    slices = _parse_shard(shard)
    if slices is not None and not (files or folder):
        raise MlprepError("--shard slices the files of --file/--dir: give them too")
    with Store.open_default() as store:
        targets: list[tuple[Exercise, Path, str]] = []
        if files or folder is not None:
            if len(ids) != 1:
                raise MlprepError("--file and --dir grade files against exactly one exercise: give one ID, e.g. `mlprep grade ID --file PATH`")
            exercise = bank.get(ids[0])
            targets += [(exercise, path, "file") for path in _submissions(exercise, files or [], folder, slices)]
            if not targets:
                raise MlprepError(f"--shard {shard}: this slice holds none of the files")
        else:
            explicit = bool(ids)
            if not explicit:
                ids = store.attempted_ids()
                known = set(bank.ids())
                for gone in [i for i in ids if i not in known]:
                    _warn(f"skipping {gone!r}: attempted, but no longer in the bank")
                ids = [i for i in ids if i in known]
                if not ids:
                    raise MlprepError("nothing to grade: no attempts yet; start one with `mlprep attempt ID`, or grade a file with `mlprep grade ID --file PATH`")
            for exercise_id in ids:
                exercise = bank.get(exercise_id)
                path = attempt_location(store, exercise, None)
                if path.is_file():
                    targets.append((exercise, path, "workspace"))
                elif explicit:
                    raise MlprepError(f"no attempt of {exercise.id!r} at {path}: start it with `mlprep attempt {exercise.id}`, or grade a file with --file PATH")
                else:
                    _warn(f"skipping {exercise.id!r}: its attempt {path} is gone (`mlprep reset {exercise.id}` writes a fresh stub)")
            if not targets:
                raise MlprepError("nothing to grade: none of the attempted exercises has a file left")

        from mlprep.practice import grade_attempt

        if any(exercise.graded_by_code for exercise, _, _ in targets):
            from mlprep.engine import require_device  # heavy: only grading code pays for it

            require_device(device.value)
        console = _stdout()
        # A batch: --dir, --shard or several --file; its --json is a list whatever the number of files.
        batch = folder is not None or slices is not None or len(files or []) > 1
        if batch and all(exercise.graded_by_code for exercise, _, _ in targets):
            graded = _grade_batch(targets, device.value, timeout, quiet=as_json)
        else:
            graded = []
            for exercise, path, source in targets:
                if source == "workspace":
                    store.record_cli_practice(exercise.id)  # before the grade: the time up to it since the last event
                graded.append(grade_attempt(exercise, path, device=device.value, timeout_s=timeout, reveal=store.has_passed(exercise.id)))
        results: "list[tuple[GradeResult, Path]]" = []
        extras: list[dict] = []  # per result: its diagnosis and repro scripts, for --json
        for (exercise, path, source), result in zip(targets, graded):
            if source == "workspace" or record:
                store.record_grade(result, source=source, path=path)
            results.append((result, path))
            extra: dict = {}
            if not as_json and (not batch or verbose):
                render_grade(console, result, path=str(path), verbose=verbose)
                if exercise.kind == "story" and not result.internal_error:
                    from mlprep.render import render_sample_answer

                    render_sample_answer(console, exercise)
            # A quiz names a misconception in its grade, and a story has no code: neither has known-mistake variants or a repro.
            if diagnose_mistake and not result.internal_error and exercise.graded_by_code:
                extra["diagnosis"] = _diagnose(store, exercise, result, device.value, None if as_json else console)
            if repro and not result.internal_error and exercise.graded_by_code:
                extra["repro"] = _write_repro(exercise, result, path, None if as_json else console)
            extras.append(extra)
            if not as_json and (not batch or verbose):
                console.print()
            if result.internal_error:
                _error(f"internal error while grading {exercise.id} (a defect in mlprep or its grader, not your code): {result.message}")

    if junit is not None:
        from mlprep.results import to_junit
        from mlprep.workspace import atomic_write

        try:
            atomic_write(junit, to_junit([r for r, _ in results], names=[f"{r.id} {p}" for r, p in results] if batch else None))
        except OSError as exc:
            raise MlprepError(f"cannot write the JUnit report {junit}: {exc.strerror or exc}") from None
    if as_json:
        objects = [{**r.to_dict(), "path": str(p), **extra} for (r, p), extra in zip(results, extras)]
        _write_json(objects if batch or len(objects) > 1 else objects[0])
    elif len(results) > 1:
        for result, path in results:
            console.print(grade_line(result, path=str(path) if batch else None), no_wrap=True, overflow="ellipsis")
        if batch:
            passed = sum(r.passed for r, _ in results)
            console.print(f"{passed} of {plural(len(results), 'file')} passed", style="bold", markup=False)
    if any(r.internal_error for r, _ in results):
        _exit(ExitStatus.INTERNAL)
    if not all(r.passed for r, _ in results):
        _exit(ExitStatus.FAILED)


def _grade_batch(targets: list[tuple[Exercise, Path, str]], device: str, timeout: float | None, *, quiet: bool) -> "list[GradeResult]":
    """Many files at once, in parallel over the cores (mlprep.engine.grade_files), with a progress bar on a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mlprep.engine import grade_files

    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
                  console=_stderr(), transient=True, disable=quiet) as progress:
        task = progress.add_task("", total=len(targets))

        def done(path: Path, result: "GradeResult") -> None:
            progress.update(task, advance=1, description=f"{path.name}: {result.status}")

        return grade_files([(exercise, path) for exercise, path, _ in targets], device=device, timeout_s=timeout, on_result=done)


def _diagnose(store: Store, exercise: Exercise, result: "GradeResult", device: str, console: "Console | None") -> dict:
    """Compare a failed grade with the exercise's known mistakes; a diagnosis that names one is a hint."""
    from mlprep.diagnosis import diagnose
    from mlprep.render import render_diagnosis

    def learning(count: int) -> None:
        _stderr().print(f"learning the {count} known mistakes of {exercise.id} (once per version of the exercise)…", style="dim", markup=False)

    diagnosis = diagnose(exercise, result, device=device, on_learning=learning)
    if diagnosis.found:
        store.record_diagnosis(exercise.id, [bug.name for bug in diagnosis.matched])
    if console is not None:
        render_diagnosis(console, diagnosis)
    return diagnosis.to_dict()


def _write_repro(exercise: Exercise, result: "GradeResult", path: Path, console: "Console | None") -> dict:
    from mlprep.render import render_repro
    from mlprep.repro import write_repro_scripts

    try:
        scripts = write_repro_scripts(exercise, result, path)
    except OSError as exc:
        raise MlprepError(f"cannot write the repro scripts next to {path}: {exc.strerror or exc}") from None
    if console is not None:
        render_repro(console, scripts)
    return {"folder": str(scripts.folder), "scripts": [{"check": c, "path": str(p)} for c, p in scripts.written],
            "left_out": [{"check": c, "why": why} for c, why in scripts.left_out]}


@app.command()
def hint(exercise_id: ExerciseId) -> None:
    """Show the next hint (each call reveals one more; they are remembered)."""
    from mlprep.term import Out, hint_cells

    exercise = _bank().get(exercise_id)
    out = Out()
    hints = exercise.hints
    if not hints:
        out.line(f"{exercise.id} has no hints")
        return
    with Store.open_default() as store:
        index = store.take_hint(exercise.id, len(hints))
    if index is None:
        for i, text in enumerate(hints):
            out.wrapped(*hint_cells(i, len(hints), text))
        out.wrapped(f"all {len(hints)} hints of {exercise.id} are shown; stuck? `mlprep solution {exercise.id} --force`")
        return
    out.wrapped(*hint_cells(index, len(hints), hints[index]))
    left = len(hints) - index - 1
    out.wrapped((f"({left} more: run `mlprep hint {exercise.id}` again)" if left else "(that was the last hint)", "dim"))


@app.command()
def solution(
    exercise_id: ExerciseId,
    force: Annotated[bool, typer.Option("--force", help="Show it before you have passed (recorded as revealed).")] = False,
) -> None:
    """Show the reference solution, with a diff against your attempt, once you have passed.
    Before that it refuses (exit 2) unless --force, which is recorded as a reveal."""
    from mlprep.render import render_solution

    exercise = _bank().get(exercise_id)
    with Store.open_default() as store:
        passed = store.has_passed(exercise.id)
        if not passed and not force:
            raise MlprepError(
                f"the solution of {exercise.id} unlocks once you pass it (`mlprep grade {exercise.id}`); "
                f"to see it now anyway: `mlprep solution {exercise.id} --force` (recorded as revealed)"
            )
        store.record_reveal(exercise.id, forced=not passed)
        recorded = store.latest_attempt(exercise.id)
    if exercise.kind == "quiz":
        from mlprep.render import render_quiz_key

        render_quiz_key(_stdout(), exercise)
        return
    if exercise.kind == "story":
        from mlprep.render import render_sample_answer

        render_sample_answer(_stdout(), exercise)
        return
    reference = exercise.reference_path.read_text(encoding="utf-8")
    diff = None
    attempt_file = recorded.path if recorded is not None and recorded.path.is_file() else None
    if attempt_file is not None:
        import difflib

        mine = attempt_file.read_text(encoding="utf-8", errors="replace")
        diff = "".join(difflib.unified_diff(
            mine.splitlines(keepends=True), reference.splitlines(keepends=True),
            fromfile=f"your attempt ({attempt_file.name})", tofile="reference",
        ))
    render_solution(_stdout(), reference, diff, attempt=str(attempt_file) if attempt_file else None)


@app.command()
def reset(
    exercise_id: ExerciseId,
    workspace: WorkspaceOption = None,
    undo: Annotated[bool, typer.Option("--undo", help="Put back the attempt the last reset replaced (its latest backup); the current file is backed up first.")] = False,
) -> None:
    """Restore the stub of an exercise, keeping a backup of your attempt (--undo puts the backup back)."""
    from mlprep.practice import attempt_location, is_untouched, starting_text
    from mlprep.workspace import atomic_create, atomic_write, backup_file, latest_backup

    exercise = _bank().get(exercise_id)
    console = _stdout()
    stub = starting_text(exercise)
    with Store.open_default() as store:
        path = attempt_location(store, exercise, workspace)
        if store.latest_attempt(exercise.id) is None and not path.exists():
            raise MlprepError(f"nothing to reset: {exercise.id} has no attempt yet; start it with `mlprep attempt {exercise.id}`")
        try:
            if undo:
                previous = latest_backup(path)
                if previous is None:
                    raise MlprepError(f"no backup of {path} to put back (a reset keeps one in {path.parent / 'backups'})")
                content = previous.read_bytes()
                if path.is_file() and path.read_bytes() == content:
                    console.print(f"{path} is already the same as its latest backup {previous}; nothing to undo", markup=False, soft_wrap=True)
                    return
                replaced = backup_file(path) if path.is_file() and not is_untouched(exercise, path) else None
                atomic_write(path, content)
                console.print(f"put back {previous} at {path}" + (f"\nwhat was there is saved as {replaced}" if replaced else ""),
                              markup=False, soft_wrap=True)
            elif path.is_file():
                if is_untouched(exercise, path):
                    console.print(f"{path} is already the untouched stub; nothing to reset", markup=False, soft_wrap=True)
                    return
                backup = backup_file(path)  # complete and synced before the attempt is replaced
                atomic_write(path, stub)
                console.print(f"restored the stub at {path}\nyour previous attempt is saved as {backup} (`mlprep reset {exercise.id} --undo` puts it back)",
                              markup=False, soft_wrap=True)
            else:
                atomic_create(path, stub)
                console.print(f"there was no file at {path} any more; wrote a fresh stub", markup=False, soft_wrap=True)
        except OSError as exc:
            raise MlprepError(f"cannot reset {path}: {exc.strerror or exc}") from None
        store.record_attempt(exercise.id, path)


@app.command()
def progress(
    history: Annotated[int, typer.Option("--history", min=0, help="How many recent grades to list.")] = 15,
) -> None:
    """Your progress: mastery per topic, streak, time practised, recent grades, interviews, hints
    used, solutions revealed."""
    from mlprep.clock import parse_iso
    from mlprep.practice import day_streaks, due_reviews
    from mlprep.term import Out, print_progress

    bank = _bank()
    clock = _clock()
    with Store.open_default() as store:
        statuses = store.statuses()
        grades = store.grades()
        attempts = store.attempts()
        hints = store.hints_shown()
        diagnoses = store.diagnoses_shown()
        reveals = store.reveals()
        seconds = store.practice_seconds()
        interviews = store.interviews()
        reviews_due = len(due_reviews(store, bank, clock.now()))
    counts: dict[str, list[int]] = {}
    topic_seconds: dict[str, float] = {}
    for exercise in bank.exercises:
        row = counts.setdefault(exercise.topic, [0, 0, 0, 0])  # passed, attempted, todo, total
        status = statuses.get(exercise.id, "todo")
        row[("passed", "attempted", "todo").index(status)] += 1
        row[3] += 1
        topic_seconds[exercise.topic] = topic_seconds.get(exercise.topic, 0.0) + seconds.get(exercise.id, 0.0)
    available = {e.id: len(e.hints) for e in bank.exercises}
    local_days = {parse_iso(g.graded_at).astimezone().date() for g in grades}  # the learner's days, not UTC's
    print_progress(
        Out(),
        topics=[(topic, *row) for topic, row in sorted(counts.items())],
        topic_seconds=topic_seconds,
        grades=grades[:history],
        grades_total=len(grades),
        attempts_started=len({a.exercise_id for a in attempts}),
        hints={e: (n, available.get(e, n)) for e, n in hints.items()},
        diagnoses=diagnoses,
        reveals=reveals,
        streak=day_streaks(local_days, clock.now().astimezone().date()),
        interviews=interviews,
        reviews_due=reviews_due,
    )


@app.command()
def selfcheck(
    exercise_ids: Annotated[
        list[str] | None, typer.Argument(metavar="ID", help="Exercises to check [default: all].", show_default=False, autocompletion=_complete_ids)
    ] = None,
    as_json: JsonOption = False,
    device: DeviceOption = Device.auto,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="The full kill table of every exercise, not only of those with problems.")] = False,
    report_path: Annotated[
        Path | None, typer.Option("--report", help="Also write the report as JSON to this path, with every graded variant's full grade.", show_default=False)
    ] = None,
    bank_path: Annotated[
        Path | None, typer.Option("--bank", help="Check this bank folder only (an exercise pack's, say) instead of the banks in use.", show_default=False)
    ] = None,
) -> None:
    """Prove the bank is consistent: each reference passes, each stub and known bug fails, each
    alternative passes; prints which check caught which bug. Exit 1 on any miss."""
    from mlprep.render import render_selfcheck

    if bank_path is not None and not bank_path.is_dir():
        raise MlprepError(f"--bank: no such folder: {bank_path}")
    bank = load_bank(bank_path) if bank_path is not None else _bank()
    ids = list(dict.fromkeys(exercise_ids or []))
    for exercise_id in ids:
        bank.get(exercise_id)  # unknown ids fail fast, with a suggestion
    broken = [(name, reason) for name, reason in bank.broken if not ids or name in ids]
    for name, reason in broken:
        _warn(f"exercise {name!r} is broken: {reason}")

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mlprep.engine import require_device
    from mlprep.selfcheck import count_variants, run_selfcheck, selfcheck_exercises  # heavy: imports the grading toolkit

    require_device(device.value)
    # A bar on a terminal (stderr, gone when done); nothing in a log, where the report says it all.
    with Progress(TextColumn("self-check"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
                  console=_stderr(), transient=True) as progress:
        task = progress.add_task("", total=count_variants(selfcheck_exercises(bank, ids or None)))

        def on_result(exercise_id: str, variant: str, result: "GradeResult") -> None:
            progress.update(task, advance=1, description=f"{exercise_id} {variant}: {result.status}")

        report = run_selfcheck(bank, ids or None, device=device.value, on_result=on_result)

    def as_data(grades: bool) -> dict:
        data = report.to_dict(grades=grades)
        if broken:  # an exercise that does not load is a miss too
            data["ok"] = False
            data["broken"] = [{"id": name, "reason": reason} for name, reason in broken]
        return data

    if report_path is not None:
        from mlprep.workspace import atomic_write

        try:
            atomic_write(report_path, json.dumps(as_data(grades=True), indent=1, allow_nan=False))
        except OSError as exc:
            raise MlprepError(f"cannot write the report {report_path}: {exc.strerror or exc}") from None
    if as_json:
        _write_json(as_data(grades=False))
    else:
        render_selfcheck(_stdout(), report, verbose=verbose)
    if not report.ok or broken:
        _exit(ExitStatus.FAILED)


def main(argv: list[str] | None = None) -> None:
    try:
        typer.main.get_command(app).main(args=argv, prog_name="mlprep")
    except SystemExit as done:
        if "torch" not in sys.modules:
            raise
        # Every file and the store are written and closed by now, and torch's interpreter teardown
        # would add 0.3-0.5 s to every grade: flush and leave at once.
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
