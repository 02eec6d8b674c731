"""The `mlprep` command line: parse, call one core function, render. No grading logic here.

Exit statuses (mlprep.errors.ExitStatus): 0 ok; 1 graded and something did not pass, or a
self-check miss; 2 usage: bad arguments, unknown id (with a suggestion), missing file, a refused
`solution`, an unusable progress store; 3 a bug in mlprep or a grader. 130: interrupted.

Errors: an MlprepError is printed to stderr as one line with its exit status; a usage error from
the argument parser likewise (exit 2); anything else is a bug in mlprep (exit 3). `--traceback`
(a global option: `mlprep --traceback grade ...`) adds the traceback. All of that happens once, in
MlprepGroup.main, which both `python -m mlprep` and typer's CliRunner go through.

Each command parses its arguments, calls one core function (mlprep.practice: attempts, grading,
the practice loop, interviews, reviews, questions asked here; mlprep.kinds.selfcheck; mlprep.progress)
and renders what it returns (mlprep.screen). Import time matters: `list`, `show`, `attempt`, `hint`,
`solution`, `reset`, `progress` must never import numpy or torch, so what grades is imported inside
the commands that grade.

No `from __future__ import annotations` here: typer would have to eval every annotation string of
every command at start-up (about 10 ms of each quick command).
"""

import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from mlprep import __version__
from mlprep.bank import KINDS, Bank, Exercise, load_bank
from mlprep.errors import ExitStatus, MlprepError
from mlprep.progress.store import Store
from mlprep.text import inert, plural

try:  # typer >= 0.2x vendors click; its parse errors derive from TyperException
    from typer import TyperException as _ParseError
except ImportError:  # pragma: no cover - older typer on top of click
    from click.exceptions import ClickException as _ParseError  # type: ignore[no-redef]

if TYPE_CHECKING:
    from rich.console import Console

    from mlprep.clock import Clock
    from mlprep.kinds import Kind
    from mlprep.kinds.selfcheck import SelfCheckReport
    from mlprep.practice.grading import Target
    from mlprep.results import GradeResult


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
    """One line, made inert: an error names files and ids the user (or a pack) gave, control characters and all."""
    return " ".join(part.strip() for part in inert(str(text)).splitlines() if part.strip())


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
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _reader_gone()
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # a quick command's plain output, cut by its reader (click would exit 1): printing was all that was left
            _reader_gone()
            return 0

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


def _reader_gone() -> None:
    """stdout's reader went away (`mlprep grade | head`): what is left to print goes nowhere, quietly, and the
    command ends as it would have, with its own exit status (rich would exit 1 instead)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _stdout() -> "Console":
    from rich.console import Console

    class ReaderMayGo(Console):
        def on_broken_pipe(self) -> None:
            _reader_gone()

    return ReaderMayGo(highlight=False)


def _stderr() -> "Console":
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _kind_of(exercise: Exercise) -> "Kind":
    from mlprep.kinds import kind_of  # every kind's module: `list` and `progress` need none of them

    return kind_of(exercise)


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


def _write_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, allow_nan=False, default=str) + "\n")


def _positive(value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise typer.BadParameter("must be more than 0")
    return value


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


def _exit(status: ExitStatus) -> None:
    if status != ExitStatus.OK:
        raise typer.Exit(int(status))


def _loop_exit(ended_by: str) -> ExitStatus:
    if ended_by == "terminate":
        raise typer.Exit(128 + 15)  # the shell's convention for "ended by SIGTERM"
    return ExitStatus.OK


def _complete_ids(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of an exercise id: the bank's ids starting with what is typed, with their titles."""
    try:
        return [(e.id, e.title) for e in load_bank().exercises if e.id.startswith(incomplete)]
    except MlprepError:
        return []  # a broken bank completes nothing; the command itself will say why


