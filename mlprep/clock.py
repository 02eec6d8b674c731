"""Time, injected: the review scheduler and the interview countdown take a Clock, so tests can move
time forward instead of sleeping."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The wall-clock time, timezone-aware UTC (what the store records)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (what countdowns and time spent are measured on)."""


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


def iso(moment: datetime) -> str:
    """The store's timestamp format (UTC, to the second)."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)
