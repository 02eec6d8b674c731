"""Rich rendering of what the commands produce. No logic here beyond layout.

Everything that comes from outside mlprep (grader messages, the learner's output, prompts) goes in
as `Text`, never as markup, so "index [0, 3]" prints as written; what the learner's code can
influence (its output, its exception messages, hence check messages) also goes through `inert`, so
a terminal escape it prints ("clear the screen", then a fake PASS) shows as text. Markdown and
Syntax are imported inside the functions that use them: they are slow to import and most commands
never need them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mlprep.screen.term import STATUS_STYLES, hint_cells
from mlprep.text import duration_text, inert, plural
from mlprep.screen.term import exercise_header as header_cells

from mlprep.kinds import KINDS, Block, Lines, Note, Shown

if TYPE_CHECKING:
    from mlprep.bank import Exercise
    from mlprep.kinds.proof import ExerciseSelfCheck
    from mlprep.kinds.selfcheck import SelfCheckReport
    from mlprep.results import CheckResult, GradeResult
    from mlprep.progress.schedule import DueItem
    from mlprep.progress.store import Interview

OUTPUT_HEAD_LINES = 20
DETAIL_VALUE_CHARS = 300


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLES.get(status, ""))


def _first_line(message: str) -> str:
    return message.splitlines()[0] if message else ""


# -- list / show -----------------------------------------------------------------------------------


def exercise_table(exercises: Sequence[Exercise], statuses: Mapping[str, str], *, width: int = 80, color: bool = False) -> Text:
    """The list exactly as `mlprep list` prints it (mlprep.screen.term lays it out), for the practice loop's screen."""
    import io

    from mlprep.screen.term import Out, print_exercise_list

    buffer = io.StringIO()
    print_exercise_list(Out(buffer, color=color, width=width), exercises, statuses)
    return Text.from_ansi(buffer.getvalue().rstrip("\n"), no_wrap=True, overflow="ellipsis")


def exercise_header(exercise: Exercise, status: str) -> Text:
    return Text.assemble(*header_cells(exercise, status))


# -- grade -----------------------------------------------------------------------------------------


def _detail_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= DETAIL_VALUE_CHARS else text[:DETAIL_VALUE_CHARS] + "…"


def check_table(checks: Sequence[CheckResult]) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("status", no_wrap=True)
    table.add_column("check")
    table.add_column("message", overflow="fold")
    table.add_column("time", justify="right", no_wrap=True)
    for check in checks:
        table.add_row(status_text(check.status), Text(check.name), Text(inert(_first_line(check.message))), Text(f"{check.duration_s:.2f}s", style="dim"))
    return table


def output_head(output: str, lines: int = OUTPUT_HEAD_LINES) -> tuple[str, int]:
    """The first `lines` lines of the learner's output and how many were left out."""
    all_lines = inert(output).rstrip("\n").splitlines()
    return "\n".join(all_lines[:lines]), max(0, len(all_lines) - lines)


def grade_summary(result: GradeResult, path: str | None = None, *, headline_only: bool = False) -> Text:
    """The verdict: id, status, the summary message, where the file is, the device and the time.
    headline_only: the message without its "; first: ..." part (the compact view shows that failure below)."""
    text = Text()
    text.append(result.id, style="bold")
    text.append(": ")
    text.append(result.status.upper(), style=STATUS_STYLES.get(result.status, ""))
    message = result.message.split("; first: ")[0] if headline_only else result.message
    if message:
        text.append(f" — {inert(message)}")
    if result.device:  # a quiz or a story runs no code: no device, no time
        text.append(f"  ({result.device}, {result.duration_s:.1f}s)", style="dim")
    if path:
        text.append(f"\n{inert(path)}", style="dim")
    return text


COMPACT_LINES = 40  # a failing grade fits on one screen: about what an 80x24 terminal shows in two pages, and
# what the watch loop leaves between its header and its key bar on a 110x45 one
COMPACT_OUTPUT_LINES = 5  # of what the learner's code printed
_STATUS_WIDTH = 8


