"""Key presses from the terminal, one at a time (cbreak mode, restored on every way out), for the
practice loop and the quiz asker."""

from __future__ import annotations

import os
import re
import select
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

ESCAPE_SEQUENCE = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|O.|.)?")


class Keys:
    """Key presses from stdin. On a terminal: cbreak mode while open, the saved settings restored
    on close. Elsewhere (a pipe, a file): its characters are keys too; at its end, keys stop.
    Keys read but not used (typed ahead of the loop's end) are given back (`unread`) for the next
    reader of the same stdin: the interview's follow-up questions."""

    _typed_ahead: dict[int, str] = {}  # file descriptor -> keys read from it and given back

    def __init__(self, stream: TextIO):
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            self.fd = None
        self.is_terminal = self.fd is not None and os.isatty(self.fd)
        self.closed = self.fd is None
        self._saved: list[Any] | None = None

    def __enter__(self) -> Keys:
        self.raw_mode()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.restore()

    def raw_mode(self) -> None:
        if self.is_terminal:
            import termios
            import tty

            if self._saved is None:
                self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd, termios.TCSANOW)

    def restore(self) -> None:
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """The terminal as the learner left it (for an editor), then back to cbreak."""
        self.restore()
        try:
            yield
        finally:
            self.raw_mode()

    def unread(self, keys: str) -> None:
        if keys and self.fd is not None:
            Keys._typed_ahead[self.fd] = keys + Keys._typed_ahead.get(self.fd, "")

    def read(self, timeout_s: float) -> str:
        """The keys pressed within `timeout_s` ("" if none)."""
        if self.fd is not None and Keys._typed_ahead.get(self.fd):
            return Keys._typed_ahead.pop(self.fd)
        if self.closed:
            return ""
        ready, _, _ = select.select([self.fd], [], [], timeout_s)
        if not ready:
            return ""
        data = os.read(self.fd, 64)
        if not data:
            self.closed = True
            return ""
        # Arrow and function keys arrive as escape sequences ("\x1b[A"): not keys of the loop.
        return ESCAPE_SEQUENCE.sub("", data.decode("utf-8", errors="ignore"))