def _progress_bar(what: str, quiet: bool = False) -> Any:
    """A bar on stderr while something long runs, gone when done; nothing in a log or with `quiet`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
                    console=_stderr(), transient=True, disable=quiet)


# -- the arguments and options the commands share ---------------------------------------------------

ExerciseId = Annotated[str, typer.Argument(metavar="ID", help="The exercise id (see `mlprep list`).", show_default=False, autocompletion=_complete_ids)]
ExerciseIds = Annotated[list[str] | None, typer.Argument(metavar="ID", help="The exercises [default: all].", show_default=False, autocompletion=_complete_ids)]
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
TopicOption = Annotated[str | None, typer.Option("--topic", help="Only exercises of this topic.")]
ManualRunOption = Annotated[
    bool, typer.Option("--manual-run", help="Don't watch the file; regrade when you press r (for file systems where change events don't arrive).")
]
EditOption = Annotated[bool, typer.Option("--edit", "-e", help="Open the attempt in your editor (the editor setting, $VISUAL or $EDITOR).")]


# -- commands --------------------------------------------------------------------------------------


@app.command("list")
def list_exercises(
    topic: TopicOption = None,
    status: Annotated[ProgressStatus | None, typer.Option("--status", help="Only exercises with this status.", case_sensitive=False)] = None,
    kind: Annotated[Kind | None, typer.Option("--kind", help="Only exercises of this kind.", case_sensitive=False)] = None,
    pack: Annotated[str | None, typer.Option("--pack", help="Only exercises of this pack (mlprep's own bank is 'mlprep').")] = None,
    as_json: JsonOption = False,
) -> None:
    """List the exercises with their status (todo, attempted, passed)."""
    from mlprep.screen.term import Out, print_exercise_list

    bank = _bank()
    for name, reason in bank.broken:
        _warn(f"exercise {name!r} is broken and left out: {reason}")
    matching = bank.matching(topic=topic, kind=kind.value if kind else None, pack=pack)
    with Store.open_default() as store:
        statuses = store.statuses()
    rows = [e for e in matching if status is None or statuses.get(e.id, "todo") == status.value]
    if as_json:
        _write_json([{"id": e.id, "title": e.title, "kind": e.kind, "topic": e.topic, "difficulty": e.difficulty, "status": statuses.get(e.id, "todo"),
                      "pack": e.pack} for e in rows])
    elif rows:
        print_exercise_list(Out(), rows, statuses)
    else:
        Out().line("no exercises match")


@app.command()
def show(exercise_id: ExerciseId) -> None:
    """Show an exercise's prompt (the task, its interface and what is graded)."""
    from mlprep.screen.term import Out, print_exercise

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
    from mlprep.practice.attempts import start_attempt

    bank = _bank()
    exercise = bank.get(exercise_id)
    kind = _kind_of(exercise)
    editor, auto_edit = _editor_setting()
    if watch and not kind.runs_code:
        raise MlprepError(f"{exercise.id} is a {exercise.kind}: the practice loop is for code; `mlprep attempt {exercise.id}` starts it")
    if answers_file and not kind.asks_questions:
        raise MlprepError(f"--file writes a quiz's answers file; {exercise.id} is a {exercise.kind}")
    with Store.open_default() as store:
        if kind.asks_questions and not answers_file:
            return _exit(_ask_quiz(store, exercise, workspace))
        path, created = start_attempt(store, exercise, workspace)
        if watch:
            return _exit(_watch(store, bank, exercise, path, workspace, editor, manual_run, edit or auto_edit))
        status = store.statuses().get(exercise.id, "todo")
    _show_started(exercise, path, created, status)
    if edit or auto_edit:
        from mlprep.workspace import open_in_editor

        status_code = open_in_editor(path, editor)
        if status_code != 0:
            _warn(f"the editor exited with status {status_code}")


def _show_started(exercise: Exercise, path: Path, created: bool, status: str) -> None:
    from mlprep.screen.term import Out, print_exercise

    out = Out()
    if created:
        print_exercise(out, exercise, status)
        out.wrapped(f"\nwrote {_kind_of(exercise).written} to {path}")
    else:  # the prompt again would push this line off the screen: `mlprep show` has it
        out.wrapped(f"you already have an attempt at {path} (kept as it is; `mlprep show {exercise.id}` shows the prompt,"
                    f" `mlprep reset {exercise.id}` starts over)")
    loop = f"   (or stay in the loop: mlprep watch {exercise.id})" if _kind_of(exercise).runs_code else ""
    out.wrapped(f"edit it, then run: mlprep grade {exercise.id}{loop}")


