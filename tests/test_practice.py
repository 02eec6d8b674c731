"""The practice loop's parts without a terminal: the grader thread's coalescing, the file watcher,
stdin that is not a terminal, the interview's pick, the suggested order, streaks and the config file."""

from __future__ import annotations

import os
import queue
import random
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import pytest

from mlprep.bank import Exercise, load_bank
from mlprep.config import load_config, parse_value, set_value
from mlprep.errors import MlprepError
from mlprep.practice.interview import pick_exercises
from mlprep.practice.attempts import next_in_order
from mlprep.progress.standing import day_streaks
from mlprep.results import CheckResult, GradeResult
from mlprep.practice.watch import Changed, FileWatcher, Graded, LoopItem, Regrader, WatchFailed

REPO = Path(__file__).resolve().parents[1]


def test_saves_during_a_grade_collapse_into_one_regrade_of_the_latest_content(fixture_bank: Path, tmp_path: Path) -> None:
    exercise = load_bank().get("add-one")
    path = tmp_path / "add_one.py"
    path.write_text("v0")
    started, release = threading.Event(), threading.Event()
    graded: list[str] = []

    def slow_grade(ex: Exercise, file: Path) -> GradeResult:
        graded.append(file.read_text())
        started.set()
        assert release.wait(30)
        return GradeResult(ex.id, "pass", "", [CheckResult("c", "pass")])

    events: queue.Queue[object] = queue.Queue()
    regrader = Regrader(slow_grade, events.put).start()
    item = LoopItem(exercise, path)
    regrader.request(item)
    assert started.wait(30)
    for n in range(1, 6):  # five saves while the first grade runs
        path.write_text(f"v{n}")
        regrader.request(item)
    release.set()
    first, second = events.get(timeout=30), events.get(timeout=30)
    assert isinstance(first, Graded) and first.content == b"v0"
    assert isinstance(second, Graded) and second.content == b"v5"
    path.write_text("final")
    regrader.request(item)
    third = events.get(timeout=30)  # a pile of queued requests would grade "v5" again here
    assert isinstance(third, Graded) and third.content == b"final"
    assert graded == ["v0", "v5", "final"]
    regrader.stop()


def test_a_crash_in_the_grader_is_reported_and_the_thread_goes_on(fixture_bank: Path, tmp_path: Path) -> None:
    exercise = load_bank().get("add-one")
    path = tmp_path / "add_one.py"
    path.write_text("x")
    calls = []

    def flaky_grade(ex: Exercise, file: Path) -> GradeResult:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("grader bug")
        return GradeResult(ex.id, "fail", "", [CheckResult("c", "fail")])

    events: queue.Queue[object] = queue.Queue()
    regrader = Regrader(flaky_grade, events.put).start()
    item = LoopItem(exercise, path)
    regrader.request(item)
    crashed = events.get(timeout=30)
    assert "internal error in mlprep" in crashed.reason and "RuntimeError: grader bug" in crashed.reason
    regrader.request(item)
    assert isinstance(events.get(timeout=30), Graded)
    regrader.stop()


def test_the_watcher_sees_a_save_by_rename_and_only_the_attempt_file(tmp_path: Path) -> None:
    target = tmp_path / "add_one.py"
    target.write_text("old")
    events: queue.Queue[object] = queue.Queue()
    watcher = FileWatcher(target, events.put).start()
    try:
        deadline = time.monotonic() + 30
        seen = None
        while seen is None and time.monotonic() < deadline:  # the watcher starts asynchronously: save until it reports
            (tmp_path / "notes.txt").write_text("not the attempt")
            tmp = tmp_path / ".add_one.py.tmp"
            tmp.write_text("new")
            os.replace(tmp, target)  # how vim and VS Code save
            try:
                seen = events.get(timeout=0.5)
            except queue.Empty:
                continue
        assert seen == Changed(target)
    finally:
        watcher.stop()


