"""A set of joined strings: each n-gram as its words joined by a single space (words hold no
whitespace, so the joined string determines the n-gram), words found with a regex of
non-whitespace runs, and each doc checked with an early exit at its first shared n-gram."""

import re

_WORD = re.compile(r"\S+")


def _grams(text, n):
    w = _WORD.findall(text.lower())
    for i in range(len(w) - n + 1):
        yield " ".join(w[i:i + n])


def decontaminate(docs, benchmarks, n=13):
    if n < 1:
        raise ValueError("n must be at least 1")
    seen = {g for b in benchmarks for g in _grams(b, n)}
    return [d for d in docs if not any(g in seen for g in _grams(d, n))]
