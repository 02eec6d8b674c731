"""Checks for `decontaminate`: drop the documents that share a normalised word n-gram with a benchmark.

Expected results come from a brute force here that shares nothing with the reference: every window of n
words (text.lower().split()) of each doc against every window of each benchmark, no sets, no joined
strings. A failure names the first doc whose fate is wrong and why (the n-gram it shares with which
benchmark, or its words); a wrong result is compared with what each known mistake gives on the same input.
"""

import re
from collections import Counter

from mlprep.grading import Call, Opaque, check, expect_raises, fail, inputs_unchanged, mistake_hint, plural, raised_by, shrink_on_failure

DEFAULT_N = 13


# The contract, by brute force, and the known mistakes (judge side)
def words(text):
    return text.lower().split()


def shared_ngram(doc, benchmarks, n):
    """(benchmark index, position in the doc's words, the n-gram) of the first n-gram the doc shares, or None."""
    d = words(doc)
    for i in range(len(d) - n + 1):
        for b, bench in enumerate(benchmarks):
            w = words(bench)
            if any(w[j:j + n] == d[i:i + n] for j in range(len(w) - n + 1)):
                return b, i, tuple(d[i:i + n])
    return None


def brute_force(docs, benchmarks, n):
    return [doc for doc in docs if shared_ngram(doc, benchmarks, n) is None]


def _split(text, mistake):
    if mistake == "no_normalisation":
        return text.split(" ")
    if mistake == "case_sensitive":
        return text.split()
    if mistake == "split_on_space":
        return text.lower().split(" ")
    if mistake == "ascii_whitespace":
        return [w for w in re.split(r"[ \t\n\r\f\v]+", text.lower()) if w]
    if mistake == "strips_punctuation":
        return re.sub(r"[^\w\s]", "", text.lower()).split()
    return text.lower().split()


def _grams(text, n, mistake):
    if mistake == "char_ngrams":
        t = text.lower()
        return {t[i:i + n] for i in range(len(t) - n + 1)}
    w = _split(text, mistake)
    size = n - 1 if mistake == "n_minus_one" else n
    if mistake == "short_text_whole" and 0 < len(w) < n:
        return {tuple(w)}
    stop = len(w) - size + (0 if mistake == "last_ngram_skipped" else 1)
    return {tuple(w[i:i + size]) for i in range(stop)}


def mistaken(docs, benchmarks, n, mistake):
    """What code with the known `mistake` (a key of MISTAKES) returns."""
    benches = benchmarks[:1] if mistake == "first_benchmark_only" else benchmarks
    if mistake == "substring":
        texts = [" ".join(words(b)) for b in benches]
        kept = [d for d in docs if not any(" ".join(g) in t for g in _grams(d, n, None) for t in texts)]
    elif mistake == "substring_in_doc":
        grams = {" ".join(g) for b in benches for g in _grams(b, n, None)}
        kept = [d for d in docs if not any(g in " ".join(words(d)) for g in grams)]
    else:
        banned = set().union(*(_grams(b, n, mistake) for b in benches)) if benches else set()
        kept = [d for d in docs if banned.isdisjoint(_grams(d, n, mistake))]
    if mistake == "dedup":
        kept = list(dict.fromkeys(kept))
    return sorted(kept) if mistake == "sorted" else kept


MISTAKES = {
    "no_normalisation": "splits on single spaces without lower-casing: case, runs of spaces, tabs and line breaks hide the overlap",
    "case_sensitive": "does not lower-case: 'The' and 'the' are different words, so a re-cased copy of a benchmark survives",
    "split_on_space": "splits on single spaces (split(' ')): runs of spaces, tabs and line breaks hide the overlap; text.lower().split() splits on any whitespace",
    "ascii_whitespace": "splits only on ASCII whitespace: a non-breaking or ideographic space (also whitespace, as str.split() knows) glues two words together",
    "strips_punctuation": "strips punctuation: punctuation belongs to its word, so '2+2?' and '2+2' are different words and stripping invents overlaps",
    "char_ngrams": "compares character n-grams: the contract's n-grams are runs of n words",
    "n_minus_one": "compares n-grams of n - 1 words: one word short, so it removes docs that share only n - 1 words",
    "last_ngram_skipped": "skips the last n-gram of each text (range(len(words) - n) instead of range(len(words) - n + 1)): a text of exactly n words has none",
    "short_text_whole": "takes a text shorter than n words as one n-gram: such a text has no n-gram at all",
    "first_benchmark_only": "only looks at the first benchmark",
    "dedup": "drops duplicate docs: every copy of a clean doc is kept",
    "sorted": "sorts the result: the kept docs come back in input order",
    "substring": "tests whether the doc's n-gram, joined with spaces, occurs in the benchmark's text: that also matches inside words ('he cat' in 'the cat')",
    "substring_in_doc": "tests whether a benchmark's n-gram, joined with spaces, occurs in the doc's words joined with spaces: that also matches inside"
                        " words ('he cat sat' in 'the cat sat')",
}


