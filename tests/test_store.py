from __future__ import annotations

import multiprocessing
import sqlite3
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mlprep.progress import store as store_module
from mlprep.errors import ExitStatus
from mlprep.results import CheckResult, GradeResult
from mlprep.progress.store import MIGRATIONS, Interview, InterviewItem, Store, StoreError


def make_result(exercise_id: str = "adamw", status: str = "fail", *, internal_error: bool = False, tag: str = "") -> GradeResult:
    checks = [
        CheckResult("imports", "pass", "", {}, 0.1),
        CheckResult("float64 lockstep", "fail" if status != "pass" else "pass", f"expected 1.0, got 2.0 {tag}".strip(), {"max_abs": 1.0, "index": [0, 3]}, 0.25),
        CheckResult("cuda", "skip", "no GPU", {}, 0.0),
    ]
    return GradeResult(exercise_id, status, f"summary {tag}".strip(), checks, output="hi\n", device="cpu", duration_s=1.5, internal_error=internal_error)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "progress.sqlite3") as opened:
        yield opened


def test_fresh_store_is_migrated_to_the_latest_schema_in_wal_mode(store: Store) -> None:
    assert store.schema_version == len(MIGRATIONS)
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in store._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"attempts", "grades", "check_results", "hints_shown", "reveals"} <= tables


def test_open_default_lives_in_mlprep_home(mlprep_home: Path) -> None:
    with Store.open_default() as opened:
        assert opened.path == mlprep_home / "progress.sqlite3"
    assert (mlprep_home / "progress.sqlite3").is_file()


def test_attempts_latest_wins(store: Store, tmp_path: Path) -> None:
    assert store.latest_attempt("adamw") is None
    store.record_attempt("adamw", tmp_path / "one.py")
    store.record_attempt("knn", tmp_path / "knn.py")
    store.record_attempt("adamw", tmp_path / "two.py")
    latest = store.latest_attempt("adamw")
    assert latest is not None and latest.path == (tmp_path / "two.py").resolve()
    assert store.attempted_ids() == ["adamw", "knn"]
    assert [a.exercise_id for a in store.attempts()] == ["adamw", "knn", "adamw"]


def test_grade_round_trip_with_per_check_results(store: Store, tmp_path: Path) -> None:
    result = make_result()
    grade_id = store.record_grade(result, source="workspace", path=tmp_path / "adamw.py")
    assert store.grade_result(grade_id) == result
    assert store.check_results(grade_id) == result.checks
    [record] = store.grades()
    assert (record.exercise_id, record.status, record.source, record.device) == ("adamw", "fail", "workspace", "cpu")
    assert record.path == str((tmp_path / "adamw.py").resolve())
    assert (record.checks_passed, record.checks_total) == (1, 2)  # the skip is not counted as run
    assert record.duration_s == pytest.approx(1.5)


def test_record_grade_rejects_an_unknown_source(store: Store) -> None:
    with pytest.raises(ValueError, match="source"):
        store.record_grade(make_result(), source="somewhere", path=None)
    assert store.grades() == []


def test_statuses(store: Store, tmp_path: Path) -> None:
    store.record_attempt("adamw", tmp_path / "a.py")
    store.record_grade(make_result("knn", "fail"), source="file", path=None)
    store.record_grade(make_result("focal-loss", "pass"), source="file", path=None)
    store.record_grade(make_result("focal-loss", "fail"), source="workspace", path=None)  # passed once stays passed
    store.record_grade(make_result("causal-mask", "pass", internal_error=True), source="workspace", path=None)
    assert store.statuses() == {"adamw": "attempted", "knn": "attempted", "focal-loss": "passed"}
    assert store.has_passed("focal-loss")
    assert not store.has_passed("knn")
    assert not store.has_passed("causal-mask")  # an internal error says nothing about the learner


def test_hints_are_handed_out_once_each(store: Store) -> None:
    assert [store.take_hint("adamw", 3) for _ in range(5)] == [0, 1, 2, None, None]
    assert store.take_hint("knn", 0) is None
    assert store.hints_shown() == {"adamw": 3}


