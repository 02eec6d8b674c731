"""Benchmark decontamination by word n-gram overlap (plain Python). Fill in decontaminate; run `mlprep grade decontaminate` to grade it."""


def decontaminate(docs, benchmarks, n=13):
    """Remove every document that shares a normalised word n-gram with any benchmark text.

    docs, benchmarks: lists of str. Words are the maximal runs of non-whitespace after lower-casing
    (what text.lower().split() gives: any whitespace separates words, punctuation belongs to the
    word). An n-gram is n consecutive words; a text of fewer than n words has no n-gram.
    Returns a new list of the kept docs, in input order, duplicates kept; the inputs are not
    modified. n < 1 raises ValueError.
    """
    raise NotImplementedError("decontaminate: collect the benchmarks' n-grams, keep the docs that share none")