def test_a_watcher_that_cannot_watch_says_so(tmp_path: Path) -> None:
    events: queue.Queue[object] = queue.Queue()
    FileWatcher(tmp_path / "no-such-folder" / "add_one.py", events.put).start()
    failed = events.get(timeout=30)
    assert isinstance(failed, WatchFailed) and "no-such-folder" in failed.reason


class PipedWatch:
    """`mlprep watch add-one --manual-run` with its stdin a pipe: keys are written as lines, and the
    test waits for what the loop prints (a marker, never a sleep)."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlprep", "watch", "add-one", "--manual-run"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
        )
        self.output: list[bytes] = []
        self.reader = threading.Thread(target=lambda: self.output.extend(iter(lambda: self.process.stdout.read1(4096), b"")), daemon=True)
        self.reader.start()

    def text(self) -> str:
        return b"".join(self.output).decode(errors="replace")

    def wait_for(self, text: str, within_s: float = 60) -> None:
        deadline = time.monotonic() + within_s
        while text not in self.text():
            assert time.monotonic() < deadline, f"{text!r} never came:\n" + self.text()
            time.sleep(0.05)

    def press(self, key: str) -> None:
        self.process.stdin.write(key.encode() + b"\n")
        self.process.stdin.flush()

    def quit(self) -> None:
        self.press("q")
        assert self.process.wait(timeout=30) == 0
        self.reader.join(timeout=10)
        assert "Traceback" not in self.text()

    def kill(self) -> None:
        self.process.kill()


def test_stdin_that_is_not_a_terminal_still_drives_the_loop(fixture_bank: Path, mlprep_home: Path) -> None:
    watch = PipedWatch()
    try:
        watch.wait_for("stdin is not a terminal")
        attempt = mlprep_home / "workspace" / "add-one" / "add_one.py"
        attempt.write_text((fixture_bank / "solutions" / "add-one" / "reference.py").read_text())
        watch.press("r")
        watch.wait_for("add-one: PASS")
        watch.quit()
    finally:
        watch.kill()


def test_the_d_key_names_the_known_mistake_of_a_failed_grade_and_counts_it_as_a_hint(fixture_bank: Path, mlprep_home: Path) -> None:
    watch = PipedWatch()
    try:
        watch.wait_for("stdin is not a terminal")
        watch.press("d")
        watch.wait_for("d diagnoses a failed grade: nothing is graded yet")
        attempt = mlprep_home / "workspace" / "add-one" / "add_one.py"
        attempt.write_text("def add_one(x):\n    return x + 2  # written apart from the bank's variant\n")
        watch.press("r")
        watch.wait_for("add-one: FAIL")
        watch.press("d")
        watch.wait_for("diagnosis: This matches a known mistake: adds two instead of one (adds_two).")
        watch.quit()
    finally:
        watch.kill()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    progress = subprocess.run([sys.executable, "-m", "mlprep", "progress"], capture_output=True, text=True, env=env, timeout=60)
    assert "hints used: 1 (add-one 1 diagnosis)" in progress.stdout, progress.stdout


# -- interview pick, suggested order, streaks ------------------------------------------------------


def fake_exercise(exercise_id: str, kind: str = "code", topic: str = "t", order: int = 1) -> Exercise:
    return Exercise(exercise_id, exercise_id, kind, topic, "easy", "", (), 1.0, 64, order, (), Path("/nonexistent"))


def test_an_interview_picks_unseen_exercises_first_and_mixes_kinds() -> None:
    bank = [fake_exercise(f"c{i}") for i in range(4)] + [fake_exercise(f"q{i}", kind="quiz") for i in range(4)]
    statuses = {"c0": "passed", "c1": "attempted", "q0": "passed"}
    for seed in range(20):
        picked = pick_exercises(bank, statuses, count=4, topic=None, rng=random.Random(seed))
        assert len({e.id for e in picked}) == 4
        assert not {"c0", "c1", "q0"} & {e.id for e in picked}  # five unseen are enough for four
        assert sorted(e.kind for e in picked) == ["code", "code", "quiz", "quiz"]
    everything = pick_exercises(bank, statuses, count=20, topic=None, rng=random.Random(1))
    assert len(everything) == 8
    assert pick_exercises(bank, statuses, count=3, topic=None, rng=random.Random(5)) == pick_exercises(bank, statuses, count=3, topic=None, rng=random.Random(5))
    assert pick_exercises(bank, statuses, count=3, topic="elsewhere", rng=random.Random(5)) == []


def test_next_in_the_suggested_order_skips_what_is_passed_and_wraps() -> None:
    bank = [fake_exercise(name, order=n) for n, name in enumerate(["a", "b", "c", "d"])]
    assert next_in_order(bank, bank[0], {}).id == "b"
    assert next_in_order(bank, bank[0], {"b": "passed", "c": "attempted"}).id == "c"
    assert next_in_order(bank, bank[2], {"d": "passed"}).id == "a"
    assert next_in_order(bank, bank[0], {"b": "passed", "c": "passed", "d": "passed"}) is None


def test_day_streaks() -> None:
    days = {date(2030, 1, d) for d in (1, 2, 3, 7, 8)}
    assert day_streaks(days, date(2030, 1, 8)) == (2, 3)
    assert day_streaks(days, date(2030, 1, 9)) == (2, 3)  # today is not over yet
    assert day_streaks(days, date(2030, 1, 10)) == (0, 3)
    assert day_streaks(set(), date(2030, 1, 10)) == (0, 0)


# -- config ----------------------------------------------------------------------------------------


def test_config_round_trips_through_toml_and_rejects_what_it_does_not_know(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    assert load_config(path) == {}
    set_value("editor", 'code -w "my dir"', path)
    set_value("auto_edit", parse_value("auto_edit", "TRUE"), path)
    assert load_config(path) == {"editor": 'code -w "my dir"', "auto_edit": True}
    set_value("editor", None, path)
    assert load_config(path) == {"auto_edit": True}
    with pytest.raises(MlprepError, match="true or false"):
        parse_value("auto_edit", "yes")
    with pytest.raises(MlprepError, match="no setting 'colour'"):
        set_value("colour", "red", path)
    path.write_text("editor = 3\n")
    with pytest.raises(MlprepError, match="must be a str"):
        load_config(path)
    path.write_text("editor = \n")
    with pytest.raises(MlprepError, match="does not parse") as broken:
        load_config(path)
    assert str(path) in broken.value.message


def test_one_exercise_has_one_status_in_every_command_and_screen(fixture_bank: Path, mlprep_home: Path) -> None:
    """Passed once, then graded wrong: `list`, `progress`, the loop's header and `review` say the same."""
    watch = PipedWatch()
    try:
        watch.wait_for("stdin is not a terminal")
        attempt = mlprep_home / "workspace" / "add-one" / "add_one.py"
        attempt.write_text((fixture_bank / "solutions" / "add-one" / "reference.py").read_text())
        watch.press("r")
        watch.wait_for("add-one: PASS")
        attempt.write_text("def add_one(x):\n    return x + 2\n")
        seen = len(watch.text())
        watch.press("r")
        watch.wait_for("add-one: FAIL")
        after = watch.text()[seen:]
        assert "status: passed" in after and "status: attempted" not in after and "status: todo" not in after
        watch.quit()
    finally:
        watch.kill()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    listed = subprocess.run([sys.executable, "-m", "mlprep", "list", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert [e["status"] for e in __import__("json").loads(listed.stdout) if e["id"] == "add-one"] == ["passed"]
    review = subprocess.run([sys.executable, "-m", "mlprep", "review", "--list"], capture_output=True, text=True, env=env, timeout=60)
    [line] = [line for line in review.stdout.splitlines() if line.startswith("add-one")]
    assert "its latest grade did not pass" in line and "not passed yet" not in line
