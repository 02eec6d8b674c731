"""The practice loop as a person uses it: mlprep runs in a real terminal (tmux), keys are typed with
send-keys, the screen is read with capture-pane, and the attempt file is saved the way editors do.

Every wait polls the screen against a deadline; none is a bare sleep standing in for an assertion.
Without tmux these tests skip, except in CI (CI=1, set by .ci/run, which installs tmux) where a
missing tmux is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mlprep.progress.store import Store

WAIT_S = 30.0  # generous: a first grade imports the grading stack on a loaded CI machine
WIDTH, HEIGHT = 120, 50
END_MARKER = "[mlprep-test: shell done]"  # printed after everything the shell reports about mlprep


def attempt_file(folder: Path, exercise_id: str) -> Path:
    return folder / exercise_id / (exercise_id.replace("-", "_") + ".py")


def reference(bank: Path, exercise_id: str) -> str:
    return (bank / "solutions" / exercise_id / "reference.py").read_text()


def save_like_an_editor(path: Path, text: str) -> None:
    """Write a new file and rename it over the attempt, as vim and VS Code do."""
    tmp = path.with_name(f".{path.name}.swp-new")
    tmp.write_text(text)
    os.replace(tmp, path)


def flat(text: str) -> str:
    return " ".join(text.split())


class Terminal:
    """One tmux server on its own socket, running one mlprep command in a fixed-size window."""

    def __init__(self, tmux: str, socket: str, env: dict[str, str]):
        self.tmux = tmux
        self.socket = socket
        self.env = env

    def _tmux(self, *args: str) -> str:
        done = subprocess.run([self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=20, check=False)
        assert done.returncode == 0, f"tmux {' '.join(args)}: {done.stderr}"
        return done.stdout

    def start(self, *mlprep_args: str, width: int = WIDTH, height: int = HEIGHT) -> None:
        """Run `python -m mlprep ARGS`; afterwards the shell prints its exit status, the terminal's
        settings and an end marker, so a test can see all of it once the marker is there (the window
        stays open)."""
        # COLUMNS and LINES unset: the window's size is the terminal's, as for a person.
        command = shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", *(f"{k}={v}" for k, v in self.env.items()), sys.executable, "-m", "mlprep", *mlprep_args])
        # `trap : INT`: Ctrl-C reaches the whole foreground group; the shell must outlive it to report.
        script = f'trap : INT; {command}; echo "[exit $?]"; stty -a | tr "\\n" " "; echo; echo "{END_MARKER}"; exec sleep 600'
        self._tmux("-f", "/dev/null", "new-session", "-d", "-x", str(width), "-y", str(height), "-s", "main", "sh", "-c", script)

    def screen(self, history: bool = False) -> str:
        """What the window shows now; with history, what scrolled off it too (each redraw clears the screen into it)."""
        return self._tmux("capture-pane", "-p", "-J", "-t", "main", *(("-S", "-500") if history else ()))

    def press(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "main", *keys)

    def wait_for(self, wanted: str | Callable[[str], bool], timeout_s: float = WAIT_S, history: bool = False) -> str:
        """Poll until `wanted` (a string, found even where the screen wrapped it; or a predicate) is on the screen."""
        check = wanted if callable(wanted) else (lambda screen: flat(wanted) in flat(screen))
        deadline = time.monotonic() + timeout_s
        while True:
            screen = self.screen(history)
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"not on the screen after {timeout_s:.0f} s: {wanted!r}\n--- screen ---\n{screen}")
            time.sleep(0.1)

    def wait_for_exit(self, status: int) -> str:
        """The screen once the shell has printed everything after mlprep (status, stty, end marker):
        waiting for `[exit N]` alone would race the stty line printed after it."""
        screen = self.wait_for(lambda s: END_MARKER in s, history=True)
        assert f"[exit {status}]" in screen, screen
        return screen

    def mlprep_pid(self) -> int:
        """The mlprep process: the child of the pane's shell."""
        shell = int(self._tmux("list-panes", "-t", "main", "-F", "#{pane_pid}").strip())
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == shell:
                    return int(stat.parent.name)
            time.sleep(0.1)
        pytest.fail("no mlprep process under the pane's shell")