def _row(status: str, name: str, message: str = "") -> Text:
    """One line of the compact check list (cut with … at the console's width, never wrapped)."""
    row = Text(no_wrap=True, overflow="ellipsis")
    row.append(f"{status:<{_STATUS_WIDTH}}", style=STATUS_STYLES.get(status, ""))
    row.append(name)
    if message:
        row.append(f"  {inert(_first_line(message))}", style="dim")
    return row


def compact_rows(checks: Sequence[CheckResult], *, fold_passes: bool = False) -> list[Text]:
    """One row per check that ran; skipped ones folded by reason (every CUDA skip in one row), and
    checks that failed with the same message (a stub's NotImplementedError) in one row; with
    `fold_passes` (a long failure to show), the passed checks in one row too."""
    rows: list[Text] = []
    passed = [c for c in checks if c.status == "pass"]
    if fold_passes and len(passed) > 1:
        rows.append(_row("pass", f"{len(passed)} checks passed (`--verbose` names them)"))
        checks = [c for c in checks if c.status != "pass"]
    cuda_skips = [c for c in checks if c.status == "skip" and c.name.endswith("[cuda]")]
    skipped: dict[str, list[CheckResult]] = {}
    same: dict[tuple[str, str], list[CheckResult]] = {}
    for check in checks:
        if check.status in ("fail", "error", "timeout") and check.message:
            same.setdefault((check.status, check.message), []).append(check)
    shown: set[tuple[str, str]] = set()
    for check in checks:
        if check.status == "skip":
            if check not in cuda_skips:
                skipped.setdefault(check.message, []).append(check)
            continue
        group = same.get((check.status, check.message), [check])
        if len(group) > 2:
            if (check.status, check.message) not in shown:
                shown.add((check.status, check.message))
                rows.append(_row(check.status, f"{len(group)} checks, the same {check.status}:", check.message))
            continue
        rows.append(_row(check.status, check.name, check.message if check.status != "pass" else ""))
    if cuda_skips:
        rows.append(_row("skip", f"{plural(len(cuda_skips), 'CUDA scenario')} skipped: no GPU here (never counted as passed)"))
    for message, group in skipped.items():
        rows.append(_row("skip", group[0].name if len(group) == 1 else f"{len(group)} checks", message))
    return rows


def failure_groups(checks: Sequence[CheckResult]) -> list[tuple[CheckResult, list[str]]]:
    """Failed checks with the same status, message, details and failing input, once: (the first, all their names)."""
    groups: dict[tuple[str, str, str, str], list[CheckResult]] = {}
    for check in checks:
        key = (check.status, check.message, json.dumps(check.details, sort_keys=True, default=str), check.failing_input)
        groups.setdefault(key, []).append(check)
    return [(group[0], [c.name for c in group]) for group in groups.values()]


