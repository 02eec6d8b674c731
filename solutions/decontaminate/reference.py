"""Reference for `decontaminate`: drop training documents that share a word n-gram with a benchmark.

Words are the maximal runs of non-whitespace of the lower-cased text (str.lower().split(): every
kind of whitespace, runs of it, line breaks and tabs included, separates words; punctuation stays
part of its word). An n-gram is a tuple of n consecutive words; a text of fewer than n words has
none. Every n-gram of every benchmark goes into one set; a document is kept when none of its
n-grams is in it. One pass over the benchmarks, one over the documents: O(total words * n).
"""


def _words(text):
    return text.lower().split()


def _ngrams(words, n):
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def decontaminate(docs, benchmarks, n=13):
    """The docs that share no normalised word n-gram with any benchmark, in input order."""
    if n < 1:
        raise ValueError(f"n must be a positive number of words, got {n}")
    banned = set()
    for bench in benchmarks:
        banned |= _ngrams(_words(bench), n)
    kept = []
    for doc in docs:
        if banned.isdisjoint(_ngrams(_words(doc), n)):
            kept.append(doc)
    return kept