def likely_mistake(got, docs, benchmarks, n, want):
    mistakes = [(text, lambda key=key: mistaken(docs, benchmarks, n, key)) for key, text in MISTAKES.items()]
    return mistake_hint(list(got), mistakes, want=want, say="Your result matches code that {}.", two="Your result matches code that {}; or code that {}.")


# Judging one call
def _short(text, limit=70):
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "…"


def _word_list(text, limit=16):
    w = words(text)
    return repr(w) if len(w) <= limit else repr(w[:limit])[:-1] + f", … ({len(w)} words)]"


def describe(docs, benchmarks, n):
    return f"{plural(len(docs), 'doc')}, {plural(len(benchmarks), 'benchmark')}, n = {n if n is not None else f'{DEFAULT_N} (the default)'}"


def why_wrong(got, docs, benchmarks, n, want):
    """The first doc whose fate differs, in the contract's words."""
    if not isinstance(got, (list, tuple)) or not all(isinstance(x, str) for x in got):
        what = f"a {got.type_name} object" if isinstance(got, Opaque) else type(got).__name__
        if isinstance(got, (list, tuple)):
            what = f"a {what} holding {type(next(x for x in got if not isinstance(x, str))).__name__}"
        return f"expected a list of the kept docs (strings), got {what}", "a list of str", what
    strangers = [x for x in got if x not in docs]
    if strangers:
        normalised = any(strangers[0].lower().split() == words(doc) for doc in docs)  # a doc with its case or whitespace changed
        return (f"the result holds {_short(strangers[0])}, which is not one of the docs: return the kept docs themselves, unchanged"
                + (" (normalise only to compare)" if normalised else "")), "the docs' own strings", _short(strangers[0])
    got_count, want_count = Counter(got), Counter(want)
    for i, doc in enumerate(docs):
        if got_count[doc] == want_count[doc]:
            continue
        hit = shared_ngram(doc, benchmarks, n)
        if hit is not None:
            b, at, gram = hit
            return (f"docs[{i}] = {_short(doc)} was kept, but it shares the {n}-gram {gram!r} (its words {at}..{at + n - 1}, after"
                    f" lower() and split()) with benchmarks[{b}] = {_short(benchmarks[b])}, so it must be removed"), f"docs[{i}] removed", f"docs[{i}] kept"
        copies = docs.count(doc)
        if got_count[doc] > want_count[doc]:
            return (f"docs[{i}] = {_short(doc)} is clean and appears {copies} time(s) in docs, but {got_count[doc]} times in the result:"
                    " return each kept doc once per time it appears in docs"), f"{copies} copies", f"{got_count[doc]} copies"
        if copies > 1 and got_count[doc]:
            return (f"docs[{i}] = {_short(doc)} appears {copies} times in docs and shares no {n}-gram with any benchmark: every copy is"
                    f" kept (duplicates are kept), got {got_count[doc]}"), f"{copies} copies", f"{got_count[doc]} copies"
        return (f"docs[{i}] = {_short(doc)} was removed, but it shares no {n}-gram with any benchmark: its words after lower() and"
                f" split() are {_word_list(doc)}"), f"docs[{i}] kept", f"docs[{i}] removed"
    return (f"the right docs were kept, but in another order: expected {[docs.index(x) for x in want]} (docs' indices, input order),"
            f" got {[docs.index(x) for x in got]}"), "input order", "another order"