def _ask_quiz(store: Store, exercise: Exercise, workspace: Path | None) -> ExitStatus:
    from mlprep.practice.questions import ask_quiz
    from mlprep.screen.render import render_grade

    console = _stdout()
    path, result = ask_quiz(store, exercise, workspace, console, sys.stdin)
    if result is None:
        console.print(f"\nleft the quiz: nothing graded (your answers file: {path})", markup=False, soft_wrap=True)
        return ExitStatus.OK
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
    from mlprep.practice.attempts import start_attempt
    from mlprep.practice.watch import last_watched

    bank = _bank()
    editor, auto_edit = _editor_setting()
    with Store.open_default() as store:
        exercise = bank.get(exercise_id) if exercise_id is not None else last_watched(store, bank)
        if not _kind_of(exercise).runs_code:
            raise MlprepError(f"{exercise.id} is a {exercise.kind}: the practice loop is for code; `mlprep attempt {exercise.id}` starts it")
        path, _ = start_attempt(store, exercise, workspace)
        _exit(_watch(store, bank, exercise, path, workspace, editor, manual_run, edit or auto_edit))


def _watch(store: Store, bank: Bank, exercise: Exercise, path: Path, workspace: Path | None, editor: str | None, manual: bool, edit: bool) -> ExitStatus:
    from mlprep.practice.watch import watch_exercise

    console = _stdout()
    outcome = watch_exercise(store, bank, exercise, path, workspace=workspace, clock=_clock(), console=console, editor=editor, manual=manual, edit=edit)
    for item in outcome.items:
        verdict = "passed" if item.passed else "not graded" if item.result is None else item.result.status
        console.print(f"{item.exercise.id}: {verdict} ({item.path})", markup=False, soft_wrap=True)
    return _loop_exit(outcome.ended_by)


@app.command()
def interview(
    minutes: Annotated[float, typer.Option("--minutes", callback=_positive, help="How long the interview lasts (fractions allowed).")] = 45.0,
    topic: TopicOption = None,
    count: Annotated[int, typer.Option("--count", min=1, help="How many exercises.")] = 3,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the random pick (the same seed and progress pick the same exercises).", show_default=False)] = None,
    manual_run: ManualRunOption = False,
) -> None:
    """A timed mock interview: a random, mostly unseen mix of exercises, a countdown, and at the end
    (or when time runs out) everything graded, with a report (shown, and saved). Exit 1 if anything
    did not pass."""
    import random

    from mlprep.practice.interview import interview_candidates, pick_exercises, review_next, run_interview
    from mlprep.screen.render import render_interview_report

    bank = _bank()
    bank.matching(topic=topic)  # an unknown topic is an error, with a suggestion
    seed = seed if seed is not None else random.randrange(2**31)
    console = _stdout()
    with Store.open_default() as store:
        picked = pick_exercises(interview_candidates(bank), store.statuses(), count=count, topic=topic, rng=random.Random(seed))
        if len(picked) < count:
            _warn(f"--count {count}: only {plural(len(picked), 'exercise')}{f' of topic {topic!r}' if topic else ''} in the bank; the interview has {len(picked)}")
        run = run_interview(store, bank, picked, _clock(), console, minutes=minutes, seed=seed, topic=topic, manual=manual_run, editor=_editor_setting()[0])
        render_interview_report(console, run.record, review_next(run.record, bank), str(run.report_path), run.followups)
    _loop_exit(run.ended_by)
    if run.record.passed < len(run.record.items):
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
    from mlprep.practice.review import run_review

    console = _stdout()
    with Store.open_default() as store:
        outcome = run_review(store, _bank(), _clock(), console, limit=limit, ahead_days=ahead, list_only=list_only, manual=manual_run,
                             editor=_editor_setting()[0])
    if not outcome.due:
        within = f" within {plural(ahead, 'day')}" if ahead else ""
        console.print(f"nothing is due for review{within}" + ("" if outcome.scheduled else ": failed or long-passed exercises come back here"), markup=False)
    if list_only or not outcome.due:
        return
    for item_id, passed, state in outcome.rescheduled:
        console.print(f"{item_id}: {'recalled' if passed else 'not recalled'}; next review in {plural(state.interval_days, 'day')}", markup=False)
    if not outcome.ended_by:  # only questions were due: the exit status says whether they were recalled
        return _exit(ExitStatus.OK if all(passed for _, passed, _ in outcome.rescheduled) else ExitStatus.FAILED)
    if not outcome.rescheduled:
        console.print("nothing was graded, so nothing was rescheduled", markup=False)
    _exit(_loop_exit(outcome.ended_by))


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


