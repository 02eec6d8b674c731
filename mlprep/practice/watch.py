"""The practice loop: regrade on every save, single-key commands, a countdown for interviews.

    PracticeLoop(store, bank, items, policy, ...).run() -> LoopOutcome

Three threads, one owner of everything: the main thread runs the loop (reads keys, draws the
screen, writes the store: a SQLite connection belongs to one thread); a FileWatcher thread turns
saves into events; a Regrader thread runs grade_file (it spawns a sandbox and can take seconds, so
the screen says "Checking…" at once and never freezes). Both threads only post events to a queue.

The terminal: keys are read in cbreak mode (no Enter, no echo; Ctrl-C and Ctrl-Z still signals), and
the saved settings are restored on every way out: q, Ctrl-C, an exception, SIGTERM (and re-applied
after Ctrl-Z / fg). When stdin is not a terminal, its characters are still read as keys (a pipe of
"r\\nq\\n" works), and a note says so.

The learner's errors (a syntax error, a crash, a hang) are grades like any other: the loop never
exits on them. A defect in mlprep while grading is shown on the screen, and the loop goes on.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.segment import Segment, Segments
from rich.text import Text

from mlprep.bank import Bank, Exercise
from mlprep.clock import Clock
from mlprep.errors import MlprepError
from mlprep.kinds import kind_of
from mlprep.practice.attempts import next_in_order, reveal_solution, start_attempt
from mlprep.practice.grading import grade_attempt
from mlprep.progress.store import Store
from mlprep.screen.keys import Keys

if TYPE_CHECKING:
    from mlprep.results import GradeResult

TICK_S = 0.1  # how often the loop looks at the event queue and the countdown
DEBOUNCE_MS = 800  # watchfiles groups the events of one save (write, rename, chmod) into one


# -- events posted to the loop ---------------------------------------------------------------------


@dataclass(frozen=True)
class Changed:
    """The watched file was saved."""
    path: Path


@dataclass(frozen=True)
class WatchFailed:
    """Watching the file failed (the reason, in words)."""
    reason: str


@dataclass(frozen=True)
class Graded:
    """A grade of the loop's item, with the content it graded."""
    item: LoopItem
    content: bytes  # what was read just before grading (for reusing the grade when nothing changed)
    result: GradeResult


@dataclass(frozen=True)
class GradeCrashed:
    """Grading the loop's item failed in mlprep itself (the reason, in words)."""
    item: LoopItem
    reason: str


@dataclass(frozen=True)
class Diagnosed:
    """A failing grade's diagnosis, ready to show."""
    item: LoopItem
    result: GradeResult  # the grade that was diagnosed
    diagnosis: object | None  # mlprep.diagnosis.Diagnosis; None when diagnosing failed
    error: str = ""


# -- the loop's model ------------------------------------------------------------------------------


@dataclass(eq=False)
class LoopItem:
    """One exercise in the loop, with what happened to it here."""

    exercise: Exercise
    path: Path | None = None  # set when the loop first enters it (policy.prepare)
    result: GradeResult | None = None
    graded_content: bytes | None = None
    grade_id: int | None = None
    checking: bool = False
    passed: bool = False  # a pass was graded in this loop
    hints_used: int = 0  # diagnoses that named a known mistake included
    seconds: float = 0.0
    diagnosing: bool = False


@dataclass
class LoopPolicy:
    """What differs between watch mode, an interview and a review.

    mode: "watch", "interview" or "review" (the store's practice-time mode);
    source: the store's grade source; free_navigation: n and p move without a pass (else n only
    after a pass); solutions: s shows the reference after a pass; deadline: the clock's monotonic
    time at which the loop ends; prepare: gives the entered exercise its file; follow: the exercise
    that n moves to past the end of the items (watch mode: the next one in the suggested order)."""

    mode: str
    source: str
    prepare: Callable[[Exercise], Path]
    free_navigation: bool = False
    solutions: bool = True
    deadline: float | None = None
    confirm_quit: bool = False
    follow: Callable[[Exercise], Exercise | None] | None = None
    editor: str | None = None  # the editor setting (mlprep config); $VISUAL/$EDITOR otherwise


@dataclass
class LoopOutcome:
    """How the practice loop ended, and the items it went through."""
    ended_by: str  # "quit", "time", "interrupt" (Ctrl-C), "terminate" (SIGTERM), "stdin" (closed, with --manual-run)
    items: list[LoopItem] = field(default_factory=list)


