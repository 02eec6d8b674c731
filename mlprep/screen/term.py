"""Plain terminal output for the quick commands: list, show, attempt, hint, progress.

Importing rich and laying out one table takes 30-40 ms, more than the whole budget of these
commands (issue 4: at most 1.5x `python -c "import typer"`). So they write plain lines, with ANSI
styles when stdout is a terminal (NO_COLOR turns them off, FORCE_COLOR on); the commands that grade
or run the practice loop, which wait on much more than that anyway, use rich (mlprep.screen.render), and
take their shared pieces from here (status styles, the exercise header, durations).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from mlprep.text import duration_text, inert, plural

if TYPE_CHECKING:
    from mlprep.bank import Exercise
    from mlprep.progress.standing import Standing

STATUS_STYLES = {
    "pass": "bold green",
    "passed": "green",
    "fail": "bold red",
    "error": "bold red",
    "timeout": "bold magenta",
    "skip": "dim",
    "todo": "dim",
    "attempted": "yellow",
    "missed": "bold red",
}
_SGR = {"bold": "1", "dim": "2", "italic": "3", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

Cell = tuple[str, str]  # (text, style): style is "" or words of _SGR, e.g. "bold green"


def color_enabled(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


SHRINK_KEEPS = 30  # characters of a table's shrinking column (list's titles) kept before optional columns are left out


def _terminal_columns(stream: TextIO) -> int:
    """The terminal's width, as shutil.get_terminal_size finds it ($COLUMNS first), without importing
    shutil (and the compression modules it loads): every quick command prints through here."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (OSError, ValueError):
        return 80


class Out:
    """Where a quick command writes: styles and cut lines only on a terminal."""

    def __init__(self, stream: TextIO | None = None, *, color: bool | None = None, width: int | None = None):
        self.stream = stream or sys.stdout
        self.color = color_enabled(self.stream) if color is None else color
        # A terminal's width; written to a pipe or a file, 80 columns ($COLUMNS where it is set).
        self.width = width or (_terminal_columns(self.stream) if self.stream.isatty() else int(os.environ.get("COLUMNS", "") or 80))

    def styled(self, text: str, style: str) -> str:
        codes = [_SGR[word] for word in style.split() if word in _SGR]
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if self.color and codes and text else text

    def line(self, *cells: Cell | str) -> None:
        self.stream.write("".join(self.styled(*c) if isinstance(c, tuple) else c for c in cells) + "\n")

    def wrapped(self, *cells: Cell | str, indent: str = "") -> None:
        """Like `line`, but wrapped at word boundaries to the width (a word longer than a line is cut);
        lines after the first start with `indent`, and a newline in a cell starts a new line."""
        for line in wrap_cells([c if isinstance(c, tuple) else (c, "") for c in cells], self.width, indent):
            self.line(*line)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Cell]], *, right: Sequence[int] = (), shrink: int | None = None,
              title: str = "", total: Sequence[Cell] | None = None, optional: Sequence[int] = ()) -> None:
        """Columns two spaces apart; `right`: right-aligned columns; `shrink`: the column cut with "…"
        when the table is wider than the terminal; `optional`: columns left out, in this order, while it
        is still wider (a narrow terminal keeps what matters); `total`: a last row under a rule."""
        all_rows = [*rows, *([total] if total else [])]
        widths = [max([len(h), *(visible_len(r[i][0]) for r in all_rows)]) for i, h in enumerate(header)]
        keep = list(range(len(header)))
        # The shrinking column gives up to all but SHRINK_KEEPS characters before an optional column goes.
        give = max(widths[shrink] - max(len(header[shrink]), SHRINK_KEEPS), 0) if shrink is not None else 0
        for column in optional:
            if sum(widths[i] for i in keep) + 2 * (len(keep) - 1) - self.width <= give:
                break
            keep.remove(column)
        if len(keep) < len(header):
            header, widths = [header[i] for i in keep], [widths[i] for i in keep]
            right = [keep.index(i) for i in right if i in keep]
            shrink = keep.index(shrink) if shrink in keep else None
            rows = [[row[i] for i in keep] for row in rows]
            total = [total[i] for i in keep] if total else None
        excess = sum(widths) + 2 * (len(widths) - 1) - self.width
        if shrink is not None and excess > 0:
            widths[shrink] = max(len(header[shrink]), widths[shrink] - excess)
            excess = sum(widths) + 2 * (len(widths) - 1) - self.width
            if excess > 0:  # still too wide: the column's header is cut too
                widths[shrink] = max(2, widths[shrink] - excess)
                header = [h if i != shrink or len(h) <= widths[i] else h[: widths[i] - 1] + "…" for i, h in enumerate(header)]

        def cells(row: Sequence[Cell]) -> str:
            out = []
            for i, (text, style) in enumerate(row):
                if visible_len(text) > widths[i]:  # only plain text is ever cut (the `shrink` column)
                    text = text[: widths[i] - 1] + "…"
                pad = " " * (widths[i] - visible_len(text))
                out.append(pad + self.styled(text, style) if i in right else self.styled(text, style) + pad)
            return "  ".join(out).rstrip()

        if title:
            self.line((title, "italic"))
        self.line(*[(("  ".join(h.rjust(w) if i in right else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))).rstrip(), "bold")])
        self.line("  ".join("─" * w for w in widths))
        for row in rows:
            self.line(cells(row))
        if total:
            self.line("  ".join("─" * w for w in widths))
            self.line(cells(total))