GradeIds = Annotated[
    list[str] | None, typer.Argument(metavar="ID", help="Exercises to grade [default: every attempted one].", show_default=False, autocompletion=_complete_ids),
]
FilesOption = Annotated[
    list[Path] | None,
    typer.Option("--file", "-f", help="Grade this file against ONE exercise, without touching the workspace (repeat it for several).", show_default=False),
]
DirOption = Annotated[Path | None, typer.Option("--dir", help="Grade every .py file in this folder against ONE exercise.", show_default=False)]
ShardOption = Annotated[
    str | None, typer.Option("--shard", help="Grade only the K-th of N slices of the files (K/N, e.g. 2/4): for CI jobs that share a cohort.", show_default=False)
]
RecordOption = Annotated[bool, typer.Option("--record", help="Record the grades of --file/--dir files in your progress store too.")]
JunitOption = Annotated[Path | None, typer.Option("--junit", help="Also write the results as JUnit XML to this path (a testsuite per file).", show_default=False)]
TimeoutOption = Annotated[
    float | None,
    typer.Option("--timeout", callback=_positive, show_default=False,
                 help="Time limit in seconds for grading one exercise, all its checks together [default: the exercise's]."),
]
DiagnoseOption = Annotated[
    bool, typer.Option("--diagnose", help="When a grade fails, say whether it matches one of the exercise's known mistakes (counts as a hint).")
]
ReproOption = Annotated[
    bool, typer.Option("--repro", help="Write a standalone script per failed check next to the file: it runs your code on the smallest failing input.")
]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Show everything: every check's message, every failure in full with its details.")]


@app.command()
def grade(exercise_ids: GradeIds = None, files: FilesOption = None, folder: DirOption = None, shard: ShardOption = None, record: RecordOption = False,
          device: DeviceOption = Device.auto, as_json: JsonOption = False, junit: JunitOption = None, timeout: TimeoutOption = None,
          diagnose_mistake: DiagnoseOption = False, repro: ReproOption = False, verbose: VerboseOption = False) -> None:
    """Grade your attempts (recorded in your progress), or files (--file, --dir: many at once, in
    parallel, each in its own sandbox). Exit 1 if anything did not pass, 3 if mlprep itself failed
    (never your code's fault)."""
    from mlprep.practice.grading import choose_targets, grade_targets

    bank = _bank()
    # A batch: --dir, --shard or several --file; its --json is a list whatever the number of files.
    batch = folder is not None or shard is not None or len(files or []) > 1
    with Store.open_default() as store:
        targets, warnings = choose_targets(store, bank, list(dict.fromkeys(exercise_ids or [])), files or [], folder, _parse_shard(shard))
        for warning in warnings:
            _warn(warning)
        with _progress_bar("grading", quiet=as_json or not batch) as bar:
            task = bar.add_task("", total=len(targets))
            results = grade_targets(store, targets, device=device.value, timeout_s=timeout, record_files=record, parallel=batch,
                                    on_result=lambda target, result: bar.update(task, advance=1, description=f"{target.path.name}: {result.status}"))
        extras = [_after_grade(store, target, result, device.value, shown=not as_json and (not batch or verbose), rendered=not as_json,
                               verbose=verbose, diagnose=diagnose_mistake, repro=repro, gap=number > 0) for number, (target, result) in enumerate(zip(targets, results))]
    _grade_outcome(targets, results, extras, batch=batch, as_json=as_json, junit=junit, shown=not as_json and (not batch or verbose))