def _text_options(part: Any) -> dict[str, Any]:
    """A Text's own no_wrap and overflow, which console.print and render_lines otherwise override."""
    return {"no_wrap": part.no_wrap, "overflow": part.overflow} if isinstance(part, Text) and part.no_wrap else {}


class Terminated(Exception):
    """SIGTERM arrived: leave the loop the clean way (terminal restored, time recorded)."""


# -- the terminal ----------------------------------------------------------------------------------


# -- the file watcher and the grader thread --------------------------------------------------------


class FileWatcher:
    """Posts Changed when `path` is saved. Editors often save by writing another file and renaming
    it over the old one (vim, VS Code), which a watch on the file itself would miss after the first
    save: so the folder is watched, and its events filtered to the file's name."""

    def __init__(self, path: Path, post: Callable[[object], None]):
        self.path = path
        self._post = post
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mlprep-watch-{path.name}", daemon=True)

    def start(self) -> FileWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            import watchfiles

            name = self.path.name
            for _ in watchfiles.watch(
                self.path.parent,
                watch_filter=lambda _change, changed: os.path.basename(changed) == name,
                debounce=DEBOUNCE_MS,
                stop_event=self._stop,
                recursive=False,
                raise_interrupt=False,
            ):
                self._post(Changed(self.path))
        except Exception as exc:  # noqa: BLE001 - inotify limits, a vanished folder, a file system without events
            self._post(WatchFailed(f"{type(exc).__name__}: {exc}"))


class Regrader:
    """Grades one item at a time in a worker thread. Requests that arrive while a grade runs
    collapse into exactly one more grade after it (of the latest requested item), never a pile."""

    def __init__(self, grade: Callable[[Exercise, Path], GradeResult], post: Callable[[object], None]):
        self._grade = grade
        self._post = post
        self._lock = threading.Lock()
        self._wanted = threading.Event()
        self._target: LoopItem | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="mlprep-grader", daemon=True)

    def start(self) -> Regrader:
        self._thread.start()
        return self

    def request(self, item: LoopItem) -> None:
        with self._lock:
            self._target = item
            self._wanted.set()

    def stop(self) -> None:
        # A grade in flight is not waited for: its sandbox has its own time limit, and the thread is a daemon.
        self._stopping = True
        self._wanted.set()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            with self._lock:
                if self._stopping:
                    return
                item = self._target
                self._wanted.clear()
            assert item is not None and item.path is not None
            try:
                content = item.path.read_bytes()
            except OSError as exc:
                self._post(GradeCrashed(item, f"cannot read {item.path} ({exc.strerror or exc}); save the file again"))
                continue
            try:
                self._post(Graded(item, content, self._grade(item.exercise, item.path)))
            except Exception as exc:  # noqa: BLE001 - a defect in mlprep: shown, and the loop goes on
                self._post(GradeCrashed(item, f"internal error in mlprep while grading (not your code): {type(exc).__name__}: {exc}"))


# -- the loop --------------------------------------------------------------------------------------


