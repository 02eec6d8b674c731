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
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mlprep.term import EXERCISE_COLUMNS, STATUS_STYLES, duration_text, exercise_rows, hint_cells
from mlprep.term import exercise_header as header_cells

if TYPE_CHECKING:
    from mlprep.bank import Exercise
    from mlprep.results import CheckResult, GradeResult
    from mlprep.review import DueItem
    from mlprep.store import Interview

OUTPUT_HEAD_LINES = 20
DETAIL_VALUE_CHARS = 300


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 (but tab and newline), DEL, C1


def inert(text: str) -> str:
    """`text` with control characters written out (ESC as \\x1b): the terminal shows them, never obeys
    them. A carriage return becomes a line break: it would let a line overwrite the verdict."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLES.get(status, ""))


def _first_line(message: str) -> str:
    return message.splitlines()[0] if message else ""


# -- list / show -----------------------------------------------------------------------------------


def exercise_table(exercises: Sequence[Exercise], statuses: Mapping[str, str]) -> Table:
    """The list of `mlprep list` (mlprep.term), as a rich table for the practice loop's screen."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for column in EXERCISE_COLUMNS:
        table.add_column(column, no_wrap=column != "title")  # only the title may wrap
    for row in exercise_rows(exercises, statuses):
        table.add_row(*(Text(text, style=style) for text, style in row))
    return table


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


def failure_details(checks: Sequence[CheckResult]) -> Text:
    """The full message and details of failed checks; checks that failed identically (a stub
    raising NotImplementedError everywhere) are shown once, under all their names."""
    text = Text()
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for check in checks:
        key = (check.status, check.message, json.dumps(check.details, sort_keys=True, default=str), check.failing_input)
        groups.setdefault(key, []).append(check.name)
    for number, ((status, message, _, failing_input), names) in enumerate(groups.items()):
        details = next(c.details for c in checks if c.name == names[0])
        if number:
            text.append("\n")
        text.append(f"{status.upper()} ", style=STATUS_STYLES.get(status, ""))
        text.append(", ".join(names), style="bold")
        text.append("\n")
        text.append(inert(message) or "(no message)")
        shown = [(key, value) for key, value in details.items() if value not in ("", None, [], {})]
        if shown:
            text.append("\n  ")
            text.append(inert("  ·  ".join(f"{key}: {_detail_value(value)}" for key, value in shown)), style="dim")
        if failing_input:
            label = "smallest failing input" if status == "fail" else "the input it was running"
            text.append(f"\n  {label}:\n", style="bold")
            text.append(inert("\n".join("    " + line for line in failing_input.splitlines())))
    return text


def output_head(output: str, lines: int = OUTPUT_HEAD_LINES) -> tuple[str, int]:
    """The first `lines` lines of the learner's output and how many were left out."""
    all_lines = inert(output).rstrip("\n").splitlines()
    return "\n".join(all_lines[:lines]), max(0, len(all_lines) - lines)


def grade_summary(result: GradeResult, path: str | None = None) -> Text:
    text = Text()
    text.append(result.id, style="bold")
    text.append(": ")
    text.append(result.status.upper(), style=STATUS_STYLES.get(result.status, ""))
    if result.message:
        text.append(f" — {inert(result.message)}")
    if path:
        text.append(f"\n{path}", style="dim")
    text.append(f"  ({result.device}, {result.duration_s:.1f}s)", style="dim")
    return text


def render_grade(console: Console, result: GradeResult, *, path: str | None = None) -> None:
    console.print(grade_summary(result, path))
    if result.checks:
        console.print(check_table(result.checks))
    failed = result.failed_checks()
    if failed:
        console.print(failure_details(failed))
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


def grade_line(result: GradeResult) -> Text:
    """One line per exercise, for the end of a multi-exercise grade."""
    text = Text()
    text.append(f"{result.status:<8}", style=STATUS_STYLES.get(result.status, ""))
    text.append(result.id, style="bold")
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


def diagnosis_rate(report: Any) -> tuple[int, int, int]:
    """(diagnosed as themselves alone, as themselves among others, all bugs)."""
    bugs = [b for e in report.exercises for b in e.bugs if b.status != "pass" and not b.internal_error]
    alone = sum(b.diagnosed_alone for b in bugs)
    shared = sum(b.name in b.diagnosed_as and not b.diagnosed_alone for b in bugs)
    return alone, shared, len(bugs)


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


def render_selfcheck_exercise(console: Console, outcome: Any) -> None:
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
    variants += [("generated", g) for g in getattr(outcome, "generated", [])]
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