def visible_len(text: str) -> int:
    return len(_ANSI.sub("", text))


def wrap_cells(cells: Sequence[Cell], width: int, indent: str = "") -> list[list[Cell]]:
    """Styled text filled into lines of at most `width` characters, breaking only between words."""
    lines: list[list[Cell]] = [[]]
    used = 0
    for text, style in cells:
        for number, paragraph in enumerate(text.split("\n")):
            if number:
                lines.append([(indent, "")] if indent else [])
                used = len(indent)
            for word in re.findall(r"^\s+|\S+\s*", paragraph) if paragraph.strip() else [paragraph]:
                bare = word.rstrip()
                if used and used + len(bare) > width:  # the word goes to a new line; the spaces before it vanish
                    lines[-1] = _rstrip_cells(lines[-1])
                    lines.append([(indent, "")] if indent else [])
                    used = len(indent)
                while len(bare) > width - used > 0 and used + len(word) > width:  # longer than a whole line: cut
                    lines[-1].append((word[: width - used], style))
                    word, bare = word[width - used:], bare[width - used:]
                    lines.append([(indent, "")] if indent else [])
                    used = len(indent)
                lines[-1].append((word, style))
                used += len(word)
    return [_rstrip_cells(line) for line in lines]


def _rstrip_cells(line: list[Cell]) -> list[Cell]:
    while line and not line[-1][0].strip():
        line = line[:-1]
    return line[:-1] + [(line[-1][0].rstrip(), line[-1][1])] if line else line


# -- pieces shared with mlprep.screen.render --------------------------------------------------------------


def status_cell(status: str) -> Cell:
    return status, STATUS_STYLES.get(status, "")


def exercise_header(exercise: Exercise, status: str) -> list[Cell]:
    """Title, id, kind, topic, difficulty, status, what to define, and how to work on it (its kind says)."""
    cells = [(exercise.title, "bold"), (f"  ({exercise.id})\n", "dim"), (f"{exercise.kind} · {exercise.topic} · {exercise.difficulty} · status: ", ""),
             status_cell(status)]
    if exercise.functions:
        cells.append((f"\ndefine: {', '.join(exercise.functions)}", ""))
    from mlprep.kinds import kind_of  # here, not at the top: `list` imports this module and needs no kind

    cells.append((kind_of(exercise).header_note(exercise), ""))
    return cells


def exercise_rows(exercises: Sequence[Exercise], statuses: Mapping[str, str]) -> list[list[Cell]]:
    return [[(e.id, "bold"), (e.title, ""), (e.kind, ""), (e.topic, ""), (e.difficulty, ""), status_cell(statuses.get(e.id, "todo"))] for e in exercises]


EXERCISE_COLUMNS = ("id", "title", "kind", "topic", "difficulty", "status")


# -- the quick commands ----------------------------------------------------------------------------


def print_exercise_list(out: Out, exercises: Sequence[Exercise], statuses: Mapping[str, str]) -> None:
    # Narrow terminals lose the topic, then the kind, then the difficulty: never a wrapped row.
    out.table(EXERCISE_COLUMNS, exercise_rows(exercises, statuses), shrink=1, optional=(3, 2, 4))


def print_exercise(out: Out, exercise: Exercise, status: str) -> None:
    """The header, then the prompt rendered from its Markdown as the practice loop renders it."""
    out.wrapped(*exercise_header(exercise, status))
    out.line()
    out.stream.write(rendered_prompt(exercise, out.width, out.color))


def rendered_prompt(exercise: Exercise, width: int, color: bool) -> str:
    """The prompt as rich renders its Markdown (what the practice loop shows), at this width. Importing
    rich's Markdown costs more than a quick command's whole budget, so the text is cached per prompt,
    width and colour in the data folder, and rendered again only when one of them changes."""
    from mlprep.workspace import atomic_write, data_dir

    try:
        stat = exercise.prompt_path.stat()
    except OSError:
        stat = None
    # Keyed by the prompt file's size and modification time: no need to read or hash it when cached.
    key = f"{width}-{int(color)}-{RENDER_FORMAT}-{stat.st_mtime_ns}-{stat.st_size}" if stat else None
    cached = data_dir() / "cache" / "prompts" / f"{exercise.id}-{key}.txt"
    if key is not None:
        try:
            return cached.read_text(encoding="utf-8")
        except OSError:
            pass
    prompt = exercise.prompt()
    import io

    from rich.console import Console

    from mlprep.screen.markdown import markdown

    console = Console(file=io.StringIO(), width=width, force_terminal=color, no_color=not color, color_system="standard" if color else None,
                      highlight=False, emoji=False)
    console.print(markdown(inert(prompt)), crop=False)  # a code line wider than the screen runs on: the terminal folds it, whole
    # rich pads every line to the width: without the padding, a pipe or a narrower window reads clean
    text = re.sub(r" +((?:\x1b\[[0-9;]*m)*)$", r"\1", console.file.getvalue(), flags=re.M)  # type: ignore[attr-defined]
    try:
        for older in cached.parent.glob(f"{exercise.id}-{width}-{int(color)}-*.txt"):
            older.unlink(missing_ok=True)  # renderings of an earlier version of the prompt
        atomic_write(cached, text)
    except OSError:
        pass  # a read-only data folder: rendered each time, still right
    return text