def test_reveals(store: Store) -> None:
    store.record_reveal("adamw", forced=True)
    store.record_reveal("knn", forced=False)
    assert [(r.exercise_id, r.forced) for r in store.reveals()] == [("adamw", True), ("knn", False)]


# -- migrations ------------------------------------------------------------------------------------


def test_a_new_migration_step_upgrades_an_old_store_and_keeps_its_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "progress.sqlite3"
    with Store(path) as old:
        old.record_grade(make_result(), source="workspace", path=None)
        assert old.schema_version == len(MIGRATIONS)
    steps = [*MIGRATIONS, ("ALTER TABLE grades ADD COLUMN note TEXT", "UPDATE grades SET note = 'migrated'")]
    monkeypatch.setattr(store_module, "MIGRATIONS", steps)
    with Store(path) as new:
        assert new.schema_version == len(MIGRATIONS) + 1
        assert new._db.execute("SELECT note FROM grades").fetchall() == [("migrated",)]
        assert len(new.grades()) == 1


def test_a_failing_migration_step_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "progress.sqlite3"
    Store(path).close()
    steps = [*MIGRATIONS, ("CREATE TABLE extra (x)", "THIS IS NOT SQL")]
    monkeypatch.setattr(store_module, "MIGRATIONS", steps)
    with pytest.raises(StoreError):
        Store(path)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'extra'").fetchone()[0] == 0
    db.close()


def test_a_store_from_a_newer_mlprep_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "progress.sqlite3"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    db.close()
    with pytest.raises(StoreError, match="upgrade mlprep") as refused:
        Store(path)
    assert str(path) in refused.value.message


def test_a_corrupt_store_is_a_one_line_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "progress.sqlite3"
    path.write_bytes(b"this is not an SQLite database, just some bytes " * 100)
    with pytest.raises(StoreError) as corrupt:
        Store(path)
    message = corrupt.value.message
    assert str(path) in message and "move it aside" in message and "\n" not in message
    assert corrupt.value.exit_status == ExitStatus.USAGE


# -- concurrency -----------------------------------------------------------------------------------

WRITERS = 6
GRADES_EACH = 15