def render_selfcheck(console: Console, report: Any) -> None:
    for outcome in report.exercises:
        render_selfcheck_exercise(console, outcome)
    n = len(report.exercises)
    references = sum(o.reference == "pass" for o in report.exercises)
    stubs = sum(o.stub != "pass" for o in report.exercises)
    bugs = [b for o in report.exercises for b in o.bugs]
    caught = sum(b.status != "pass" for b in bugs)
    alternatives = [a for o in report.exercises for a in o.alternatives]
    alt_ok = sum(a.status == "pass" for a in alternatives)
    summary = Text()
    summary.append("self-check: ", style="bold")
    summary.append("OK" if report.ok else "FAILED", style="bold green" if report.ok else "bold red")
    summary.append(
        f" — references passing {references}/{n}, stubs failing {stubs}/{n}, "
        f"bugs caught {caught}/{len(bugs)}, alternatives passing {alt_ok}/{len(alternatives)}"
    )
    console.print(summary)
    alone, shared, total = diagnosis_rate(report)
    console.print(Text(f"diagnosis: {alone}/{total} caught bugs diagnosed as themselves alone ({100 * alone / max(total, 1):.0f}%),"
                       f" {shared} as themselves among others (see the table), {total - alone - shared} not as themselves"))


def hint_text(index: int, total: int, hint: str) -> Text:
    return Text.assemble(*hint_cells(index, total, hint))


# -- hint / solution -------------------------------------------------------------------------------


def render_solution(console: Console, reference: str, diff: str | None, *, attempt: str | None) -> None:
    from rich.syntax import Syntax

    console.print(Panel(Syntax(reference.rstrip("\n"), "python", line_numbers=True, word_wrap=True), title="reference solution", title_align="left", expand=False))
    if diff is None:
        console.print(Text("no attempt of yours to compare with", style="dim"))
    elif not diff:
        console.print(Text(f"your attempt ({attempt}) is identical to the reference", style="dim"))
    else:
        console.print(Panel(Syntax(diff.rstrip("\n"), "diff", word_wrap=True), title=f"your attempt → reference   ({attempt})", title_align="left", expand=False))


# -- interview -------------------------------------------------------------------------------------


def render_interview_report(console: Console, interview: Interview, review_next: Sequence[str], report_path: str) -> None:
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
    summary.append(f" · {'time ran out' if interview.ended_by == 'time' else 'ended before the time ran out'} ({interview.minutes:g} minutes allowed)")
    console.print(summary)
    if review_next:
        console.print(Text("what to review next:", style="bold"))
        for line in review_next:
            console.print(Text(f"  • {line}"))
    console.print(Text(f"report saved: {report_path}", style="dim"))


# -- the practice loop (watch, interview, review) --------------------------------------------------


def loop_header(exercise: Exercise, status: str, path: str, position: str | None) -> Panel:
    header = exercise_header(exercise, status)
    header.append(f"\nyour file: {path}", style="dim")
    return Panel(header, title=position, title_align="right", expand=False)


def countdown_text(seconds_left: float) -> str:
    seconds = max(0, int(seconds_left + 0.999))  # 0:00 only once time is really up
    return f"{seconds // 60}:{seconds % 60:02d} left"


def key_bar(keys: Sequence[tuple[str, str, bool]], countdown: str | None) -> Text:
    """One line: each (key, what it does, available now); unavailable keys are dimmed."""
    text = Text(no_wrap=True, overflow="ellipsis")
    for number, (key, label, available) in enumerate(keys):
        if number:
            text.append(" · ", style="dim")
        text.append(key, style="bold cyan" if available else "dim")
        text.append(f" {label}", style="" if available else "dim")
    if countdown:
        text.append("   ⏱ ", style="bold")
        text.append(countdown, style="bold yellow")
    return text


def render_loop_screen(
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
) -> None:
    """The loop's screen above the key bar: the exercise, then "Checking…" and/or the latest
    grade (the prompt instead, before the first grade), the hints taken, and the latest notes."""
    console.print(loop_header(exercise, status, path, position))
    if checking:
        console.print(Text("Checking…" + (" (below: the previous grade)" if result is not None else ""), style="bold yellow"))
    if result is not None:
        render_grade(console, result)
    elif not checking:
        from rich.markdown import Markdown

        console.print(Markdown(exercise.prompt()))
        console.print(Text("waiting for you to save the file (r grades it now)", style="dim"))
    for index, hint in enumerate(hints):
        console.print(hint_text(index, len(exercise.hints), hint))
    for note in notes:
        console.print(note)


def due_text(due_at: datetime, now: datetime) -> str:
    days = (due_at - now).total_seconds() / 86400
    if days <= 0:
        return "now"
    return f"in {days * 24:.0f} h" if days < 1 else f"in {days:.0f} day{'s' * (round(days) != 1)} ({due_at:%Y-%m-%d})"


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
