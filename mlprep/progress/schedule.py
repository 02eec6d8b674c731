"""Spaced review: an SM-2 schedule over what the learner should see again.

Items are keyed by (kind, item_id): an exercise is (its kind, its id), e.g. ("code", "adamw"); a quiz
question is ("question", "<quiz id>/<question id>"). Each kind of exercise says which items its
grades seed (mlprep.kinds); nothing here knows how an item is practised, only when it is due and
how a result moves it.

An item enters the schedule from its history (a "seed") before it is ever reviewed:
- an exercise whose latest grade did not pass is due one day after that grade (SM-2's interval for
  a failed recall), so the mistake is still fresh but not the one the learner is working on now;
- an exercise passed, and not graded since, is due PASSED_REVIEW_AFTER after that pass.
Once reviewed, the item's SM-2 state (in the progress store) alone decides when it is due next.

SM-2 (Wozniak, 1990): quality q in 0..5; q >= 3 is a successful recall. Intervals 1 day, 6 days,
then the previous interval times the easiness factor; a failed recall starts over at 1 day;
easiness += 0.1 - (5 - q) * (0.08 + (5 - q) * 0.02), never below 1.3.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import NamedTuple

from mlprep.text import plural

INITIAL_EASINESS = 2.5
MIN_EASINESS = 1.3
FAILED_REVIEW_AFTER = timedelta(days=1)
PASSED_REVIEW_AFTER = timedelta(days=14)


class ReviewState(NamedTuple):
    """An item's place in the schedule after `repetitions` successful recalls in a row."""

    repetitions: int = 0
    easiness: float = INITIAL_EASINESS
    interval_days: float = 0.0
    due_at: datetime | None = None


class Seed(NamedTuple):
    """Why and since when an item not yet reviewed belongs in the schedule."""

    kind: str
    item_id: str
    due_at: datetime
    reason: str


class DueItem(NamedTuple):
    """An item of the spaced review, and when and why it is due."""
    kind: str
    item_id: str
    due_at: datetime
    reason: str


def quality(passed: bool, hints_used: int, hints_available: int) -> int:
    """SM-2 quality of an exercise review: 5 a pass without hints, 4 with at most half of them,
    3 with more; 1 a graded attempt that never passed (a failed recall, but the learner tried)."""
    if not passed:
        return 1
    if hints_used == 0:
        return 5
    return 4 if hints_used * 2 <= hints_available else 3


def sm2(state: ReviewState, q: int, now: datetime) -> ReviewState:
    """The state after a review of quality q at `now`."""
    if not 0 <= q <= 5:
        raise ValueError(f"SM-2 quality is 0..5, not {q}")
    if q >= 3:
        repetitions = state.repetitions + 1
        interval = 1.0 if repetitions == 1 else 6.0 if repetitions == 2 else round(state.interval_days * state.easiness, 1)
    else:
        repetitions, interval = 0, 1.0
    easiness = max(MIN_EASINESS, state.easiness + 0.1 - (5 - q) * (0.08 + (5 - q) * 0.02))
    return ReviewState(repetitions, round(easiness, 4), interval, now + timedelta(days=interval))


def exercise_seed(kind: str, exercise_id: str, last_graded_at: datetime, last_passed: bool) -> Seed:
    """An exercise in the schedule from its latest grade alone (see the module docstring)."""
    if last_passed:
        return Seed(kind, exercise_id, last_graded_at + PASSED_REVIEW_AFTER, f"passed {last_graded_at:%Y-%m-%d}, not practised since")
    return Seed(kind, exercise_id, last_graded_at + FAILED_REVIEW_AFTER, f"its latest grade did not pass ({last_graded_at:%Y-%m-%d})")


def schedule(seeds: Iterable[Seed], states: Mapping[tuple[str, str], ReviewState]) -> list[DueItem]:
    """Every scheduled item with when it is due, soonest first: reviewed items by their SM-2 state,
    the others by their seed."""
    items = {key: DueItem(key[0], key[1], state.due_at, _reason(state)) for key, state in states.items() if state.due_at is not None}
    for seed in seeds:
        items.setdefault((seed.kind, seed.item_id), DueItem(seed.kind, seed.item_id, seed.due_at, seed.reason))
    return sorted(items.values(), key=lambda item: (item.due_at, item.kind, item.item_id))


def _reason(state: ReviewState) -> str:
    if state.repetitions == 0:
        return "missed at its last review"
    return f"recalled {plural(state.repetitions, 'time')} in a row; interval {plural(state.interval_days, 'day')}"


def due_now(items: Iterable[DueItem], now: datetime) -> list[DueItem]:
    return [item for item in items if item.due_at <= now]
