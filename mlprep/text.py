"""Words every layer writes: counts with their nouns, durations, and text made inert for a terminal."""

from __future__ import annotations

import re


def plural(count: float, word: str) -> str:
    """"1 minute", "2 minutes", "0.5 days": the count and its noun, in the right number."""
    return f"{count:g} {word}{'' if count == 1 else 's'}"


def duration_text(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes >= 60:
        return f"{minutes // 60}h {minutes % 60:02d}m"
    return f"{minutes}m {int(seconds % 60):02d}s" if minutes else f"{int(seconds)}s"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 (but tab and newline), DEL, C1


def inert(text: str) -> str:
    """`text` with control characters written out (ESC as \\x1b): the terminal shows them, never obeys
    them. A carriage return becomes a line break: it would let a line overwrite the verdict."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