def terminal_restored(screen: str) -> bool:
    """stty -a after mlprep exited: canonical mode and echo are on again (cbreak turns both off)."""
    settings = screen.split("]", 1)[-1]
    return re.search(r"(?<!-)\bicanon\b", settings) is not None and re.search(r"(?<!-)\becho\b", settings) is not None


@pytest.fixture
def terminal(fixture_bank: Path, mlprep_home: Path) -> Iterator[Terminal]:
    tmux = shutil.which("tmux")
    if tmux is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing in CI: .ci/run installs it (apt-get install tmux)")
        pytest.skip("tmux is not installed (CI installs it; here: apt-get install tmux)")
    env = {"MLPREP_HOME": str(mlprep_home), "MLPREP_BANK": str(fixture_bank), "TERM": "xterm-256color", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    opened = Terminal(tmux, f"mlprep-test-{uuid.uuid4().hex[:12]}", env)
    try:
        yield opened
    finally:
        subprocess.run([tmux, "-L", opened.socket, "kill-server"], capture_output=True, timeout=20, check=False)


# -- watch mode ------------------------------------------------------------------------------------


def test_watch_regrades_each_save_and_moves_on_after_a_pass(terminal: Terminal, mlprep_home: Path, fixture_bank: Path) -> None:
    workspace = mlprep_home / "workspace"
    terminal.start("attempt", "add-one", "--watch")
    terminal.wait_for("waiting for you to save the file")
    terminal.press("n")
    terminal.wait_for("n moves on once add-one passes")

    save_like_an_editor(attempt_file(workspace, "add-one"), "def add_one(x):\n    return x + 2\n")
    terminal.wait_for("add-one: FAIL")
    terminal.press("h")
    terminal.wait_for("hint 1/3: Think about what 'one more' means")

    attempt_file(workspace, "add-one").write_text("def add_one(x):\n    return 1 + x  # mine\n")  # an in-place save too
    terminal.wait_for(lambda s: "add-one: PASS" in s and "n: next in the suggested order: reverse-words" in flat(s))
    terminal.press("s")
    terminal.wait_for(lambda s: "your attempt → reference" in s and "-    return 1 + x  # mine" in s and s.rstrip().endswith("q quit"))

    terminal.press("n")
    terminal.wait_for(lambda s: "Reverse the words of a sentence  (reverse-words)" in s and s.rstrip().endswith("q quit"))
    assert attempt_file(workspace, "reverse-words").read_text() == (fixture_bank / "exercises" / "reverse-words" / "stub.py").read_text()

    terminal.press("q")
    screen = terminal.wait_for_exit(0)
    assert terminal_restored(screen), screen
    with Store.open_default() as store:
        assert [(g.exercise_id, g.status, g.source) for g in store.grades()][::-1] == [("add-one", "fail", "workspace"), ("add-one", "pass", "workspace")]
        assert store.latest_attempt("reverse-words") is not None
        assert [(r.exercise_id, r.forced) for r in store.reveals()] == [("add-one", False)]
        assert store.hints_shown() == {"add-one": 1}


@pytest.mark.parametrize(("width", "height"), [(80, 24), (110, 45)])
def test_the_watch_screen_fits_the_terminal_with_the_verdict_by_the_key_bar(terminal: Terminal, mlprep_home: Path, width: int, height: int) -> None:
    """A long failing grade (a real exercise, a known mistake) on an 80x24 and a 110x45 screen: the
    verdict and the key bar stay at the bottom, the header says what the grade says, the first
    failure is on the first page, space pages through the rest, and "Checking…" shows by the key bar."""
    from mlprep.bank import load_bank

    root = Path(__file__).resolve().parents[1]
    exercise = load_bank(root).get("kmeans-edge")
    [bug] = [b for b in exercise.bugs() if b.name == "tol_strict"]
    buggy = bug.apply(exercise.reference_path.read_text())
    path = attempt_file(mlprep_home / "workspace", "kmeans-edge")
    path.parent.mkdir(parents=True)
    path.write_text(buggy)
    terminal.env["MLPREP_BANK"] = str(root)
    terminal.start("attempt", "kmeans-edge", "--watch", width=width, height=height)

    def bottom(screen: str) -> list[str]:
        """The verdict line and the key bar ("" while the screen is still blank)."""
        return ["", "", *screen.rstrip("\n").splitlines()][-2:]

    screen = terminal.wait_for(lambda s: "kmeans-edge: FAIL" in bottom(s)[0])
    lines = screen.rstrip("\n").splitlines()
    assert len(lines) <= height and all(len(line) <= width for line in lines), screen
    verdict, keys = bottom(screen)
    assert verdict.startswith("kmeans-edge: FAIL — 1 of 18 checks did not pass"), screen
    assert keys.startswith("h hint") and keys.rstrip().endswith("q quit"), screen
    assert "status: attempted" in screen and "FAIL a squared shift exactly equal to tol stops" in screen
    if "space page 1/" in keys:
        terminal.press("Space")
        screen = terminal.wait_for(lambda s: "space page 2/" in bottom(s)[1])
        assert bottom(screen)[0].startswith("kmeans-edge: FAIL"), screen
    else:
        assert "fail    a squared shift exactly equal to tol stops" in screen  # all of it on one page

    save_like_an_editor(path, "import time\ntime.sleep(3)  # a slow import: the check stays in progress a while\n" + buggy)
    screen = terminal.wait_for(lambda s: bottom(s)[0].startswith("Checking…"))
    assert "previous grade: kmeans-edge: FAIL" in bottom(screen)[0] and bottom(screen)[1].startswith("h hint")
    terminal.wait_for(lambda s: "kmeans-edge: FAIL" in bottom(s)[0] and not bottom(s)[0].startswith("Checking"))
    terminal.press("q")
    screen = terminal.wait_for_exit(0)
    assert "╭" not in screen and "kmeans-edge: fail (" in screen  # the loop drew on the alternate screen: the shell's screen is back as it was


def test_a_quiz_answered_key_by_key_in_a_terminal(terminal: Terminal, mlprep_home: Path) -> None:
    """The quiz asks question by question: a single key picks a single-choice option, keys toggle an
    all-that-apply question's options and Enter confirms, numbers and orderings are typed; then the
    grade, and the terminal is as it was."""
    from mlprep.kinds import questions as q
    from mlprep.bank import load_bank

    bank = Path(__file__).resolve().parent / "fixtures" / "quiz_bank"
    terminal.env["MLPREP_BANK"] = str(bank)
    terminal.start("attempt", "units-quiz", width=100, height=40)
    terminal.wait_for("Q1/6.")
    exercise = load_bank(bank).get("units-quiz")
    quiz = q.load_quiz(exercise)
    presentation, _, _ = q.read_answers_file(quiz, mlprep_home / "workspace" / "units-quiz" / "units_quiz_answers.toml")
    for number, question_id in enumerate(presentation.questions, start=1):
        question, answer = quiz.question(question_id), quiz.key[question_id].correct
        terminal.wait_for(f"Q{number}/6. {question.text}")
        if question.type == "single":
            terminal.press(presentation.letter(question_id, answer))
        elif question.type == "multiple":
            for option in sorted(answer):
                terminal.press(presentation.letter(question_id, option))
            terminal.wait_for(f"selected: {', '.join(sorted(presentation.letter(question_id, i) for i in answer))}")
            terminal.press("Enter")
        else:
            typed = "".join(presentation.letter(question_id, i) for i in answer) if question.type == "ordering" else f"{answer:g}"
            terminal.press(typed, "Enter")
    screen = terminal.wait_for_exit(0)
    assert "units-quiz: PASS — 6 of 6 questions right (100%)" in flat(screen), screen
    assert terminal_restored(screen), screen


def test_manual_run_grades_on_r_and_ctrl_c_quits_cleanly(terminal: Terminal, mlprep_home: Path, fixture_bank: Path) -> None:
    terminal.start("watch", "reverse-words", "--manual-run")
    terminal.wait_for("waiting for you to save the file")
    attempt_file(mlprep_home / "workspace", "reverse-words").write_text(reference(fixture_bank, "reverse-words"))
    terminal.press("r")
    terminal.wait_for("reverse-words: PASS")
    terminal.press("C-c")
    screen = terminal.wait_for_exit(0)
    assert terminal_restored(screen), screen
    assert "Traceback" not in screen


def test_sigterm_leaves_the_terminal_as_it_was(terminal: Terminal) -> None:
    terminal.start("watch", "add-one")
    terminal.wait_for("waiting for you to save the file")
    os.kill(terminal.mlprep_pid(), signal.SIGTERM)
    screen = terminal.wait_for_exit(143)
    assert terminal_restored(screen), screen
    assert "Traceback" not in screen


def test_watch_without_an_id_resumes_the_last_exercise(terminal: Terminal) -> None:
    terminal.start("watch")
    screen = terminal.wait_for_exit(2)
    assert "no exercise to resume" in flat(screen)


# -- the mock interview ----------------------------------------------------------------------------


def interview_folder(mlprep_home: Path) -> Path:
    [folder] = (mlprep_home / "workspace" / "interviews").iterdir()
    return folder


def test_an_interview_counts_down_then_grades_everything_and_saves_a_report(terminal: Terminal, mlprep_home: Path, fixture_bank: Path) -> None:
    terminal.start("interview", "--minutes", "0.12", "--count", "2", "--seed", "3")
    countdown = re.compile(r"⏱ (\d+:\d\d) left")
    first = countdown.search(terminal.wait_for(countdown.search)).group(1)
    terminal.wait_for(lambda s: (m := countdown.search(s)) is not None and m.group(1) != first)  # it counts down, visibly
    terminal.press("h")
    terminal.wait_for("hint 1/3")

    folder = interview_folder(mlprep_home)
    save_like_an_editor(attempt_file(folder, "add-one"), reference(fixture_bank, "add-one"))
    terminal.wait_for("time is up")
    screen = terminal.wait_for_exit(1)  # the report is complete once the shell has the prompt back
    assert re.search(r"add-one\s*│\s*pass", screen) and re.search(r"reverse-words\s*│\s*error", screen), screen
    assert "1 of 2 passed" in screen and "what to review next" in screen and "reverse-words did not pass" in flat(screen)

    report = json.loads((folder / "report.json").read_text())
    assert report["ended_by"] == "time" and report["passed"] == 1
    assert sorted((e["id"], e["status"]) for e in report["exercises"]) == [("add-one", "pass"), ("reverse-words", "error")]
    on_screen, never_opened = report["exercises"]  # the first was on the screen all along; n was never pressed
    assert (on_screen["hints_used"], never_opened["hints_used"]) == (1, 0)
    assert on_screen["seconds"] >= 4 and never_opened["seconds"] == 0
    with Store.open_default() as store:
        [recorded] = store.interviews()
        assert recorded.id == report["id"] and {i.exercise_id: i.status for i in recorded.items} == {"add-one": "pass", "reverse-words": "error"}
        assert store.latest_attempt("add-one") is None  # the interview's files are its own, not practice attempts


def test_q_ends_an_interview_early_only_when_pressed_twice(terminal: Terminal, mlprep_home: Path) -> None:
    terminal.start("interview", "--minutes", "10", "--count", "1", "--seed", "1")
    terminal.wait_for("left")
    terminal.press("q")
    terminal.wait_for("press q again to end")
    terminal.press("x")
    terminal.wait_for("the interview goes on")
    terminal.press("q")
    terminal.press("q")
    screen = terminal.wait_for_exit(1)
    assert "the interview is over" in screen and "ended before the time ran out" in flat(screen)


# -- spaced review ---------------------------------------------------------------------------------


def test_review_runs_what_is_due_and_reschedules_it(terminal: Terminal, mlprep_home: Path, fixture_bank: Path) -> None:
    from mlprep.results import CheckResult, GradeResult

    with Store.open_default() as store:
        store.record_grade(GradeResult("add-one", "fail", "", [CheckResult("floats", "fail")]), source="workspace", path=None)
    two_days_ago = (datetime.now(UTC) - timedelta(days=2)).isoformat(timespec="seconds")
    with sqlite3.connect(mlprep_home / "progress.sqlite3") as db:  # a failure from two days ago: due now
        db.execute("UPDATE grades SET graded_at = ?", (two_days_ago,))

    terminal.start("review")
    terminal.wait_for("waiting for you to save the file")
    review_file = attempt_file(mlprep_home / "workspace" / "review", "add-one")
    save_like_an_editor(review_file, reference(fixture_bank, "add-one"))
    terminal.wait_for("add-one: PASS")
    terminal.press("q")
    screen = terminal.wait_for_exit(0)
    assert "add-one: recalled; next review in 1 day" in flat(screen)
    with Store.open_default() as store:
        state = store.review_states()[("code", "add-one")]
        assert state.repetitions == 1 and state.due_at > datetime.now(UTC) + timedelta(hours=23)