def judge(sub, docs, benchmarks, n=None, what=""):
    scenario_text = describe(docs, benchmarks, n) + what
    got = inputs_unchanged(sub, "decontaminate", docs, benchmarks, *([] if n is None else [n]), scenario=scenario_text)
    size = DEFAULT_N if n is None else n
    want = brute_force(docs, benchmarks, size)
    if isinstance(got, (list, tuple)) and list(got) == want:
        return
    message, expected, got_text = why_wrong(got, docs, benchmarks, size, want)
    explain = (lambda: likely_mistake(got, docs, benchmarks, size, want)) if isinstance(got, (list, tuple)) else None
    fail(f"decontaminate() ({scenario_text}): {message}.", explain=explain, what="the kept docs", expected=expected, got=got_text, first_index="")


# Random corpora: spans of benchmarks pasted into docs with their case and spacing changed
VOCAB = ["the", "cat", "sat", "on", "a", "mat", "x", "=", "2+2?", "answer:", "4.", "is"]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", " \r\n", "\u00a0"]


def _recase(rng, word):
    return word.upper() if rng.random() < 0.2 else word.capitalize() if rng.random() < 0.2 else word


def _join(rng, ws):
    return "".join(w + SEPARATORS[rng.integers(len(SEPARATORS))] for w in ws).rstrip(" ") if ws else ""


def corpus(rng, n_docs, n_bench, length, n):
    benchmarks = [[VOCAB[i] for i in rng.integers(len(VOCAB), size=rng.integers(n - 1, length + 1))] for _ in range(n_bench)]
    docs = []
    for _ in range(n_docs):
        ws = [VOCAB[i] for i in rng.integers(len(VOCAB), size=rng.integers(0, length + 1))]
        if benchmarks and rng.random() < 0.5:  # paste a span of a benchmark of n - 1, n or n + 1 words
            src = benchmarks[rng.integers(len(benchmarks))]
            span = min(len(src), n - 1 + int(rng.integers(3)))
            start = int(rng.integers(len(src) - span + 1))
            at = int(rng.integers(len(ws) + 1))
            ws = ws[:at] + src[start:start + span] + ws[at:]
        docs.append(_join(rng, [_recase(rng, w) for w in ws]))
    if docs and rng.random() < 0.5:
        docs.append(docs[0])  # a duplicate
    return docs, [_join(rng, ws) for ws in benchmarks]


def small_corpora():
    from hypothesis import strategies as st

    text = st.lists(st.tuples(st.sampled_from(["a", "A", "b", "b.", "B", "c"]), st.sampled_from([" ", "\t", "\n", "  ", "\u00a0"])),
                    max_size=6).map(lambda pairs: "".join(w + s for w, s in pairs))
    return st.tuples(st.lists(text, max_size=4), st.lists(text, max_size=3), st.integers(1, 3))


# Checks
@check("a doc sharing an n-gram with a benchmark is removed; the others are kept, in input order")
def removes_overlap(sub, ctx):
    judge(sub, ["the cat sat on the mat", "a dog ran"], ["he said the cat sat down"], 3)
    judge(sub, ["one two three", "two three four five", "six seven", "three four five six"], ["zero one two", "four five six seven"], 3)
    judge(sub, [], ["a b c"], 2, what=" (no docs)")
    judge(sub, ["a b c", "c d e"], [], 2, what=" (no benchmarks)")


@check("case does not hide overlap (words are lower-cased)")
def case_insensitive(sub, ctx):
    judge(sub, ["THE CAT SAT ON THE MAT", "The Cat Sat", "The Cat Ran"], ["the cat sat on a mat"], 3)
    judge(sub, ["Die Äpfel sind rot", "die äpfel"], ["DIE ÄPFEL SIND grün"], 3, what=", non-ASCII letters")


@check("runs of spaces, tabs and line breaks do not hide overlap")
def whitespace_runs(sub, ctx):
    judge(sub, ["the  cat   sat", "the\tcat\nsat", "  the cat\r\nsat  ", "the cat"], ["the cat sat"], 3)
    judge(sub, ["how many\n\napples are left", "how many pears"], ["How many apples are left?"], 4, what=", a blank line inside the doc")


@check("any Unicode whitespace separates words (what str.split() splits on)")
def unicode_whitespace(sub, ctx):
    judge(sub, ["the\u00a0cat\u00a0sat", "the\u2003cat\u3000sat", "the\x0bcat\x0csat", "the\u2028cat sat", "thecat sat"], ["the cat sat"], 3,
          what=", separated by no-break, em, ideographic and line-separator spaces, \\v and \\f")


