"""The spaced-review schedule: SM-2 steps, seeding from grades, and what is due at an injected time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mlprep.bank import load_bank
from mlprep.practice.review import due_reviews, review_schedule
from mlprep.results import CheckResult, GradeResult
from mlprep.progress.schedule import FAILED_REVIEW_AFTER, MIN_EASINESS, PASSED_REVIEW_AFTER, ReviewState, exercise_seed, quality, schedule, sm2
from mlprep.progress.store import Store

T0 = datetime(2030, 1, 1, 8, 0, tzinfo=UTC)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime):
        self.moment = start
        self.ticks = 0.0

    def now(self) -> datetime:
        return self.moment

    def monotonic(self) -> float:
        return self.ticks

    def advance(self, **delta: float) -> None:
        step = timedelta(**delta)
        self.moment += step
        self.ticks += step.total_seconds()


def test_sm2_intervals_grow_1_6_then_by_easiness() -> None:
    state = ReviewState()
    intervals = []
    for _ in range(4):
        state = sm2(state, 5, T0)
        intervals.append(state.interval_days)
    assert intervals[:2] == [1.0, 6.0]
    # Each interval uses the easiness from before this review: 2.5 + 0.1 per perfect recall so far.
    assert intervals[2] == pytest.approx(6.0 * 2.7, abs=0.05)
    assert intervals[3] == pytest.approx(intervals[2] * 2.8, abs=0.05)
    assert state.due_at == T0 + timedelta(days=intervals[3])


def test_sm2_a_miss_starts_over_and_easiness_has_a_floor() -> None:
    state = sm2(sm2(ReviewState(), 5, T0), 5, T0)
    missed = sm2(state, 1, T0)
    assert (missed.repetitions, missed.interval_days) == (0, 1.0)
    assert missed.easiness < state.easiness
    for _ in range(20):
        missed = sm2(missed, 0, T0)
    assert missed.easiness == MIN_EASINESS
    with pytest.raises(ValueError):
        sm2(missed, 6, T0)


@pytest.mark.parametrize(("passed", "hints_used", "expected"), [(True, 0, 5), (True, 1, 4), (True, 2, 3), (False, 0, 1), (False, 3, 1)])
def test_quality_of_an_exercise_review(passed: bool, hints_used: int, expected: int) -> None:
    assert quality(passed, hints_used, hints_available=3) == expected


def test_seeds_bring_back_failures_after_a_day_and_passes_after_two_weeks() -> None:
    seeds = [exercise_seed("code", "knn", T0, last_passed=False), exercise_seed("code", "adamw", T0, last_passed=True)]
    due = {s.item_id: s.due_at for s in seeds}
    assert due == {"knn": T0 + FAILED_REVIEW_AFTER, "adamw": T0 + PASSED_REVIEW_AFTER}


def test_a_reviewed_items_state_overrides_its_seed() -> None:
    seeds = [exercise_seed("code", "knn", T0, last_passed=False)]
    reviewed = sm2(ReviewState(), 5, T0 + timedelta(days=2))
    items = schedule(seeds, {("code", "knn"): reviewed, ("quiz-question", "losses/3"): sm2(ReviewState(), 1, T0)})
    assert [(i.kind, i.item_id, i.due_at) for i in items] == [
        ("quiz-question", "losses/3", T0 + timedelta(days=1)),
        ("code", "knn", T0 + timedelta(days=3)),
    ]


def _grade(store: Store, exercise_id: str, status: str) -> None:
    result = GradeResult(exercise_id, status, "", [CheckResult("c", status)])
    store.record_grade(result, source="workspace", path=None)


def test_what_is_due_moves_with_the_clock_and_with_each_review(tmp_path: Path, fixture_bank: Path) -> None:
    bank = load_bank()
    clock = FakeClock(datetime.now(UTC))  # the store stamps grades with the real time; the clock then moves ahead of it
    with Store(tmp_path / "progress.sqlite3") as store:
        _grade(store, "add-one", "fail")
        _grade(store, "reverse-words", "pass")
        assert due_reviews(store, bank, clock.now()) == []  # a fresh failure waits a day
        clock.advance(days=1, minutes=1)
        assert [i.item_id for i in due_reviews(store, bank, clock.now())] == ["add-one"]
        store.record_review("code", "add-one", quality(True, 0, 3), clock.now())  # recalled: next in 1 day
        assert due_reviews(store, bank, clock.now()) == []
        clock.advance(days=1, minutes=1)
        assert [i.item_id for i in due_reviews(store, bank, clock.now())] == ["add-one"]
        clock.advance(days=13)
        assert [i.item_id for i in due_reviews(store, bank, clock.now())] == ["add-one", "reverse-words"]
        # an exercise that left the bank is not scheduled
        _grade(store, "gone-exercise", "fail")
        clock.advance(days=2)
        assert "gone-exercise" not in [i.item_id for i in review_schedule(store, bank)]
