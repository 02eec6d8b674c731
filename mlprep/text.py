"""Words every layer writes: counts with their nouns, durations, and text made inert for a terminal."""

from __future__ import annotations

import re


def plural(count: float, word: str) -> str:
    """"1 minute", "2 minutes", "0.5 days": the count and its noun, in the right number."""
    return f"{count:g} {word}{'' if count == 1 else 's'}"


def limit_seconds(seconds: float) -> float:
    """A time limit as it is recorded and said: a limit scaled by the machine's load (1.00053 s) is read
    to a tenth of a second."""
    return round(seconds, 1)


def seconds_text(seconds: float) -> str:
    """A time limit in words, "1 s" or "1.6 s" (limit_seconds)."""
    return f"{limit_seconds(seconds):g} s"


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


def suggestions(typed: str, known: list[str], n: int = 3) -> list[str]:
    """What `typed` probably meant among `known` (kebab-case names): those of which every word of it begins a
    word ("gqa": gqa-attention, lora-gqa), else the closest spellings, and only those about as close as the
    closest ("los-scaling": loss-scaling, not prod-vs-staging)."""
    import difflib  # only when a name is unknown

    words = [w for w in typed.lower().split("-") if w]
    by_words = [name for name in known if words and all(any(part.startswith(w) for part in name.split("-")) for w in words)]
    if by_words:
        return sorted(by_words, key=len)[:n]
    scored = sorted(((difflib.SequenceMatcher(None, typed, name).ratio(), name) for name in known), reverse=True)
    best = scored[0][0] if scored else 0.0
    return [name for score, name in scored if score >= max(0.6, best - 0.1)][:n]