def _after_grade(store: Store, target: "Target", result: "GradeResult", device: str, *, shown: bool, rendered: bool, verbose: bool, diagnose: bool,
                 repro: bool, gap: bool) -> dict:
    """Show one grade (`shown`; after a blank line when it is not the first), then what was asked to follow it
    (`rendered`: on the screen too); returns those for --json."""
    from mlprep.practice.grading import diagnose_grade, write_repro
    from mlprep.screen.render import render_diagnosis, render_grade, render_repro, render_shown

    console, exercise, extra = _stdout(), target.exercise, {}
    if shown:
        if gap:
            console.print()
        render_grade(console, result, path=str(target.path), verbose=verbose)
        render_shown(console, _kind_of(exercise).shown_after_grade(exercise, result))  # a story's sample answer
    # A quiz names a misconception in its grade, and a story has no code: neither has known-mistake variants or a repro.
    if diagnose and _kind_of(exercise).runs_code and not result.internal_error:
        learning = lambda count: _stderr().print(f"learning the {count} known mistakes of {exercise.id} (once per version of the exercise)…",  # noqa: E731
                                                 style="dim", markup=False)
        diagnosis = diagnose_grade(store, exercise, result, device=device, on_learning=learning)
        extra["diagnosis"] = diagnosis.to_dict()
        if rendered:
            render_diagnosis(console, diagnosis)
    if repro and _kind_of(exercise).runs_code and not result.internal_error:
        scripts = write_repro(exercise, result, target.path)
        extra["repro"] = scripts.to_dict()
        if rendered:
            render_repro(console, scripts)
    if result.internal_error:
        _error(f"internal error while grading {exercise.id} (a defect in mlprep or its grader, not your code): {result.message}")
    return extra


def _grade_outcome(targets: "list[Target]", results: "list[GradeResult]", extras: list[dict], *, batch: bool, as_json: bool, junit: Path | None,
                   shown: bool) -> None:
    """The JUnit file, the JSON or the one line per file of several, and the exit status."""
    from mlprep.screen.render import grade_line

    if junit is not None:
        from mlprep.results import to_junit
        from mlprep.workspace import atomic_write

        try:
            atomic_write(junit, to_junit(results, names=[f"{r.id} {t.path}" for r, t in zip(results, targets)] if batch else None))
        except OSError as exc:
            raise MlprepError(f"cannot write the JUnit report {junit}: {exc.strerror or exc}") from None
    if as_json:
        objects = [{**r.to_dict(), "path": str(t.path), **extra} for r, t, extra in zip(results, targets, extras)]
        _write_json(objects if batch or len(objects) > 1 else objects[0])
    elif len(results) > 1 or batch:  # a batch has a line per file and its summary, whatever its count
        console = _stdout()
        if shown:
            console.print()  # after the grades in full
        for result, target in zip(results, targets):
            console.print(grade_line(result, path=str(target.path) if batch else None), no_wrap=True, overflow="ellipsis")
        if batch:
            console.print(f"{sum(r.passed for r in results)} of {plural(len(results), 'file')} passed", style="bold", markup=False)
    if any(r.internal_error for r in results):
        _exit(ExitStatus.INTERNAL)
    if not all(r.passed for r in results):
        _exit(ExitStatus.FAILED)


@app.command()
def hint(exercise_id: ExerciseId) -> None:
    """Show the next hint (each call reveals one more; they are remembered)."""
    from mlprep.screen.term import Out, hint_cells

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
    from mlprep.practice.attempts import reveal_solution
    from mlprep.screen.render import render_shown

    exercise = _bank().get(exercise_id)
    with Store.open_default() as store:
        shown = reveal_solution(store, exercise, force=force)
    render_shown(_stdout(), shown)


@app.command()
def reset(
    exercise_id: ExerciseId,
    workspace: WorkspaceOption = None,
    undo: Annotated[bool, typer.Option("--undo", help="Put back the attempt the last reset replaced (its latest backup); the current file is backed up first.")] = False,
) -> None:
    """Restore the stub of an exercise, keeping a backup of your attempt (--undo puts the backup back)."""
    from mlprep.practice.attempts import reset_attempt

    exercise = _bank().get(exercise_id)
    with Store.open_default() as store:
        done = reset_attempt(store, exercise, workspace, undo=undo)
    _stdout().print(done, markup=False, soft_wrap=True)