class PracticeLoop:
    def __init__(
        self,
        store: Store,
        bank: Bank,
        items: list[LoopItem],
        policy: LoopPolicy,
        *,
        clock: Clock,
        console: Console,
        stdin: TextIO | None = None,
        manual: bool = False,
        grade: Callable[[Exercise, Path], GradeResult] = grade_attempt,
        open_editor_first: bool = False,
    ):
        if not items:
            raise MlprepError("nothing to practise")
        self.store = store
        self.bank = bank
        self.items = items
        self.policy = policy
        self.clock = clock
        self.console = console
        self.keys = Keys(stdin if stdin is not None else sys.stdin)
        self.manual = manual
        self.open_editor_first = open_editor_first
        self.events: queue.Queue[object] = queue.Queue()
        self.regrader = Regrader(grade, self.events.put)
        self.watcher: FileWatcher | None = None
        self.index = 0
        self.notes: list[Text] = []
        self.pending_quit = False
        self._entered_at = 0.0
        self._entered_wall = clock.now()
        self._footer = ""
        self._resumed = False
        self.extra: Any = None  # what a key asked for (the list, the solution), shown instead of the grade
        self.page = 0  # of the screen's body, when it is taller than the terminal (space and b page)
        self.pages = 1

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> LoopOutcome:
        previous_term = signal.getsignal(signal.SIGTERM)
        previous_cont = signal.getsignal(signal.SIGCONT)

        def on_term(_signum: int, _frame: object) -> None:
            raise Terminated()

        def on_cont(_signum: int, _frame: object) -> None:
            self._resumed = True  # handled by the loop, not here: a handler may interrupt a redraw or a store write

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGCONT, on_cont)
        self.regrader.start()
        ended_by = "quit"
        if self.console.is_terminal:
            self.console.set_alt_screen(True)  # the loop's screen is redrawn whole; the shell's comes back at the end
        try:
            with self.keys:
                self.enter(0)
                if self.open_editor_first:
                    self.open_editor()
                ended_by = self.loop()
        except KeyboardInterrupt:
            ended_by = "interrupt"
        except Terminated:
            ended_by = "terminate"
        finally:
            signal.signal(signal.SIGTERM, previous_term)
            signal.signal(signal.SIGCONT, previous_cont)
            self.regrader.stop()
            if self.watcher is not None:
                self.watcher.stop()
            self.leave()
            if self.console.is_terminal:
                self.console.set_alt_screen(False)
        return LoopOutcome(ended_by, self.items)

    def loop(self) -> str:
        if not self.keys.is_terminal:
            self.note("stdin is not a terminal: its characters are read as keys (e.g. `printf 'r\\nq\\n' | mlprep watch ID`)", style="yellow")
        while True:
            if self.policy.deadline is not None and self.clock.monotonic() >= self.policy.deadline:
                return "time"
            was_open = not self.keys.closed
            pressed = self.keys.read(TICK_S) if was_open else self._wait_for_event(TICK_S)
            for number, key in enumerate(pressed):
                ended = self.on_key(key)
                if ended:
                    self.keys.unread(pressed[number + 1:])  # typed ahead: for what reads the terminal next
                    return ended
            if was_open and self.keys.closed:
                if self.manual:
                    return "stdin"  # nothing can happen any more: no keys, no watcher
                self.note("stdin is closed: keys are off; still regrading on save (Ctrl-C quits)", style="yellow")
            if self._resumed:  # after Ctrl-Z and fg the shell has put the terminal back in its own mode
                self._resumed = False
                self.keys.raw_mode()
                self.redraw()
            while True:
                try:
                    event = self.events.get_nowait()
                except queue.Empty:
                    break
                self.on_event(event)
            self.update_countdown()

    def _wait_for_event(self, timeout_s: float) -> str:
        try:
            self.events.put(self.events.get(timeout=timeout_s))  # back in the queue, in order: handled just after
        except queue.Empty:
            pass
        return ""

    # -- moving between items ----------------------------------------------------------------

    @property
    def item(self) -> LoopItem:
        return self.items[self.index]

    def enter(self, index: int) -> None:
        self.index = index
        item = self.item
        if item.path is None:
            item.path = self.policy.prepare(item.exercise)
        self._entered_at = self.clock.monotonic()
        self._entered_wall = self.clock.now()
        self.extra, self.page = None, 0
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        if not self.manual:
            self.watcher = FileWatcher(item.path, self.events.put).start()
        if item.result is None and item.path.is_file() and not kind_of(item.exercise).is_untouched(item.exercise, item.path):
            self.regrade()  # work already there: show where it stands
        else:
            self.redraw()

    def leave(self) -> None:
        """Count the time spent on the current item (in memory and in the store)."""
        seconds = max(0.0, self.clock.monotonic() - self._entered_at)
        self.item.seconds += seconds
        self._entered_at = self.clock.monotonic()
        if seconds >= 1:
            self.store.record_practice_time(self.item.exercise.id, self.policy.mode, self._entered_wall, seconds)

    def move(self, step: int) -> None:
        self.leave()
        self.notes = []
        self.enter(self.index + step)

    # -- keys --------------------------------------------------------------------------------

    def key_help(self) -> list[tuple[str, str, bool]]:
        failed = self.item.result is not None and not self.item.result.passed
        keys = [("h", "hint", True), ("d", "diagnose", failed)]
        if self.policy.free_navigation:
            keys += [("p", "previous", self.index > 0), ("n", "next", self.index < len(self.items) - 1)]
        else:
            keys += [("n", "next", self.passed_here())]
        keys += [("l", "list", True)]
        if self.policy.solutions:
            keys += [("s", "solution", self.passed_here())]
        if self.pages > 1:
            keys += [("space", f"page {self.page + 1}/{self.pages}", True)]
        keys += [("r", "regrade", True), ("e", "edit", True), ("q", "end the interview" if self.policy.confirm_quit else "quit", True)]
        return keys

    def passed_here(self) -> bool:
        """The current exercise passes: its latest grade in this loop, or before the loop if it has none."""
        item = self.item
        if item.result is not None:
            return item.result.passed
        return self.policy.mode == "watch" and self.store.has_passed(item.exercise.id)

    def on_key(self, key: str) -> str | None:
        """Handle one key; return how the loop ends, or None to go on."""
        if key in "\r\n\t":
            return None
        if self.pending_quit:
            self.pending_quit = False
            if key == "q":
                return "quit"
            self.note("the interview goes on")
            return None
        if key == " " or key == "b":
            if self.pages > 1:  # the next page (after the last, the first again); b: the one before
                self.page = (self.page + (1 if key == " " else -1)) % self.pages
                self.redraw()
            elif key == "b":
                self.note("b pages back when the screen has more than one page", style="dim")
            return None
        key = key.lower()
        if key == "q":
            if self.policy.confirm_quit:
                self.pending_quit = True
                self.note("end the interview now and grade everything? press q again to end, any other key to go on", style="bold yellow")
                return None
            return "quit"
        if key == "h":
            self.take_hint()
        elif key == "d":
            self.diagnose()
        elif key == "n":
            self.next_item()
        elif key == "p" and self.policy.free_navigation:
            if self.index > 0:
                self.move(-1)
            else:
                self.note("this is the first exercise")
        elif key == "l":
            self.show_list()
        elif key == "s" and self.policy.solutions:
            self.show_solution()
        elif key == "r":
            self.regrade()
        elif key == "e":
            self.open_editor()
        else:
            self.note(f"no key {key!r}: " + ", ".join(f"{k} {label}" for k, label, _ in self.key_help()), style="dim")
        return None

    def take_hint(self) -> None:
        hints = self.item.exercise.hints
        if not hints:
            self.note(f"{self.item.exercise.id} has no hints")
            return
        index = self.store.take_hint(self.item.exercise.id, len(hints))
        if index is None:
            self.note(f"all {len(hints)} hints are shown above")
        else:
            self.item.hints_used += 1
            self.redraw()

    def diagnose(self) -> None:
        """Does the current grade match a known mistake? Found in a thread: the first time, the known
        mistakes are graded (seconds), and the loop keeps answering keys meanwhile."""
        item, result = self.item, self.item.result
        if result is None or result.passed:
            self.note("d diagnoses a failed grade: " + ("nothing is graded yet" if result is None else f"{item.exercise.id} passes"), style="dim")
            return
        if item.diagnosing:
            self.note("still diagnosing…", style="dim")
            return
        item.diagnosing = True
        self.note(f"diagnosing: comparing this grade with the {len(item.exercise.bugs())} known mistakes of {item.exercise.id}…", style="dim")

        def work() -> None:
            from mlprep.grading.diagnosis import diagnose

            try:
                self.events.put(Diagnosed(item, result, diagnose(item.exercise, result)))
            except Exception as exc:  # noqa: BLE001 - a defect in mlprep: shown, and the loop goes on
                self.events.put(Diagnosed(item, result, None, f"internal error in mlprep while diagnosing: {type(exc).__name__}: {exc}"))

        threading.Thread(target=work, name="mlprep-diagnosis", daemon=True).start()

    def on_diagnosed(self, event: Diagnosed) -> None:
        event.item.diagnosing = False
        diagnosis = event.diagnosis
        if diagnosis is None:
            self.note(event.error, style="bold magenta")
            return
        if diagnosis.found:  # a named mistake is a hint, also when the file changed meanwhile
            self.store.record_diagnosis(event.item.exercise.id, [bug.name for bug in diagnosis.matched])
            event.item.hints_used += 1
        if event.item is not self.item:
            return
        stale = "" if event.item.result is event.result else " (of the grade before your last save)"
        self.note(f"diagnosis{stale}: {diagnosis.text()}", style="bold yellow" if diagnosis.found else "")

    def next_item(self) -> None:
        if self.policy.free_navigation:
            if self.index < len(self.items) - 1:
                self.move(+1)
            else:
                self.note("this is the last exercise" + (" (q ends the interview)" if self.policy.confirm_quit else ""))
            return
        if not self.passed_here():
            self.note(f"n moves on once {self.item.exercise.id} passes (h for a hint)", style="yellow")
            return
        if self.index < len(self.items) - 1:
            self.move(+1)
            return
        following = self.policy.follow(self.item.exercise) if self.policy.follow is not None else None
        if following is None:
            self.note("no exercise left to move on to: every other one is passed", style="green")
            return
        self.items.append(LoopItem(following))
        self.move(+1)

    def show_list(self) -> None:
        from mlprep.screen.render import exercise_table, loop_items_table

        if self.policy.mode == "watch":
            color = self.console.color_system is not None and not self.console.no_color
            table = exercise_table(self.bank.exercises, self.store.statuses(), width=self.console.width - 1, color=color)
        else:
            rows = []
            for item in self.items:
                status = "not graded" if item.result is None else item.result.status
                rows.append((item.exercise.id + (" ◀" if item is self.item else ""), item.exercise.title, status))
            table = loop_items_table(rows)
        self.show(table)

    def show_solution(self) -> None:
        if not self.passed_here():
            self.note(f"the solution opens once {self.item.exercise.id} passes", style="yellow")
            return
        from mlprep.screen.render import shown_view

        self.show(shown_view(reveal_solution(self.store, self.item.exercise, attempt=self.item.path)))

    def open_editor(self) -> None:
        from mlprep.workspace import open_in_editor

        try:
            with self.keys.suspended():
                status = open_in_editor(self.item.path, self.policy.editor)
        except MlprepError as exc:
            self.note(exc.message, style="yellow")
            return
        if status != 0:
            self.note(f"the editor exited with status {status}", style="yellow")
        self.regrade()  # the watcher may be off (--manual-run), and a terminal editor hid the screen

    # -- grading -----------------------------------------------------------------------------

    def regrade(self) -> None:
        self.item.checking = True
        self.redraw()  # "Checking…" now; the grade arrives as an event
        self.regrader.request(self.item)

    def on_event(self, event: object) -> None:
        if isinstance(event, Changed):
            if event.path == self.item.path:
                self.regrade()
        elif isinstance(event, WatchFailed):
            self.watcher = None
            self.note(f"watching {self.item.path} failed ({event.reason}): press r to regrade after a save, "
                      "or start with --manual-run where change events don't arrive", style="bold yellow")
        elif isinstance(event, Graded):
            self.on_graded(event)
        elif isinstance(event, GradeCrashed):
            event.item.checking = False
            self.note(event.reason, style="bold magenta")
        elif isinstance(event, Diagnosed):
            self.on_diagnosed(event)

    def on_graded(self, event: Graded) -> None:
        item, result = event.item, event.result
        item.checking = False
        item.result = result
        item.graded_content = event.content
        item.grade_id = self.store.record_grade(result, source=self.policy.source, path=item.path)
        item.passed = item.passed or result.passed
        if item is not self.item:
            return  # graded after the learner moved on: recorded, not shown
        self.notes = []
        self.extra, self.page = None, 0  # the new grade replaces what a key showed
        if result.passed:
            self.note_pass()
        self.redraw()

    def note_pass(self) -> None:
        exercise = self.item.exercise
        note = Text(f"✓ {exercise.id} passes", style="bold green")
        if self.policy.solutions:
            note.append(" · s: the reference solution and your diff", style="green")
        if self.policy.free_navigation:
            if self.index < len(self.items) - 1:
                note.append(" · n: the next exercise", style="green")
        else:
            following = self.items[self.index + 1].exercise if self.index < len(self.items) - 1 else (
                self.policy.follow(exercise) if self.policy.follow is not None else None)
            if following is not None:
                note.append(f" · n: next in the suggested order: {following.id} ({following.title})", style="green")
            else:
                note.append(" · every other exercise is passed too", style="green")
        self.notes.append(note)

    # -- drawing -----------------------------------------------------------------------------

    def note(self, message: str, style: str = "") -> None:
        self.notes = [*self.notes[-2:], Text(message, style=style)]
        self.redraw()

    def show(self, view: Any) -> None:
        """Show `view` (the list, the solution) instead of the grade, until the next grade or move."""
        self.extra, self.page = view, 0
        self.redraw()

    def redraw(self) -> None:
        """The whole screen again. On a terminal it fits the window: the exercise at the top, the notes,
        the verdict and the key bar at the bottom, and between them as much of the body as fits (space
        pages through the rest). Elsewhere (a pipe) everything is written out, the key bar last."""
        from mlprep.screen.render import loop_screen

        item = self.item
        status = self.store.statuses().get(item.exercise.id, "todo")  # the exercise's status, as `mlprep list` says it; the verdict line has the grade
        shown = self.store.hints_shown().get(item.exercise.id, 0)
        width, height = self.console.size
        screen = loop_screen(
            self.console,
            exercise=item.exercise,
            status=status,
            path=str(item.path),
            position=f"{self.index + 1}/{len(self.items)}" if self.policy.free_navigation else None,
            result=item.result,
            checking=item.checking,
            hints=item.exercise.hints[:shown],
            notes=self.notes,
            extra=self.extra,
            body_lines=max(height - 9, 5) if self.console.is_terminal else 40,
        )
        if not self.console.is_terminal:
            for part in [*screen.top, *screen.body, *screen.bottom]:
                self.console.print(part, **_text_options(part))
            self.draw_footer()
            return
        options = self.console.options.update(width=width - 1, height=None)  # a full line would leave the cursor past the margin

        def lines(parts: list[Any]) -> list[list[Any]]:
            rendered: list[list[Any]] = []
            for part in parts:
                rendered += self.console.render_lines(part, options.update(**_text_options(part)), pad=False)
            return rendered

        top, body, bottom = lines(screen.top), lines(screen.body), lines(screen.bottom)
        room = max(height - len(top) - len(bottom) - 1, 1)  # 1: the key bar
        if len(top) + len(bottom) + 1 > height:  # a tiny window: the verdict and the key bar come first
            top, room = [], max(height - len(bottom) - 1, 0)
            bottom = bottom[-(height - 1):] if height > 1 else []
        self.pages = max(1, -(-len(body) // room)) if room else 1
        self.page = min(self.page, self.pages - 1)
        shown_body = body[self.page * room:(self.page + 1) * room] if room else []
        shown_body += [[]] * (room - len(shown_body))  # the verdict stays by the key bar
        self.console.file.write("\x1b[H\x1b[2J")
        segments: list[Any] = []
        for line in [*top, *shown_body, *bottom]:
            segments += [*line, Segment.line()]
        self.console.print(Segments(segments), end="")
        self.draw_footer()

    def countdown(self) -> str | None:
        if self.policy.deadline is None:
            return None
        from mlprep.screen.render import countdown_text

        return countdown_text(self.policy.deadline - self.clock.monotonic())

    def draw_footer(self) -> None:
        from mlprep.screen.render import key_bar

        self._footer = self.countdown() or ""
        if self.console.is_terminal:
            # One column short of the width: a line that fills it leaves the cursor past the margin,
            # where the next "\r" rewrite would land on a new line.
            self.console.print(key_bar(self.key_help(), self._footer or None, self.console.width - 1), end="", width=self.console.width - 1,
                               no_wrap=True, overflow="ellipsis")
        else:
            self.console.print(key_bar(self.key_help(), self._footer or None))

    def update_countdown(self) -> None:
        """Rewrite the key bar in place when the countdown's text changes (once a second)."""
        if self.policy.deadline is None or not self.console.is_terminal or self.countdown() == self._footer:
            return
        self.console.file.write("\r\x1b[2K")
        self.draw_footer()
        self.console.file.flush()


def watch_exercise(store: Store, bank: Bank, exercise: Exercise, path: Path, *, workspace: Path | None, clock: Clock, console: Console,
                   editor: str | None = None, manual: bool = False, edit: bool = False) -> LoopOutcome:
    """The practice loop on one attempt: regraded on every save; once it passes, n moves on to the next
    code exercise in the suggested order that is not passed yet (its attempt started in `workspace`)."""
    code = [e for e in bank.exercises if kind_of(e).runs_code]
    policy = LoopPolicy(mode="watch", source="workspace", prepare=lambda e: start_attempt(store, e, workspace)[0],
                        follow=lambda e: next_in_order(code, e, store.statuses()), editor=editor)
    return PracticeLoop(store, bank, [LoopItem(exercise, path)], policy, clock=clock, console=console, manual=manual, open_editor_first=edit).run()


def last_watched(store: Store, bank: Bank) -> Exercise:
    """The code exercise attempted last, which `mlprep watch` without an id resumes."""
    code = {e.id for e in bank.exercises if kind_of(e).runs_code}
    started = [a.exercise_id for a in store.attempts() if a.exercise_id in code]
    if not started:
        raise MlprepError("no exercise to resume: start one with `mlprep attempt ID --watch` or `mlprep watch ID`")
    return bank.get(started[-1])