RENDER_FORMAT = 2  # of the cached prompt renderings: raise it when rendered_prompt changes


def hint_cells(index: int, total: int, hint: str) -> list[Cell]:
    """A hint with its number (print it with Out.wrapped)."""
    return [(f"hint {index + 1}/{total}: ", "bold cyan"), (hint, "")]


def mastery_bar(passed: int, total: int, width: int = 12) -> list[Cell]:
    filled = round(width * passed / total) if total else 0
    return [("█" * filled, "green"), ("░" * (width - filled), "dim"), (f" {100 * passed / total:3.0f}%" if total else "  —", "")]


def print_progress(out: Out, standing: Standing) -> None:
    """Mastery per topic, recent grades, interviews, then the streak, time, hints and reveals in a few lines."""
    topics, topic_seconds, grades, interviews = standing.topics, standing.topic_seconds, standing.grades, standing.interviews
    hints, diagnoses, reveals, streak = standing.hints, standing.diagnoses, standing.reveals, standing.streak

    def bar(passed: int, total: int) -> Cell:
        cells = mastery_bar(passed, total)
        return "".join(out.styled(*c) for c in cells), ""  # styled here: the table measures what is visible

    rows = [[(topic, ""), (str(passed), "green" if passed else ""), (str(attempted), ""), (str(todo), ""), (str(total), ""),
             (duration_text(topic_seconds.get(topic, 0.0)), ""), bar(passed, total)] for topic, passed, attempted, todo, total in topics]
    total_row = None
    if topics:
        passed, total = sum(r[1] for r in topics), sum(r[4] for r in topics)
        total_row = [("all", "bold"), *((str(sum(r[i] for r in topics)), "bold") for i in range(1, 5)),
                     (duration_text(standing.practised_s), "bold"), bar(passed, total)]
    out.table(("topic", "passed", "attempted", "todo", "total", "time", "mastery"), rows, right=(1, 2, 3, 4, 5), title="by topic", total=total_row,
              shrink=0)
    out.line()
    if grades:
        out.table(("when (UTC)", "exercise", "status", "checks", "source", "device"), [
            [(g.graded_at.replace("+00:00", ""), ""), (g.exercise_id, "bold"),
             ("internal error", "bold magenta") if g.internal_error else status_cell(g.status),
             (f"{g.checks_passed}/{g.checks_total}", ""), (g.source, ""), (g.device, "")] for g in grades
        ], title="recent grades", shrink=1)
        if standing.grades_total > len(grades):
            out.line((f"({standing.grades_total - len(grades)} older grades not shown)", "dim"))
    else:
        out.line(("no grades yet: start with `mlprep attempt ID`, then `mlprep grade ID`", "dim"))
    out.line()
    if interviews:
        out.table(("when (UTC)", "passed", "minutes", "ended", "exercises"), [
            [(i.started_at.replace("+00:00", ""), ""), (f"{i.passed}/{len(i.items)}", "green" if i.passed == len(i.items) else ""),
             (f"{i.minutes:g}", ""), ("time up" if i.ended_by == "time" else "ended early", ""),
             (", ".join(item.exercise_id for item in i.items), "")] for i in interviews
        ], title="interviews", shrink=4)
        out.line()
    out.wrapped(("streak: ", "bold"), f"{plural(streak[0], 'day')} (longest {streak[1]})",
                ("   time practised: ", "bold"), duration_text(standing.practised_s),
                ("   reviews due: ", "bold"), str(standing.reviews_due) + (" (`mlprep review`)" if standing.reviews_due else ""), indent="  ")
    used = str(sum(shown for shown, _ in hints.values()) + sum(diagnoses.values()))
    if hints or diagnoses:
        per_exercise = []
        for e in sorted(hints.keys() | diagnoses.keys()):
            parts = [f"{hints[e][0]}/{hints[e][1]}"] if e in hints else []
            parts += [f"{diagnoses[e]} diagnos{'is' if diagnoses[e] == 1 else 'es'}"] if diagnoses.get(e) else []
            per_exercise.append(f"{e} {' + '.join(parts)}")
        used += " (" + ", ".join(per_exercise) + ")"
    revealed = str(len(reveals))
    forced = [r.exercise_id for r in reveals if r.forced]
    if forced:
        revealed += f" ({len(forced)} before passing: {', '.join(dict.fromkeys(forced))})"
    out.wrapped(("attempts started: ", "bold"), str(standing.attempts_started), ("   solutions revealed: ", "bold"), revealed, indent="  ")
    out.wrapped(("hints used: ", "bold"), used, indent="  ")