@check("punctuation belongs to the word: '2+2?' and '2+2' differ (no invented overlap)")
def punctuation_kept(sub, ctx):
    judge(sub, ["what is 2+2 answer 4", "so: What is 2+2? Answer: 4.", "what is 2+2? answer"], ["What is 2+2? Answer: 4."], 3)


@check("word n-grams, not characters or substrings: shared letters inside words do not count")
def word_ngrams(sub, ctx):
    judge(sub, ["he cat sat", "concatenate", "the cat sat", "a cat sat"], ["the cat sat on"], 3)
    judge(sub, ["a bc d", "ab c d"], ["ab cd"], 2)
    judge(sub, ["the cat sat on", "he cat sat", "a cat sat"], ["he cat sat"], 3, what=", a benchmark's n-gram inside a doc's words")


@check("a text of fewer than n words has no n-gram; exactly n words has one")
def short_texts(sub, ctx):
    judge(sub, ["two plus two", "two plus two is four", "Two plus two is"], ["two plus two is"], 4)
    judge(sub, ["two plus", "what is two plus"], ["two plus"], 3, what=", a benchmark shorter than n")
    judge(sub, ["", "   \n", "a"], ["a b"], 2, what=", empty and blank docs")


@check("every benchmark counts, not just the first")
def every_benchmark(sub, ctx):
    judge(sub, ["alpha beta gamma", "delta epsilon zeta", "eta theta iota"], ["one two three", "x delta epsilon zeta y", "eta theta iota"], 3)


@check("duplicates are kept, in input order")
def duplicates_and_order(sub, ctx):
    judge(sub, ["b c", "a b", "b c", "x y z", "a b"], ["x y z"], 2)
    judge(sub, ["zebra", "apple", "mango", "apple"], ["kiwi"], 1)


@check("n = 13 (the default): a benchmark problem pasted into a web page with its case and line breaks changed")
def default_n13(sub, ctx):
    benchmarks = ["A baker makes 36 muffins every morning and sells two thirds of them before noon. In the afternoon she sells half of"
                  " what is left. How many muffins are left at the end of the day?",
                  "Find all real numbers x such that x^2 - 5x + 6 = 0, and give their sum.",
                  "Tom has three times as many marbles as Ann. Together they have 48 marbles. How many marbles does Ann have?"]
    docs = ["Daily practice!\nA BAKER makes 36 muffins every morning and sells two thirds\nof them before noon. In the afternoon...",
            "Our baker makes 40 muffins every morning; most are sold before noon.",
            "Puzzle: Tom has three times as many marbles as Ann. Together they have lots of fun.",
            "Q:\tFind all real numbers x such that x^2 - 5x + 6 = 0, and give their sum.\tA: 5",
            "find all real numbers x such that x2 5x 6 0 and give their sum",
            "Our baker makes 40 muffins every morning; most are sold before noon.",
            ""]
    judge(sub, docs, benchmarks)


@check("matches the brute force on random corpora (spans of benchmarks pasted with their case and spacing changed)")
def random_corpora(sub, ctx):
    rng = ctx.rng(1)
    long_input = lambda failure: failure.failing_input is None or len(str(failure.failing_input)) > 400  # noqa: E731
    with shrink_on_failure(sub, small_corpora, lambda case: judge(sub, *case), worth_shrinking=long_input):
        for n_docs, n_bench, length, n in ((4, 2, 6, 2), (30, 5, 12, 3), (200, 20, 40, 4), (60, 6, 60, 13), (100, 10, 30, 1)):
            docs, benchmarks = corpus(rng, n_docs, n_bench, length, n)
            judge(sub, docs, benchmarks, n, what=", random")


@check("n < 1 raises ValueError", edge="`n < 1` raises `ValueError`.")
def invalid_n(sub, ctx):
    for n in (0, -1):
        expect_raises(sub.run(raised_by, "decontaminate", ["a b"], ["a b"], n), what=f"decontaminate(['a b'], ['a b'], {n})", exact=True,
                      raised_hint="an n-gram has at least one word", returned_hint="an n-gram has at least one word", shown=lambda result: repr(result)[:200],
                      failing_input=Call("decontaminate", ["a b"], ["a b"], n, note="expected: ValueError"))