@app.command()
def progress(
    history: Annotated[int, typer.Option("--history", min=0, help="How many recent grades to list.")] = 15,
) -> None:
    """Your progress: mastery per topic, streak, time practised, recent grades, interviews, hints
    used, solutions revealed."""
    from mlprep.practice.review import due_reviews
    from mlprep.progress.standing import standing
    from mlprep.screen.term import Out, print_progress

    bank, now = _bank(), _clock().now()
    with Store.open_default() as store:
        reviews_due = len(due_reviews(store, bank, now))
        print_progress(Out(), standing(store, bank, now, reviews_due=reviews_due, history=history))


@app.command()
def selfcheck(
    exercise_ids: ExerciseIds = None,
    as_json: JsonOption = False,
    device: DeviceOption = Device.auto,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="The full kill table of every exercise, not only of those with problems.")] = False,
    report_path: Annotated[
        Path | None, typer.Option("--report", help="Also write the report as JSON to this path, with every graded variant's full grade.", show_default=False)
    ] = None,
    bank_path: Annotated[
        Path | None, typer.Option("--bank", help="Check this bank folder only (an exercise pack's, say) instead of the banks in use.", show_default=False)
    ] = None,
    changed: Annotated[
        bool, typer.Option("--changed", help="Prove only the exercises whose files (or mlprep's own) changed since their last good proof; the rest from the cache.")
    ] = False,
) -> None:
    """Prove the bank is consistent: each reference passes, each stub and known bug fails, each
    alternative passes; prints which check caught which bug. Exit 1 on any miss."""
    if bank_path is not None and not bank_path.is_dir():
        raise MlprepError(f"--bank: no such folder: {bank_path}")
    bank = load_bank(bank_path) if bank_path is not None else _bank()
    ids = list(dict.fromkeys(exercise_ids or []))
    for exercise_id in ids:
        bank.get(exercise_id)  # unknown ids fail fast, with a suggestion
    broken = [(name, reason) for name, reason in bank.broken if not ids or name in ids]
    for name, reason in broken:
        _warn(f"exercise {name!r} is broken: {reason}")
    report = _prove(bank, ids, device.value, changed_only=changed)
    _selfcheck_output(report, broken, report_path=report_path, as_json=as_json, verbose=verbose)
    if not report.ok or broken:
        _exit(ExitStatus.FAILED)


def _selfcheck_output(report: "SelfCheckReport", broken: list[tuple[str, str]], *, report_path: Path | None, as_json: bool, verbose: bool) -> None:
    def as_data(grades: bool) -> dict:
        data = report.to_dict(grades=grades)
        if broken:  # an exercise that does not load is a miss too
            data.update(ok=False, broken=[{"id": name, "reason": reason} for name, reason in broken])
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
        from mlprep.screen.render import render_selfcheck

        render_selfcheck(_stdout(), report, verbose=verbose)


def _prove(bank: Bank, ids: list[str], device: str, *, changed_only: bool) -> "SelfCheckReport":
    from mlprep.grading.engine import require_device
    from mlprep.kinds.selfcheck import run_selfcheck  # heavy: imports the grading toolkit

    require_device(device)
    with _progress_bar("self-check") as bar:
        task = bar.add_task("", total=None)
        return run_selfcheck(bank, ids or None, device=device, changed_only=changed_only, on_planned=lambda total: bar.update(task, total=total),
                             on_result=lambda exercise_id, variant, result: bar.update(task, advance=1, description=f"{exercise_id} {variant}: {result.status}"))


def _command_line_app(argv: list[str]) -> typer.Typer:
    """The app with only the command this command line names: typer builds every command's parameters
    from its signature before running one, a third of a quick command's time. Anything else (help, a
    mistyped command, shell completion) gets the whole app, to list or suggest commands from."""
    named = next((arg for arg in argv if not arg.startswith("-")), None)  # the global options take no value
    commands = [c for c in app.registered_commands if (c.name or typer.main.get_command_name(c.callback.__name__)) == named]
    if not commands or any(key.endswith("_COMPLETE") for key in os.environ):
        return app
    import copy

    narrow = copy.copy(app)
    narrow.registered_commands = commands
    return narrow


def main(argv: list[str] | None = None) -> None:
    try:
        typer.main.get_command(_command_line_app(sys.argv[1:] if argv is None else argv)).main(args=argv, prog_name="mlprep")
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
