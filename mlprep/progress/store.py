"""The progress store: one SQLite file in the data dir (see mlprep.workspace.data_dir).

It records attempts (where the learner's file is, when they started), every grade with its
per-check results, the hints shown and the solutions revealed; and, for the practice loop, the
time spent per exercise, the spaced-review state of each item, and every mock interview with one
row per exercise.

Concurrency: WAL journal plus a busy timeout, and every write is one `BEGIN IMMEDIATE`
transaction (the write lock is taken before anything is read), so two `mlprep grade` runs at once
both land, and two `mlprep hint` runs never show the same "next" hint twice.

Schema changes are append-only steps in MIGRATIONS; `PRAGMA user_version` is how many have run.
Never edit a released step: add a new one.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Self

from mlprep.clock import iso, parse_iso
from mlprep.errors import ExitStatus, MlprepError

if TYPE_CHECKING:  # imported where used: `list` and `progress` need neither (issue 4)
    from mlprep.results import CheckResult, GradeResult
    from mlprep.progress.schedule import ReviewState

BUSY_TIMEOUT_S = 30.0
SOURCES = ("workspace", "file", "interview", "review")  # where a graded submission came from
PRACTICE_MODES = ("watch", "interview", "review", "cli")  # where practice time was spent (cli: attempt, edit, `mlprep grade`)
# From the plain CLI, the time between an exercise's last event (its attempt started, a grade, time
# counted in the loop) and a grade of it is practice, up to this much: a longer gap was a break.
CLI_GAP_CAP_S = 20 * 60

# Each step is a list of statements run in one transaction, then user_version = its 1-based index.
MIGRATIONS: list[tuple[str, ...]] = [
    (
        """CREATE TABLE attempts (
            id INTEGER PRIMARY KEY,
            exercise_id TEXT NOT NULL,
            path TEXT NOT NULL,
            started_at TEXT NOT NULL
        )""",
        "CREATE INDEX attempts_by_exercise ON attempts (exercise_id, id)",
        """CREATE TABLE grades (
            id INTEGER PRIMARY KEY,
            exercise_id TEXT NOT NULL,
            graded_at TEXT NOT NULL,
            status TEXT NOT NULL,
            message TEXT NOT NULL,
            device TEXT NOT NULL,
            source TEXT NOT NULL,
            path TEXT,
            duration_s REAL NOT NULL,
            internal_error INTEGER NOT NULL DEFAULT 0,
            result_json TEXT NOT NULL
        )""",
        "CREATE INDEX grades_by_exercise ON grades (exercise_id, id)",
        """CREATE TABLE check_results (
            grade_id INTEGER NOT NULL REFERENCES grades (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL,
            message TEXT NOT NULL,
            details_json TEXT NOT NULL,
            duration_s REAL NOT NULL,
            PRIMARY KEY (grade_id, position)
        )""",
        """CREATE TABLE hints_shown (
            exercise_id TEXT NOT NULL,
            hint_index INTEGER NOT NULL,
            shown_at TEXT NOT NULL,
            PRIMARY KEY (exercise_id, hint_index)
        )""",
        """CREATE TABLE reveals (
            id INTEGER PRIMARY KEY,
            exercise_id TEXT NOT NULL,
            revealed_at TEXT NOT NULL,
            forced INTEGER NOT NULL
        )""",
    ),
    (
        # Spaced review: one row per item, keyed by kind + id so quiz questions fit beside exercises.
        """CREATE TABLE review_state (
            kind TEXT NOT NULL,
            item_id TEXT NOT NULL,
            repetitions INTEGER NOT NULL,
            easiness REAL NOT NULL,
            interval_days REAL NOT NULL,
            due_at TEXT NOT NULL,
            reviewed_at TEXT NOT NULL,
            PRIMARY KEY (kind, item_id)
        )""",
        """CREATE TABLE reviews (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            item_id TEXT NOT NULL,
            reviewed_at TEXT NOT NULL,
            quality INTEGER NOT NULL,
            interval_days REAL NOT NULL
        )""",
        """CREATE TABLE practice_time (
            id INTEGER PRIMARY KEY,
            exercise_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            started_at TEXT NOT NULL,
            seconds REAL NOT NULL
        )""",
        """CREATE TABLE interviews (
            id INTEGER PRIMARY KEY,
            started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL,
            minutes REAL NOT NULL,
            seed INTEGER NOT NULL,
            topic TEXT,
            ended_by TEXT NOT NULL,
            folder TEXT NOT NULL
        )""",
        """CREATE TABLE interview_items (
            interview_id INTEGER NOT NULL REFERENCES interviews (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            exercise_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            checks_failed_json TEXT NOT NULL,
            seconds REAL NOT NULL,
            hints_used INTEGER NOT NULL,
            grade_id INTEGER REFERENCES grades (id),
            PRIMARY KEY (interview_id, position)
        )""",
    ),
    (
        # The smallest failing input of each failed check (Python a learner can paste).
        "ALTER TABLE check_results ADD COLUMN failing_input TEXT NOT NULL DEFAULT ''",
    ),
    (
        # Diagnoses that named a known mistake: they count as hints (progress, review).
        """CREATE TABLE diagnoses (
            id INTEGER PRIMARY KEY,
            exercise_id TEXT NOT NULL,
            shown_at TEXT NOT NULL,
            mistakes_json TEXT NOT NULL
        )""",
    ),
]


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class StoreError(MlprepError):
    """The store file cannot be used (corrupt, from a newer mlprep, not writable): the user can
    fix it, so it is a one-line error with what to do, not a traceback."""

    exit_status = ExitStatus.USAGE


class Attempt(NamedTuple):
    """An attempt of an exercise: where its file is and when it was started."""
    exercise_id: str
    path: Path
    started_at: str


class GradeRecord(NamedTuple):
    """One grade as the store keeps it."""
    id: int
    exercise_id: str
    graded_at: str
    status: str
    message: str
    device: str
    source: str
    path: str | None
    duration_s: float
    internal_error: bool
    checks_passed: int
    checks_total: int  # checks that ran (skips excluded)


class Reveal(NamedTuple):
    """A solution shown to the learner, and whether it was forced before a pass."""
    exercise_id: str
    revealed_at: str
    forced: bool


class InterviewItem(NamedTuple):
    """One exercise of a mock interview, as it ended."""
    exercise_id: str
    kind: str
    status: str  # the final grade's status
    checks_failed: tuple[str, ...]
    seconds: float  # time the exercise was on screen
    hints_used: int
    grade_id: int | None


class Interview(NamedTuple):
    """A mock interview as the store keeps it."""
    started_at: str
    finished_at: str
    minutes: float  # allowed
    seed: int
    topic: str | None
    ended_by: str  # "time" or "quit"
    folder: str
    items: tuple[InterviewItem, ...]
    id: int | None = None

    @property
    def passed(self) -> int:
        return sum(item.status == "pass" for item in self.items)


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text or "file is encrypted" in text


class Store:
    def __init__(self, path: Path, *, busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the data folder {self.path.parent} ({exc.strerror}); set MLPREP_HOME to a writable folder") from None
        try:
            # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
            self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the progress store {self.path} ({exc}); set MLPREP_HOME to a writable folder") from None
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._enable_wal(busy_timeout_s)
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except StoreError:
            self._db.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise self._error(exc) from None

    @classmethod
    def open_default(cls) -> Store:
        from mlprep.workspace import store_path

        return cls(store_path())

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _error(self, exc: sqlite3.DatabaseError) -> StoreError:
        if _is_corruption(exc):
            return StoreError(
                f"the progress store {self.path} is damaged ({exc}); move it aside "
                f"(mv '{self.path}' '{self.path}.broken') and mlprep will start a fresh one"
            )
        if "locked" in str(exc).lower() or "busy" in str(exc).lower():
            return StoreError(f"the progress store {self.path} stayed locked by another mlprep process; retry when it has finished")
        if "readonly" in str(exc).lower() or "read-only" in str(exc).lower():
            return StoreError(f"the progress store {self.path} is read-only; set MLPREP_HOME to a writable folder")
        if "unable to open" in str(exc).lower():  # WAL keeps -wal and -shm files beside the store: its folder must be writable
            return StoreError(f"cannot open the progress store {self.path}: its folder must be writable (and the file readable); set MLPREP_HOME to a writable folder")
        return StoreError(f"the progress store {self.path} failed: {exc}", ExitStatus.INTERNAL)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the write lock from its first statement."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        try:
            yield self._db
        except BaseException as exc:
            if self._db.in_transaction:  # SQLite may have rolled back already (disk full, I/O)
                self._db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.DatabaseError):
                raise self._error(exc) from None
            raise
        else:
            try:
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise self._error(exc) from None

    def _read(self, sql: str, params: tuple = ()) -> list[tuple]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def _enable_wal(self, timeout_s: float) -> None:
        """Switch to the WAL journal (persistent: done once per file). SQLite answers a switch that
        races another connection with SQLITE_BUSY at once, without its busy handler, so retry."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                    raise
                import random  # rarely needed: lazily

                time.sleep(random.uniform(0.005, 0.05))

    # -- schema ------------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        if self.schema_version == len(MIGRATIONS):
            return  # the common case: no write lock taken
        with self._write() as db:
            # Re-read inside the lock: another process may have migrated while we waited.
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise StoreError(
                    f"the progress store {self.path} has schema version {version}, but this mlprep "
                    f"knows only up to {len(MIGRATIONS)}: upgrade mlprep, or set MLPREP_HOME to another folder"
                )
            for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in step:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number}")

    # -- attempts ----------------------------------------------------------------------------

    def record_attempt(self, exercise_id: str, path: Path) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO attempts (exercise_id, path, started_at) VALUES (?, ?, ?)",
                (exercise_id, str(Path(path).resolve()), now_utc()),
            )

    def latest_attempt(self, exercise_id: str) -> Attempt | None:
        rows = self._read(
            "SELECT exercise_id, path, started_at FROM attempts WHERE exercise_id = ? ORDER BY id DESC LIMIT 1",
            (exercise_id,),
        )
        return Attempt(rows[0][0], Path(rows[0][1]), rows[0][2]) if rows else None

    def attempts(self) -> list[Attempt]:
        """Every recorded start, oldest first."""
        rows = self._read("SELECT exercise_id, path, started_at FROM attempts ORDER BY id")
        return [Attempt(e, Path(p), t) for e, p, t in rows]

    def attempted_ids(self) -> list[str]:
        """Exercises with a recorded attempt, in the order they were first started."""
        rows = self._read("SELECT exercise_id FROM attempts GROUP BY exercise_id ORDER BY MIN(id)")
        return [r[0] for r in rows]

    # -- grades ------------------------------------------------------------------------------

    def record_grade(self, result: GradeResult, *, source: str, path: Path | None) -> int:
        """Record one grade and its per-check results atomically; return the grade's id."""
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
        result_json = json.dumps(result.to_dict(), default=str)
        with self._write() as db:
            cursor = db.execute(
                """INSERT INTO grades (exercise_id, graded_at, status, message, device, source, path,
                                       duration_s, internal_error, result_json)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    result.id, now_utc(), result.status, result.message, result.device, source,
                    str(Path(path).resolve()) if path is not None else None,
                    float(result.duration_s), int(result.internal_error), result_json,
                ),
            )
            grade_id = cursor.lastrowid
            db.executemany(
                """INSERT INTO check_results (grade_id, position, name, status, message, details_json, duration_s, failing_input)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    (grade_id, i, c.name, c.status, c.message, json.dumps(c.details, default=str), float(c.duration_s), c.failing_input)
                    for i, c in enumerate(result.checks)
                ],
            )
        assert grade_id is not None
        return grade_id

    def grades(self, exercise_id: str | None = None, *, limit: int | None = None) -> list[GradeRecord]:
        """Grades, newest first."""
        where = "WHERE g.exercise_id = ?" if exercise_id is not None else ""
        params: tuple = (exercise_id,) if exercise_id is not None else ()
        sql = f"""
            SELECT g.id, g.exercise_id, g.graded_at, g.status, g.message, g.device, g.source, g.path,
                   g.duration_s, g.internal_error,
                   (SELECT COUNT(*) FROM check_results c WHERE c.grade_id = g.id AND c.status = 'pass'),
                   (SELECT COUNT(*) FROM check_results c WHERE c.grade_id = g.id AND c.status != 'skip')
            FROM grades g {where} ORDER BY g.id DESC"""
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [
            GradeRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10], r[11])
            for r in self._read(sql, params)
        ]

    def check_results(self, grade_id: int) -> list[CheckResult]:
        rows = self._read(
            "SELECT name, status, message, details_json, duration_s, failing_input FROM check_results WHERE grade_id = ? ORDER BY position",
            (grade_id,),
        )
        from mlprep.results import CheckResult

        return [CheckResult(n, s, m, json.loads(d), t, i) for n, s, m, d, t, i in rows]

    def grade_result(self, grade_id: int) -> GradeResult:
        rows = self._read("SELECT result_json FROM grades WHERE id = ?", (grade_id,))
        if not rows:
            raise KeyError(grade_id)
        from mlprep.results import GradeResult

        return GradeResult.from_dict(json.loads(rows[0][0]))

    def has_passed(self, exercise_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM grades WHERE exercise_id = ? AND status = 'pass' AND internal_error = 0 LIMIT 1", (exercise_id,)))

    def statuses(self) -> dict[str, str]:
        """"passed" (passed at least once) or "attempted" (started, or graded without passing), per
        exercise with any activity; the rest are "todo". A grade that hit an internal error says
        nothing about the learner and does not count."""
        status: dict[str, str] = {}
        for (exercise_id,) in self._read("SELECT DISTINCT exercise_id FROM attempts"):
            status[exercise_id] = "attempted"
        for exercise_id, passed in self._read(
            "SELECT exercise_id, MAX(status = 'pass') FROM grades WHERE internal_error = 0 GROUP BY exercise_id"
        ):
            status[exercise_id] = "passed" if passed else "attempted"
        return status

    # -- hints -------------------------------------------------------------------------------

    def take_hint(self, exercise_id: str, total: int) -> int | None:
        """Mark the next hint as shown and return its 0-based index; None once all `total` are shown."""
        with self._write() as db:
            shown = db.execute("SELECT COUNT(*) FROM hints_shown WHERE exercise_id = ?", (exercise_id,)).fetchone()[0]
            if shown >= total:
                return None
            db.execute(
                "INSERT INTO hints_shown (exercise_id, hint_index, shown_at) VALUES (?, ?, ?)",
                (exercise_id, shown, now_utc()),
            )
            return shown

    def hints_shown(self) -> dict[str, int]:
        return dict(self._read("SELECT exercise_id, COUNT(*) FROM hints_shown GROUP BY exercise_id ORDER BY exercise_id"))

    def record_diagnosis(self, exercise_id: str, mistakes: list[str]) -> None:
        """A diagnosis that named known mistakes (`mlprep grade --diagnose`, the loop's d key): a hint."""
        with self._write() as db:
            db.execute("INSERT INTO diagnoses (exercise_id, shown_at, mistakes_json) VALUES (?, ?, ?)",
                       (exercise_id, now_utc(), json.dumps(list(mistakes))))

    def diagnoses_shown(self) -> dict[str, int]:
        return dict(self._read("SELECT exercise_id, COUNT(*) FROM diagnoses GROUP BY exercise_id ORDER BY exercise_id"))

    # -- reveals -----------------------------------------------------------------------------

    def record_reveal(self, exercise_id: str, *, forced: bool) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO reveals (exercise_id, revealed_at, forced) VALUES (?, ?, ?)",
                (exercise_id, now_utc(), int(forced)),
            )

    def reveals(self) -> list[Reveal]:
        return [Reveal(e, t, bool(f)) for e, t, f in self._read("SELECT exercise_id, revealed_at, forced FROM reveals ORDER BY id")]

    # -- spaced review -----------------------------------------------------------------------

    def latest_grades(self) -> dict[str, tuple[str, str]]:
        """exercise id -> (graded_at, status) of its latest grade; internal errors say nothing about the learner."""
        rows = self._read(
            """SELECT exercise_id, graded_at, status FROM grades
               WHERE id IN (SELECT MAX(id) FROM grades WHERE internal_error = 0 GROUP BY exercise_id)"""
        )
        return {e: (t, s) for e, t, s in rows}

    def review_states(self) -> dict[tuple[str, str], ReviewState]:
        from mlprep.progress.schedule import ReviewState

        rows = self._read("SELECT kind, item_id, repetitions, easiness, interval_days, due_at FROM review_state")
        return {(k, i): ReviewState(n, e, d, parse_iso(due)) for k, i, n, e, d, due in rows}

    def record_review(self, kind: str, item_id: str, q: int, now: datetime) -> ReviewState:
        """Reschedule one item after a review of SM-2 quality q, read and written under one write
        lock so two reviews at once never both start from the same state."""
        from mlprep.progress.schedule import ReviewState, sm2

        with self._write() as db:
            row = db.execute(
                "SELECT repetitions, easiness, interval_days FROM review_state WHERE kind = ? AND item_id = ?", (kind, item_id)
            ).fetchone()
            state = sm2(ReviewState(*row) if row else ReviewState(), q, now)
            db.execute(
                """INSERT INTO review_state (kind, item_id, repetitions, easiness, interval_days, due_at, reviewed_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (kind, item_id) DO UPDATE SET repetitions = excluded.repetitions, easiness = excluded.easiness,
                       interval_days = excluded.interval_days, due_at = excluded.due_at, reviewed_at = excluded.reviewed_at""",
                (kind, item_id, state.repetitions, state.easiness, state.interval_days, iso(state.due_at), iso(now)),
            )
            db.execute(
                "INSERT INTO reviews (kind, item_id, reviewed_at, quality, interval_days) VALUES (?, ?, ?, ?, ?)",
                (kind, item_id, iso(now), q, state.interval_days),
            )
        return state

    def reviews_done(self) -> int:
        return self._read("SELECT COUNT(*) FROM reviews")[0][0]

    # -- practice time -----------------------------------------------------------------------

    def record_practice_time(self, exercise_id: str, mode: str, started_at: datetime, seconds: float) -> None:
        if mode not in PRACTICE_MODES:
            raise ValueError(f"mode must be one of {PRACTICE_MODES}, not {mode!r}")
        with self._write() as db:
            db.execute(
                "INSERT INTO practice_time (exercise_id, mode, started_at, seconds) VALUES (?, ?, ?, ?)",
                (exercise_id, mode, iso(started_at), float(seconds)),
            )

    def record_cli_practice(self, exercise_id: str, modified_at: datetime | None, now: datetime | None = None) -> float:
        """When an attempt is graded from the CLI: count the time since the exercise's last event (its attempt
        started, its last grade, its last practice counted), up to CLI_GAP_CAP_S, as practice, if the attempt's
        file was changed since that event (`modified_at`: an attempt graded again unchanged, or among all the
        attempts `mlprep grade` grades, was not being worked on); return the seconds counted."""
        now = now or datetime.now(UTC)
        events = self._read(
            """SELECT MAX(t) FROM (
                   SELECT started_at AS t FROM attempts WHERE exercise_id = ?
                   UNION ALL SELECT graded_at FROM grades WHERE exercise_id = ?
                   UNION ALL SELECT strftime('%Y-%m-%dT%H:%M:%S+00:00', started_at, '+' || seconds || ' seconds') FROM practice_time WHERE exercise_id = ?)""",
            (exercise_id, exercise_id, exercise_id),
        )[0][0]
        if events is None or modified_at is None:
            return 0.0
        last = datetime.fromisoformat(events)
        if modified_at <= last:
            return 0.0
        seconds = min(max((now - last).total_seconds(), 0.0), CLI_GAP_CAP_S)
        if seconds >= 1:
            self.record_practice_time(exercise_id, "cli", now - timedelta(seconds=seconds), seconds)
        return seconds

    def practice_intervals(self) -> list[tuple[str, datetime, float]]:
        """Every stretch of practice counted (the loop's modes, the plain CLI's attempt-edit-grade): (exercise, start, seconds)."""
        return [(exercise_id, parse_iso(started_at), seconds) for exercise_id, started_at, seconds in self._read(
            "SELECT exercise_id, started_at, seconds FROM practice_time ORDER BY started_at, id")]

    # -- interviews --------------------------------------------------------------------------

    def record_interview(self, interview: Interview) -> int:
        """Record an interview and its per-exercise rows atomically; return its id."""
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO interviews (started_at, finished_at, minutes, seed, topic, ended_by, folder) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (interview.started_at, interview.finished_at, interview.minutes, interview.seed, interview.topic, interview.ended_by, interview.folder),
            )
            interview_id = cursor.lastrowid
            db.executemany(
                """INSERT INTO interview_items (interview_id, position, exercise_id, kind, status, checks_failed_json, seconds, hints_used, grade_id)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    (interview_id, i, item.exercise_id, item.kind, item.status, json.dumps(list(item.checks_failed)), item.seconds, item.hints_used, item.grade_id)
                    for i, item in enumerate(interview.items)
                ],
            )
        assert interview_id is not None
        return interview_id

    def interviews(self) -> list[Interview]:
        """Every interview, newest first."""
        items: dict[int, list[InterviewItem]] = {}
        for interview_id, e, k, s, failed, sec, hints, grade_id in self._read(
            """SELECT interview_id, exercise_id, kind, status, checks_failed_json, seconds, hints_used, grade_id
               FROM interview_items ORDER BY interview_id, position"""
        ):
            items.setdefault(interview_id, []).append(InterviewItem(e, k, s, tuple(json.loads(failed)), sec, hints, grade_id))
        return [
            Interview(started, finished, minutes, seed, topic, ended_by, folder, tuple(items.get(i, [])), id=i)
            for i, started, finished, minutes, seed, topic, ended_by, folder in self._read(
                "SELECT id, started_at, finished_at, minutes, seed, topic, ended_by, folder FROM interviews ORDER BY id DESC"
            )
        ]