@dataclass
class FailureBlock:
    """One failure as a screen shows it: its heading and message, wrapped to the width, then the input it
    failed on, whose lines stay whole (code: a line wider than the screen runs on and the terminal folds
    it, so that what is copied from the screen pastes and runs)."""

    message: Text
    code: Text | None = None

    @property
    def plain(self) -> str:
        return self.message.plain + (f"\n{self.code.plain}" if self.code is not None else "")

    def height(self, console: Console) -> int:
        """The terminal rows it takes at the console's width."""
        rows = len(self.message.wrap(console, console.width))
        if self.code is not None:
            lines = self.code.plain.split("\n")
            rows += len(lines) if self.code.overflow != "ignore" else sum(max(1, -(-len(line) // console.width)) for line in lines)
        return rows

    def __rich_console__(self, console: Console, options: Any) -> Any:
        yield self.message
        if self.code is not None:
            yield self.code


def failure_text(check: CheckResult, names: Sequence[str], *, details: bool, input_lines: int | None = None, width: int = 80,
                 cut_code: bool = False) -> FailureBlock:
    """One failure in full: the checks' names, the message, a picture of the series it attached (yours
    vs expected, mlprep.screen.charts), the input it failed on (and, verbose, the details). input_lines: at
    most this many lines of the input (its last ones: the call that fails); cut_code: a line of the input
    wider than the screen is cut there with "…" (a screen of fixed rows, the practice loop's), never folded."""
    text = Text()
    text.append(f"{check.status.upper()} ", style=STATUS_STYLES.get(check.status, ""))
    text.append(", ".join(names) if details or len(names) <= 3 else f"{len(names)} checks ({', '.join(names[:2])}, …)", style="bold")
    text.append("\n")
    text.append(inert(check.message) or "(no message)")
    shown = [(key, value) for key, value in check.details.items() if value not in ("", None, [], {}) and key != "series"] if details else []
    if shown:
        text.append("\n  ")
        text.append(inert("  ·  ".join(f"{key}: {_detail_value(value)}" for key, value in shown)), style="dim")
    if isinstance(check.details.get("series"), dict):
        from mlprep.screen.charts import series_text

        text.append("\n")
        text.append_text(series_text(check.details["series"], width))
    if not check.failing_input:
        return FailureBlock(text)
    label = "smallest failing input" if check.status == "fail" else "the input it was running"
    text.append(f"\n  {label}:", style="bold")
    lines = check.failing_input.splitlines()
    if input_lines is not None and len(lines) > input_lines:
        left_out = len(lines) - input_lines
        text.append(f"\n    … ({plural(left_out, 'line')} before these: `--verbose` shows them, `--repro` writes the whole input as a script)", style="dim")
        lines = lines[left_out:]
    code = Text(inert("\n".join("    " + line for line in lines)), no_wrap=True, overflow="ellipsis" if cut_code else "ignore")
    return FailureBlock(text, code)


def failure_details(checks: Sequence[CheckResult], width: int = 80) -> list[Any]:
    """Every failure in full with its details; checks that failed identically (a stub raising
    NotImplementedError everywhere) are shown once, under all their names."""
    parts: list[Any] = []
    for number, (check, names) in enumerate(failure_groups(checks)):
        parts += [Text("")] if number else []
        parts.append(failure_text(check, names, details=True, width=width))
    return parts


def _lines(console: Console, part: Text | FailureBlock) -> int:
    return part.height(console) if isinstance(part, FailureBlock) else len(part.wrap(console, console.width))


def compact_grade(console: Console, result: GradeResult, *, path: str | None = None, max_lines: int = COMPACT_LINES,
                  more: str = "`--verbose` shows each in full", loop: bool = False) -> list[Text | FailureBlock]:
    """The grade in at most about `max_lines` lines at the console's width: the verdict, one row per
    check, then the failures in full as long as they fit (the first always), the rest named in one
    line; `more` says where the rest is shown in full. In the `loop`, whose key bar carries the
    verdict, the first failure comes first and the rows after it, the failures in full stop there."""
    rows = compact_rows(result.checks)
    head = [] if loop else [grade_summary(result, path, headline_only=True)]
    used = sum(_lines(console, part) for part in [*head, *rows])
    groups = failure_groups(result.failed_checks())
    first = failure_text(*groups[0], details=False, width=console.width, cut_code=loop) if groups else None
    if first is not None and used + 1 + _lines(console, first) > max_lines:
        rows = compact_rows(result.checks, fold_passes=True)  # room for the first failure before a list of passes
        used = sum(_lines(console, part) for part in [*head, *rows])
    output: list[Text] = []
    if result.output:
        lines = inert(result.output).rstrip("\n").splitlines()
        title = "your code printed" + (f" ({len(lines)} lines; the first {COMPACT_OUTPUT_LINES}):" if len(lines) > COMPACT_OUTPUT_LINES else ":")
        output = [Text(title, style="bold"), Text("\n".join("  " + line for line in lines[:COMPACT_OUTPUT_LINES]), style="dim", no_wrap=True, overflow="ellipsis")]
    used += sum(_lines(console, part) for part in output)
    failures: list[Text | FailureBlock] = []
    for number, (check, names) in enumerate(groups):
        block = first if not number else failure_text(check, names, details=False, width=console.width, cut_code=loop)
        if not number and used + 1 + _lines(console, block) + (len(groups) > 1) > max_lines:
            # The first failure is always shown, its input cut to its last lines (the call) to fit.
            without_input = _lines(console, failure_text(check, names, details=False, input_lines=0, width=console.width, cut_code=loop))
            room = max_lines - used - 1 - without_input - (len(groups) > 1)
            block = failure_text(check, names, details=False, input_lines=max(room // 2, 3), width=console.width, cut_code=loop)
            while room >= 3 and _lines(console, block) > max_lines - used - 1 - (len(groups) > 1):
                room -= 1
                block = failure_text(check, names, details=False, input_lines=max(room // 2, 3), width=console.width, cut_code=loop)
        needed = 1 + _lines(console, block)  # a blank line before it
        left = len(groups) - number - 1
        if number and (loop or used + needed + (1 if left else 0) > max_lines):
            failures.append(Text(f"{plural(len(groups) - number, 'more failure')} in the list {'below' if loop else 'above'}; {more}", style="dim"))
            break
        failures += [Text(""), block]
        used += needed
    if loop:
        return [*failures[1:], *([Text("")] if failures else []), *rows, *output]
    return [*head, *rows, *failures, *output]


def print_parts(console: Console, parts: Iterable[Text | FailureBlock]) -> None:
    for part in parts:  # console.print would wrap a no_wrap Text unless told again, and crop a failing input's lines
        if isinstance(part, FailureBlock):
            console.print(part, crop=False)
        else:
            console.print(part, no_wrap=part.no_wrap, overflow=part.overflow)


def quiz_grade_parts(result: GradeResult, path: str | None = None) -> list[Text]:
    """A quiz's grade: the score, then each question, right or wrong, with what the grade says of it."""
    parts = [grade_summary(result, path)]
    for check in result.checks:
        line = Text()
        line.append("✓ " if check.status == "pass" else "✗ ", style=STATUS_STYLES.get(check.status, ""))
        line.append(check.name, style="bold")
        parts.append(line)
        if check.message:
            parts.append(Text("    " + inert(check.message), style="" if check.status == "pass" else "yellow"))
    return parts


STORY_SECTIONS = ("Situation", "Task", "Action", "Result", "Prevention")


def story_grade_parts(console: Console, result: GradeResult, path: str | None = None, *, verbose: bool = False,
                      max_lines: int = COMPACT_LINES) -> list[Any]:
    """A story's grade on one screen (about `max_lines` lines at the console's width): the verdict, each
    check once (a failure with its message, wrapped at word boundaries), then the sample answer's
    sections that the failures are about (a pass: its Result and Prevention), as many whole as fit
    (the first one cut to fit if need be), and where the whole sample is. `verbose`: every section."""
    from rich.markdown import Markdown
    from rich.segment import Segment, Segments

    parts: list[Any] = [grade_summary(result, path)]
    for check in result.checks:
        line = Text()
        line.append("✓ " if check.status == "pass" else "✗ ", style=STATUS_STYLES.get(check.status, ""))
        line.append(check.name, style="" if check.status == "pass" else "bold")
        if check.message:
            line.append(f": {inert(check.message)}", style="yellow")
        parts.append(line)
    samples = {c.details["section"]: c.details["sample"] for c in result.checks if c.details.get("sample")}
    failed = {c.details.get("section") for c in result.checks if c.status != "pass"}
    wanted = [s for s in STORY_SECTIONS if s in samples and (verbose or s in failed or (not failed and s in ("Result", "Prevention"))) ]
    if not wanted:
        return parts
    options = console.options.update(width=console.width)
    used = sum(len(console.render_lines(part, options, pad=False)) for part in parts) + 2  # the title, the closing line
    blocks: list[Any] = []
    shown: list[str] = []
    left_out: list[str] = []
    for section in wanted:
        lines = console.render_lines(Markdown(samples[section]), options, pad=False)
        room = max_lines - used - 1  # its heading
        if verbose or len(lines) <= room:
            blocks += [Text(section, style="bold"), Markdown(samples[section])]
            shown.append(section)
            used += 1 + len(lines)
        elif not blocks and room >= 3:  # the first one always shows, cut to the room there is
            cut = [segment for line in lines[:room - 1] for segment in (*line, Segment.line())]
            blocks += [Text(section, style="bold"), Segments(cut), Text("…", style="dim")]
            shown.append(f"{section} (its beginning)")
            used = max_lines
        else:
            left_out.append(section)
    parts.append(Text(f"\nthe sample answer's {_and(shown)}, to compare with yours:", style="bold"))
    parts += blocks
    if not verbose:
        parts.append(Text(f"the whole sample: `mlprep grade {result.id} --verbose`" + (f" (its {_and(left_out)} did not fit here)" if left_out else ""),
                          style="dim"))
    return parts


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def render_grade(console: Console, result: GradeResult, *, path: str | None = None, verbose: bool = False) -> None:
    """The compact view (every failure once, as long as it fits), or with `verbose` everything there is:
    the check table with each message, every failure with its details, 20 lines of the output. A quiz
    shows its questions one by one; a story its checks and the sample's sections they are about."""
    if result.checks and all("question" in c.details for c in result.checks):
        print_parts(console, quiz_grade_parts(result, path))
    elif result.checks and all("section" in c.details for c in result.checks):
        for part in story_grade_parts(console, result, path, verbose=verbose):
            console.print(part)
    elif not verbose:
        print_parts(console, compact_grade(console, result, path=path))
    else:
        console.print(grade_summary(result, path))
        if result.checks:
            console.print(check_table(result.checks))
        failed = result.failed_checks()
        if failed:
            print_parts(console, failure_details(failed, console.width))
        if result.output:
            head, left_out = output_head(result.output)
            title = "your code printed" + (f" (first {OUTPUT_HEAD_LINES} lines; {left_out} more)" if left_out else "")
            console.print(Panel(Text(head), title=title, title_align="left", expand=False, border_style="dim"))
    if result.internal_error:
        console.print(Text(
            "This is a defect in mlprep or in this exercise's grader, not a verdict on your code. "
            "Please report it (run with `mlprep --traceback grade ...` for details).",
            style="bold magenta",
        ))


def render_diagnosis(console: Console, diagnosis: Any) -> None:
    """The answer to --diagnose: a known mistake named, or plainly none."""
    style = "bold yellow" if diagnosis.found else "dim" if diagnosis.passed else ""
    console.print(Text("diagnosis: ", style="bold").append(diagnosis.text(), style=style))


def render_repro(console: Console, scripts: Any) -> None:
    if not scripts.written and not scripts.left_out:
        console.print(Text("repro: no failed check to reproduce", style="dim"))
        return
    if scripts.written:
        console.print(Text(f"repro scripts ({len(scripts.written)}) in {scripts.folder}:", style="bold"))
        for check, path in scripts.written:
            console.print(Text(f"  python {path}", style="cyan").append(f"   # {check}", style="dim"), soft_wrap=True)
    for check, why in scripts.left_out:
        console.print(Text(f"  no script for {check!r}: {why}", style="dim"), soft_wrap=True)


def grade_line(result: GradeResult, path: str | None = None) -> Text:
    """One line per exercise (or per file, with its path), for the end of a grade of several."""
    text = Text()
    text.append(f"{result.status:<8}", style=STATUS_STYLES.get(result.status, ""))
    text.append(result.id, style="bold")
    if path:
        text.append(f"  {inert(path)}")
    if result.message:
        text.append(f"  {inert(_first_line(result.message))}")
    return text


# -- selfcheck -------------------------------------------------------------------------------------


def selfcheck_progress_line(exercise_id: str, variant: str, result: GradeResult) -> Text:
    text = Text(style="dim")
    text.append(f"{exercise_id} {variant}: ")
    text.append(result.status, style=STATUS_STYLES.get(result.status, ""))
    text.append(f" ({result.duration_s:.1f}s)")
    return text


def _expect(status: str, want_pass: bool) -> Text:
    good = (status == "pass") == want_pass
    text = status_text(status)
    text.append(" ✓" if good else " ✗ MISSED" if not want_pass else " ✗", style="green" if good else "bold red")
    return text


def diagnosis_text(bug: Any) -> str:
    """How a bug variant's grade is diagnosed, in a table cell."""
    if bug.internal_error:
        return "— (its grade broke)"
    if bug.name not in bug.diagnosed_as:
        return "NOT ITSELF: " + (", ".join(bug.diagnosed_as) or "nothing matches")
    others = [name for name in bug.diagnosed_as if name != bug.name]
    if not others:
        return "itself"
    text = "itself"
    if bug.identical_to:
        text += "; identical on every check to " + ", ".join(bug.identical_to)
    looser = [name for name in others if name not in bug.identical_to]
    if looser:
        text += "; also matches " + ", ".join(looser) + " (they agree wherever the diagnosis can compare)"
    return text


def kill_table(bugs: Iterable[Any]) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold", title_justify="left")
    table.add_column("bug", overflow="fold", style="bold")
    table.add_column("what it gets wrong", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("caught by", overflow="fold")
    table.add_column("diagnosed as", overflow="fold")
    for bug in bugs:
        caught_by = ", ".join(bug.caught_by) if bug.caught_by else "—"
        diagnosis = diagnosis_text(bug)
        table.add_row(Text(bug.name), Text(bug.summary), _expect(bug.status, want_pass=False), Text(caught_by),
                      Text(diagnosis, style="" if bug.name in bug.diagnosed_as else "bold red"))
    return table


def render_selfcheck_exercise(console: Console, outcome: ExerciseSelfCheck) -> None:
    header = Text()
    header.append(outcome.id, style="bold")
    header.append(": ")
    header.append("ok" if outcome.ok else "PROBLEMS", style="bold green" if outcome.ok else "bold red")
    header.append("   reference ")
    header.append_text(_expect(outcome.reference, want_pass=True))
    header.append("   stub ")
    header.append_text(_expect(outcome.stub, want_pass=False))
    console.print(header)
    if outcome.bugs:
        console.print(kill_table(outcome.bugs))
    variants = [("alternative", a) for a in outcome.alternatives]
    # Variants the self-check derives itself (e.g. a stub that returns None): must fail.
    variants += [("generated", g) for g in outcome.generated]
    for label, alternative in variants:
        line = Text(f"  {label} ")
        line.append(alternative.name, style="bold")
        line.append(": ")
        line.append_text(_expect(alternative.status, want_pass=label == "alternative"))
        if alternative.failed:
            line.append(f"  {'failed' if label == 'alternative' else 'caught by'}: {', '.join(alternative.failed)}")
        console.print(line)
    for problem in outcome.problems:
        console.print(Text(f"  ✗ {problem}", style="red"))
    console.print()


def selfcheck_line(outcome: ExerciseSelfCheck) -> Text:
    """One exercise of the self-check in one line: what passed and, in its kind's words, what was caught."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{outcome.id:<20} ", style="bold")
    line.append("ok      " if outcome.ok else "PROBLEMS", style="bold green" if outcome.ok else "bold red")
    line.append(f"  {KINDS[outcome.kind].proof_line(outcome)}", style="" if outcome.ok else "red")
    if outcome.cached:
        line.append("  (cached)", style="dim")
    return line


def render_selfcheck(console: Console, report: SelfCheckReport, *, verbose: bool = True) -> None:
    """The kill table of every exercise (verbose), or one line per exercise and the full table only
    where there is a problem; then the totals and the time it took."""
    for outcome in report.exercises:
        if verbose or not outcome.ok:
            render_selfcheck_exercise(console, outcome)
        else:
            console.print(selfcheck_line(outcome), no_wrap=True, overflow="ellipsis")
    if not verbose:
        console.print()
    n = len(report.exercises)
    references = sum(o.reference == "pass" for o in report.exercises)
    stubs = sum(o.stub != "pass" for o in report.exercises)
    bugs, misconceptions = report.counted("bugs"), report.counted("misconceptions")
    alternatives = [a for o in report.exercises for a in o.alternatives]
    summary = Text()
    summary.append("self-check: ", style="bold")
    summary.append("OK" if report.ok else "FAILED", style="bold green" if report.ok else "bold red")
    summary.append(
        f" — references passing {references}/{n}, stubs failing {stubs}/{n}, "
        f"bugs caught {sum(b.status != 'pass' for b in bugs)}/{len(bugs)}, alternatives passing {sum(a.status == 'pass' for a in alternatives)}/{len(alternatives)}"
        + (f", quiz misconceptions marked wrong {sum(b.status != 'pass' for b in misconceptions)}/{len(misconceptions)}" if misconceptions else "")
    )
    console.print(summary)
    alone, shared, total = report.diagnosis_rate()
    console.print(Text(f"diagnosis: {alone}/{total} caught bugs diagnosed as themselves alone ({100 * alone / max(total, 1):.0f}%),"
                       f" {shared} as themselves among others (see the table), {total - alone - shared} not as themselves"))
    if report.isolated is not None:
        console.print(Text("isolation: each sandbox in namespaces of its own; the bank's solutions and graders out of its sight" if report.isolated else
                           "isolation: NONE here (this system allows no unprivileged user namespaces): a file graded here runs with your"
                           " permissions and could read the bank's solutions; the verdicts above hold for honest files only",
                           style="" if report.isolated else "bold yellow"))
    cached = sum(o.cached for o in report.exercises)
    console.print(Text(f"{report.submissions} submissions graded in {duration_text(report.wall_s) if report.wall_s >= 60 else f'{report.wall_s:.1f}s'}"
                       + (f"; {cached} of the {n} proofs from the cache (nothing they depend on changed)" if cached else ""), style="bold"))


def hint_text(index: int, total: int, hint: str) -> Text:
    return Text.assemble(*hint_cells(index, total, hint))


# -- hint / solution -------------------------------------------------------------------------------


def shown_view(shown: Shown) -> Any:
    """What a kind shows (mlprep.kinds.base: a solution, a sample answer) as one renderable."""
    from rich.console import Group

    return Group(*(_shown_part(part) for part in shown))


def _shown_part(part: Block | Note | Lines) -> Any:
    if isinstance(part, Note):
        return Text(part.text, style=part.style)
    if isinstance(part, Lines):
        return Text("\n").join(Text.assemble(*line) for line in part.lines)
    if part.syntax == "markdown":
        from mlprep.screen.markdown import markdown

        return Panel(markdown(part.text), title=part.title, title_align="left")
    from rich.syntax import Syntax

    code = Syntax(part.text.rstrip("\n"), part.syntax, line_numbers=part.syntax == "python", word_wrap=True)
    return Panel(code, title=part.title, title_align="left", expand=False)


def render_shown(console: Console, shown: Shown) -> None:
    console.print(shown_view(shown))


# -- interview -------------------------------------------------------------------------------------


def render_interview_report(console: Console, interview: Interview, review_next: Sequence[str], report_path: str,
                            followups: Sequence[dict] = ()) -> None:
    table = Table(show_edge=False, pad_edge=False, header_style="bold", title=f"mock interview #{interview.id}", title_justify="left")
    for column in ("exercise", "status", "checks failed", "time", "hints"):
        table.add_column(column, overflow="fold" if column == "checks failed" else "ellipsis", no_wrap=column != "checks failed")
    for item in interview.items:
        table.add_row(
            Text(item.exercise_id, style="bold"),
            status_text(item.status),
            Text(", ".join(item.checks_failed) or "—"),
            Text(duration_text(item.seconds)),
            Text(str(item.hints_used)),
        )
    console.print(table)
    summary = Text()
    summary.append(f"{interview.passed} of {len(interview.items)} passed", style="bold green" if interview.passed == len(interview.items) else "bold")
    summary.append(f" · {'time ran out' if interview.ended_by == 'time' else 'ended before the time ran out'} ({plural(interview.minutes, 'minute')} allowed)")
    console.print(summary)
    if followups:
        right = sum(f["right"] for f in followups)
        console.print(Text(f"follow-up questions: {right} of {len(followups)} right", style="bold green" if right == len(followups) else "bold"),
                      Text("(scored apart from the code)", style="dim"))
        for followup in followups:
            console.print(Text("  ✓ " if followup["right"] else "  ✗ ", style="green" if followup["right"] else "red")
                          .append(f"{followup['exercise']}: {followup['text']}"))
            if not followup["right"]:
                console.print(Text(f"      {followup['explanation']}", style="dim"))
    if review_next:
        console.print(Text("what to review next:", style="bold"))
        for line in review_next:
            console.print(Text(f"  • {line}"))
    console.print(Text(f"report saved: {report_path}", style="dim"))


# -- the practice loop (watch, interview, review) --------------------------------------------------


def loop_header(exercise: Exercise, status: str, path: str, position: str | None) -> Panel:
    header = exercise_header(exercise, status)
    header.append(f"\nyour file: {inert(path)}", style="dim")
    return Panel(header, title=position, title_align="right", expand=False)


def countdown_text(seconds_left: float) -> str:
    seconds = max(0, int(seconds_left + 0.999))  # 0:00 only once time is really up
    return f"{seconds // 60}:{seconds % 60:02d} left"


def key_bar(keys: Sequence[tuple[str, str, bool]], countdown: str | None, width: int | None = None) -> Text:
    """One line: each (key, what it does, available now); unavailable keys are dimmed. Where the line
    would not fit in `width`, the unavailable keys go first, then the labels shrink to their first word."""

    def bar(entries: Sequence[tuple[str, str, bool]], short: bool) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for number, (key, label, available) in enumerate(entries):
            if number:
                text.append(" · " if not short else " ", style="dim")
            text.append(key, style="bold cyan" if available else "dim")
            text.append(f" {label.split()[0] if short else label}", style="" if available else "dim")
        if countdown:
            text.append("   ⏱ ", style="bold")
            text.append(countdown, style="bold yellow")
        return text

    text = bar(keys, short=False)
    if width is not None and text.cell_len > width:
        text = bar([k for k in keys if k[2]], short=False)
        if text.cell_len > width:
            text = bar([k for k in keys if k[2]], short=True)
    return text


def verdict_text(result: GradeResult | None, checking: bool) -> Text:
    """The loop's verdict, one line just above the key bar: the current grade, or that one is on its way."""
    if checking:
        text = Text("Checking…", style="bold yellow", no_wrap=True, overflow="ellipsis")
        if result is not None:
            text.append("  previous grade: ", style="yellow")
            text.append_text(grade_summary(result, headline_only=True))
        return text
    if result is None:
        return Text("waiting for you to save the file (r grades it now)", style="dim", no_wrap=True, overflow="ellipsis")
    verdict = grade_summary(result, headline_only=True)
    verdict.no_wrap, verdict.overflow = True, "ellipsis"
    return verdict


@dataclass
class LoopScreen:
    """The practice loop's screen in three parts: `top` (the exercise), `body` (hints, then the grade,
    the prompt, or what a key asked for), `bottom` (notes and the verdict); the key bar goes under it."""

    top: list[Any]
    body: list[Any]
    bottom: list[Any]


def loop_screen(
    console: Console,
    *,
    exercise: Exercise,
    status: str,
    path: str,
    position: str | None,
    result: GradeResult | None,
    checking: bool,
    hints: Sequence[str],
    notes: Sequence[Text],
    extra: Any = None,
    body_lines: int = COMPACT_LINES,
) -> LoopScreen:
    """extra: what a key asked for (the list, the solution), shown instead of the grade; body_lines:
    the height the grade may take (it shows its first failure in full, the others one line each)."""
    body: list[Any] = [hint_text(index, len(exercise.hints), hint) for index, hint in enumerate(hints)]
    if extra is not None:
        body.append(extra)
    elif result is not None:
        body += compact_grade(console, result, max_lines=max(body_lines - len(body), 1), loop=True,
                              more=f"`mlprep grade {exercise.id} --verbose` shows each in full")
    else:
        from mlprep.screen.markdown import markdown

        body.append(markdown(inert(exercise.prompt())))
    return LoopScreen([loop_header(exercise, status, path, position)], body, [*notes, verdict_text(result, checking)])


def due_text(due_at: datetime, now: datetime) -> str:
    days = (due_at - now).total_seconds() / 86400
    if days <= 0:
        return "now"
    return f"in {days * 24:.0f} h" if days < 1 else f"in {plural(round(days), 'day')} ({due_at:%Y-%m-%d})"


def review_table(items: Sequence[DueItem], now: datetime) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold", title="review schedule", title_justify="left")
    for column in ("item", "kind", "due", "why"):
        table.add_column(column, no_wrap=column != "why")
    for item in items:
        due = Text(due_text(item.due_at, now), style="bold yellow" if item.due_at <= now else "")
        table.add_row(Text(item.item_id, style="bold"), Text(item.kind), due, Text(item.reason))
    return table


def loop_items_table(rows: Sequence[tuple[str, str, str]]) -> Table:
    """rows: (exercise id, title, status here)."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for column in ("#", "id", "title", "status"):
        table.add_column(column, no_wrap=column != "title")
    for number, (exercise_id, title, status) in enumerate(rows, start=1):
        table.add_row(Text(str(number)), Text(exercise_id, style="bold"), Text(title), status_text(status))
    return table
