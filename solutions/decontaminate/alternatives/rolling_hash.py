"""A rolling polynomial hash of word ids over a window of n words (Rabin-Karp), with every hash hit
confirmed against the stored n-grams, so a collision can never remove a doc."""


def decontaminate(docs, benchmarks, n=13):
    if n < 1:
        raise ValueError(f"bad n: {n}")
    ids = {}
    base, mod = 1_000_003, (1 << 61) - 1
    top = pow(base, n - 1, mod)

    def windows(text):
        w = [ids.setdefault(word, len(ids) + 1) for word in text.lower().split()]
        if len(w) < n:
            return
        h = 0
        for x in w[:n]:
            h = (h * base + x) % mod
        yield h, tuple(w[:n])
        for i in range(n, len(w)):
            h = ((h - w[i - n] * top) * base + w[i]) % mod
            yield h, tuple(w[i - n + 1:i + 1])

    table = {}
    for bench in benchmarks:
        for h, gram in windows(bench):
            table.setdefault(h, set()).add(gram)

    kept = []
    for doc in docs:
        if not any(gram in table.get(h, ()) for h, gram in windows(doc)):
            kept.append(doc)
    return kept