def _write_grades(path: str, writer: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()  # all writers open a brand-new store (and migrate it) at the same moment
    with Store(Path(path)) as opened:
        for i in range(GRADES_EACH):
            opened.record_grade(make_result(f"ex{writer}", tag=f"w{writer}-{i}"), source="workspace", path=None)
            opened.record_attempt(f"ex{writer}", Path(path).parent / f"w{writer}-{i}.py")


def _take_hint(path: str, out: multiprocessing.Queue, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()
    with Store(Path(path)) as opened:
        out.put(opened.take_hint("adamw", 3))


def _assert_every_grade_landed(path: Path, writers: int) -> None:
    with Store(path) as opened:
        grades = opened.grades()
        assert len(grades) == writers * GRADES_EACH
        messages = {g.message for g in grades}
        assert messages == {f"summary w{w}-{i}" for w in range(writers) for i in range(GRADES_EACH)}
        assert all(g.checks_total == 2 for g in grades)  # every grade's checks landed with it
        assert opened._db.execute("SELECT COUNT(*) FROM check_results").fetchone()[0] == writers * GRADES_EACH * 3
        assert len(opened.attempts()) == writers * GRADES_EACH


def test_concurrent_processes_lose_no_grades(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    path = tmp_path / "progress.sqlite3"
    barrier = context.Barrier(WRITERS)
    workers = [context.Process(target=_write_grades, args=(str(path), w, barrier)) for w in range(WRITERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0] * WRITERS
    _assert_every_grade_landed(path, WRITERS)


def test_concurrent_threads_lose_no_grades(tmp_path: Path) -> None:
    path = tmp_path / "progress.sqlite3"
    barrier = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def run(writer: int) -> None:
        try:
            _write_grades(str(path), writer, barrier)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    _assert_every_grade_landed(path, WRITERS)


def _run_at_once(processes: int, target: object, *args: object) -> None:
    """Run target(*args, barrier) in `processes` processes released together; each must exit 0."""
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    barrier = context.Barrier(processes)
    workers = [context.Process(target=target, args=(*args, barrier)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0] * processes


def test_concurrent_hint_requests_never_show_the_same_hint_twice(tmp_path: Path) -> None:
    path = tmp_path / "progress.sqlite3"
    Store(path).close()
    processes = 5
    out = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn").Queue()
    _run_at_once(processes, _take_hint, str(path), out)
    taken = [out.get(timeout=10) for _ in range(processes)]
    assert sorted(t for t in taken if t is not None) == [0, 1, 2]
    assert taken.count(None) == processes - 3


# -- the practice loop's records (step 2) ----------------------------------------------------------


MOMENT = datetime(2030, 5, 1, 9, 30, tzinfo=UTC)


def record_with_old_columns(store: Store) -> None:
    """A grade as the first schema stored it (check rows without failing_input)."""
    with store._write() as db:
        grade_id = db.execute(
            """INSERT INTO grades (exercise_id, graded_at, status, message, device, source, path, duration_s, internal_error, result_json)
               VALUES ('adamw', '2030-05-01T09:00:00+00:00', 'fail', 'm', 'cpu', 'workspace', NULL, 1.0, 0, '{}')""").lastrowid
        db.execute("""INSERT INTO check_results (grade_id, position, name, status, message, details_json, duration_s)
                      VALUES (?, 0, 'float64 lockstep', 'fail', 'expected 1.0, got 2.0', '{}', 0.25)""", (grade_id,))


@pytest.mark.parametrize("steps", [1, 2])
def test_an_older_store_is_migrated_and_keeps_its_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: int) -> None:
    path = tmp_path / "progress.sqlite3"
    monkeypatch.setattr(store_module, "MIGRATIONS", MIGRATIONS[:steps])
    with Store(path) as old:
        record_with_old_columns(old)
        assert old.schema_version == steps
    monkeypatch.setattr(store_module, "MIGRATIONS", MIGRATIONS)
    with Store(path) as new:
        assert new.schema_version == len(MIGRATIONS) == 4
        [grade] = new.grades()
        [check] = new.check_results(grade.id)
        assert (check.name, check.message, check.failing_input) == ("float64 lockstep", "expected 1.0, got 2.0", "")
        new.record_review("code", "adamw", 5, MOMENT)
        assert new.review_states()[("code", "adamw")].repetitions == 1


def test_a_checks_failing_input_is_kept(store: Store) -> None:
    result = make_result()
    result.checks[1].failing_input = "adamw(np.array(0.0), np.array(1.0), np.array(0.0), np.array(0.0), 1)"
    grade_id = store.record_grade(result, source="workspace", path=None)
    assert store.check_results(grade_id)[1].failing_input == result.checks[1].failing_input
    assert store.grade_result(grade_id).checks[1].failing_input == result.checks[1].failing_input


def test_record_review_follows_sm2_and_logs_every_review(store: Store) -> None:
    first = store.record_review("code", "adamw", 5, MOMENT)
    assert (first.repetitions, first.interval_days, first.due_at) == (1, 1.0, MOMENT + timedelta(days=1))
    second = store.record_review("code", "adamw", 4, MOMENT + timedelta(days=1))
    assert (second.repetitions, second.interval_days) == (2, 6.0)
    missed = store.record_review("code", "adamw", 1, MOMENT + timedelta(days=7))
    assert (missed.repetitions, missed.interval_days) == (0, 1.0)
    assert store.review_states() == {("code", "adamw"): missed}
    assert store.reviews_done() == 3


def _review_once(path: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()
    with Store(Path(path)) as opened:
        opened.record_review("code", "adamw", 5, MOMENT)


def test_concurrent_reviews_of_one_item_each_build_on_the_last(tmp_path: Path) -> None:
    path = tmp_path / "progress.sqlite3"
    Store(path).close()
    processes = 4
    _run_at_once(processes, _review_once, str(path))
    with Store(path) as opened:
        assert opened.review_states()[("code", "adamw")].repetitions == processes  # no review read a state another was replacing
        assert opened.reviews_done() == processes


def test_latest_grades_ignore_internal_errors(store: Store) -> None:
    store.record_grade(make_result("knn", "fail"), source="file", path=None)
    store.record_grade(make_result("knn", "pass"), source="workspace", path=None)
    store.record_grade(make_result("knn", "fail", internal_error=True), source="workspace", path=None)
    store.record_grade(make_result("adamw", "fail"), source="interview", path=None)
    assert {e: s for e, (_, s) in store.latest_grades().items()} == {"knn": "pass", "adamw": "fail"}


def test_practice_time_counts_each_moment_once(store: Store) -> None:
    from datetime import timedelta

    from mlprep.progress.standing import practice_time

    store.record_practice_time("knn", "watch", MOMENT, 30.0)
    store.record_practice_time("knn", "interview", MOMENT + timedelta(seconds=10), 12.5)  # inside knn's 30 s: counted once
    store.record_practice_time("adamw", "review", MOMENT + timedelta(seconds=20), 20.0)  # 10 s shared with knn, then 10 s alone
    store.record_practice_time("knn", "cli", MOMENT + timedelta(minutes=5), 60.0)  # apart from the rest
    total, per_exercise = practice_time(store.practice_intervals())
    assert total == 30 + 10 + 60
    assert per_exercise == {"knn": 20 + 5 + 60, "adamw": 5 + 10}
    with pytest.raises(ValueError, match="mode"):
        store.record_practice_time("knn", "daydreaming", MOMENT, 1.0)


def test_interviews_round_trip_newest_first(store: Store) -> None:
    grade_id = store.record_grade(make_result("knn", "pass"), source="interview", path=None)
    items = (
        InterviewItem("knn", "code", "pass", (), 61.0, 0, grade_id),
        InterviewItem("adamw", "code", "fail", ("float64 lockstep",), 300.5, 2, None),
    )
    first = Interview("2030-05-01T09:00:00+00:00", "2030-05-01T09:45:00+00:00", 45.0, 7, None, "time", "/x", items)
    second = Interview("2030-05-02T09:00:00+00:00", "2030-05-02T09:10:00+00:00", 10.0, 8, "optimisation", "quit", "/y", ())
    ids = [store.record_interview(first), store.record_interview(second)]
    recorded = store.interviews()
    assert [i.id for i in recorded] == ids[::-1]
    assert recorded[1].items == items and recorded[1].passed == 1
    assert (recorded[0].topic, recorded[0].ended_by, recorded[0].items) == ("optimisation", "quit", ())


def test_a_ten_minute_session_over_three_exercises_counts_ten_minutes(store: Store, tmp_path: Path) -> None:
    """Attempt three exercises at once, work on them in turn, grade one after another and then all at once:
    every moment of the ten minutes counts once, however many grades credit it."""
    from mlprep.progress.standing import practice_time

    t0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
    at = lambda minutes: t0 + timedelta(minutes=minutes)  # noqa: E731
    for exercise_id in ("a", "b", "c"):
        store.record_attempt(exercise_id, tmp_path / f"{exercise_id}.py")
    store._db.execute("UPDATE attempts SET started_at = ?", (at(0).isoformat(timespec="seconds"),))

    def grade(exercise_id: str, minutes: float, modified: float) -> float:
        counted = store.record_cli_practice(exercise_id, at(modified), now=at(minutes))
        store.record_grade(make_result(exercise_id), source="workspace", path=None)
        store._db.execute("UPDATE grades SET graded_at = ? WHERE id = (SELECT MAX(id) FROM grades)", (at(minutes).isoformat(timespec="seconds"),))
        return counted

    assert grade("a", 4, modified=3) == 4 * 60
    assert grade("b", 7, modified=6) == 7 * 60  # since b's attempt started: overlaps a's four minutes
    assert [grade(e, 10, modified) for e, modified in (("a", 9), ("b", 6), ("c", 9.5))] == [6 * 60, 0.0, 10 * 60]  # b was not worked on again
    total, per_exercise = practice_time(store.practice_intervals())
    assert total == 10 * 60  # the sum of the credits is 27 minutes
    assert sum(per_exercise.values()) == pytest.approx(total) and set(per_exercise) == {"a", "b", "c"}
