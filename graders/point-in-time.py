"""Checks for `point-in-time`: a rolling mean per entity over [q_ts - gap - window, q_ts - gap), NaN when empty.

Expected values come from the definition, here in the judge, never from the reference: for every query, a
mask over the events. Values are multiples of 1/4 (or distinct powers of two, so that the events a wrong
mean came from can be read off it), times, windows and gaps integers or quarters: every sum and every
bound is exact. Queries sit at event times with gap > 0, which tells "ts <= q_ts - gap" from "the row
itself included". Leakage is graded by behaviour: a query's result must not move when its future changes.
"""

import numpy as np

from mlprep.grading import (Call, CheckFailed, InPlace, Snapshot, assert_close, check, control_value, expect_raises, explained, fail, fail_if_changed,
                            inputs_unchanged, literal, mistake_hint, on_input, plural, raised_by, same_values, scenario, shrink_on_failure)

FN = "point_in_time_mean"
NAMES = ("entity", "ts", "value", "q_entity", "q_ts", "window", "gap")
PROBE_RTOL = 1e-12  # "changes nothing": the query's result before and after the change of its future
RTOL = ATOL = 1e-7  # float64's


# The definition and the known mistakes, judge side
def correct_rule(t, q, window, gap):
    return (t >= q - gap - window) & (t < q - gap)


def brute_force(case, rule=correct_rule, same_entity=True, empty=np.nan, reduce="mean"):
    """The O(N * M) definition: for each query, the events of its entity that `rule` selects."""
    entity, ts, value, q_entity, q_ts, window, gap = case
    entity, ts, value = np.asarray(entity), np.asarray(ts), np.asarray(value, dtype=np.float64)
    out = np.full(len(q_ts), empty, dtype=np.float64)
    for j in range(len(q_ts)):
        mask = rule(ts, q_ts[j], window, gap)
        if same_entity:
            mask = mask & (entity == q_entity[j])
        if mask.any():
            out[j] = value[mask].sum() if reduce == "sum" else value[mask].mean()
    return out


def selected_rows(case, j):
    entity, ts, _, q_entity, q_ts, window, gap = case
    return np.flatnonzero(correct_rule(np.asarray(ts), q_ts[j], window, gap) & (np.asarray(entity) == q_entity[j]))


MISTAKES = [  # (what the code does wrong, the results it then gives)
    ("an event exactly at the cut-off q_ts - gap was counted: the window ends with ts < q_ts - gap, strictly",
     lambda c: brute_force(c, lambda t, q, w, g: (t >= q - g - w) & (t <= q - g))),
    ("the events at the query's own time (ts == q_ts, the row itself) were counted: only events before q_ts - gap count",
     lambda c: brute_force(c, lambda t, q, w, g: correct_rule(t, q, w, g) | (t == q))),
    ("an event exactly at the window's start q_ts - gap - window was left out: the window starts with ts >= q_ts - gap - window",
     lambda c: brute_force(c, lambda t, q, w, g: (t > q - g - w) & (t < q - g))),
    ("the window is [q_ts - window, q_ts): gap was ignored, so events of the gap leak in; shift the whole window back by gap",
     lambda c: brute_force(c, lambda t, q, w, g: (t >= q - w) & (t < q))),
    ("the window starts at q_ts - window instead of q_ts - gap - window: it is window long after the shift by gap, [q_ts - gap - window, q_ts - gap)",
     lambda c: brute_force(c, lambda t, q, w, g: (t >= q - w) & (t < q - g))),
    ("events of every entity were averaged: only those with entity == q_entity count", lambda c: brute_force(c, same_entity=False)),
    ("an empty window gave 0.0: it gives NaN (no history is not a mean of 0)", lambda c: brute_force(c, empty=0.0)),
    ("this is the sum of the window's values, not their mean", lambda c: brute_force(c, reduce="sum")),
    ("these are the right results sorted by (q_entity, q_ts): return them in the queries' own order (result[j] for query j)",
     lambda c: brute_force(c)[np.lexsort((np.asarray(c[4]), np.asarray(c[3])))]),
]


def likely_cause(got, case):
    """The known mistake whose results the learner's equal, where they differ from the right ones; or ""."""
    want = brute_force(case)
    return mistake_hint(got, [(text, lambda results=results: results(case)) for text, results in MISTAKES], rtol=RTOL, atol=ATOL, equal_nan=True,
                        is_right=lambda value: same_values(value, want, rtol=RTOL, atol=ATOL, equal_nan=True),
                        say="Your results match a known mistake: {}.", two="Your results match two known mistakes here: {}; or {}.")


# Scenarios (run in the sandbox) and their rendering
def _call_text(case, string_ids=False):
    parts = []
    for name, arg in zip(NAMES, case):
        text = literal(arg)
        if string_ids and name in ("entity", "q_entity"):
            text = f"np.array({list(arg)!r})"
        parts.append(text if name not in ("window", "gap") else f"{name}={text}")
    return f"{FN}({', '.join(parts)})"


@scenario(repro=lambda interface, *case: Call.code(_call_text(case, string_ids=True)))
def with_string_ids(module, *case):
    """Scenario: the call with entity and q_entity as NumPy string arrays (lists of str travel; arrays of str do not), and the inputs it changed."""
    entity, ts, value, q_entity, q_ts, window, gap = case
    args = (np.array(entity), ts, value, np.array(q_entity), q_ts, window, gap)
    before = Snapshot(**dict(zip(NAMES, args)))
    return {"result": getattr(module, FN)(*args), "changed": before.changed()}


@scenario(repro=lambda interface, *case: Call.code(_call_text(case)))
def reordered_inputs(module, *case):
    """Scenario: the inputs one call left holding their own values in another order (sorted in place, say)."""
    before = InPlace(**dict(zip(NAMES, case)))
    getattr(module, FN)(*case)
    return before.reordered()


# Judging one call
def fmt(x):
    return "NaN" if np.isnan(x) else f"{float(x):.10g}"


def describe(case):
    entity, ts, _, q_entity, q_ts, window, gap = case
    return (f"{len(ts)} events of {len(np.unique(np.asarray(entity)))} entities, {len(q_ts)} queries, window = {window!r}, gap = {gap!r};"
            f" times {np.asarray(ts).dtype.name}")


def expect_results(got, case, where):
    """got is a float64 array of shape (M,) equal to the definition's results (NaN only where the window is empty)."""
    m = len(case[4])
    expect_array(got, m, where)
    want = brute_force(case)
    g = got.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.isnan(g) & np.isnan(want)) | (np.abs(g - want) <= ATOL + RTOL * np.abs(want))
    if ok.all():
        return
    bad = np.flatnonzero(~ok)
    j = int(bad[0])
    entity, ts, value, q_entity, q_ts, window, gap = case
    q = q_ts[j]
    rows = selected_rows(case, j)
    start, cutoff = q - gap - window, q - gap
    key = np.asarray(q_entity)[j].item()
    if len(rows):
        held = (f"the mean of the {plural(len(rows), 'event')} of entity {key!r} with {fmt(start)} <= ts < {fmt(cutoff)}:"
                f" rows {rows[:8].tolist()}{' ...' if len(rows) > 8 else ''}, values {np.asarray(value)[rows][:8].tolist()}")
    else:
        held = f"no event of entity {key!r} has {fmt(start)} <= ts < {fmt(cutoff)}"
    message = (f"{FN}(...) ({where}): {len(bad)} of {m} results differ; first at query {j} (q_entity[{j}] = {key!r},"
               f" q_ts[{j}] = {q.item() if hasattr(q, 'item') else q!r}): expected {fmt(want[j])} ({held}), got {fmt(g[j])}.")
    raise CheckFailed(message, {"what": f"{FN}(...)", "scenario": where, "first_index": f"({j},)", "expected": fmt(want[j]), "got": fmt(g[j]),
                                "rtol": RTOL, "atol": ATOL, "mismatches": int(len(bad))}, explain=lambda: likely_cause(g, case))


def expect_array(got, m, where):
    if not isinstance(got, np.ndarray):
        fail(f"{FN}(...) ({where}): expected a float64 NumPy array of shape ({m},), got {type(got).__name__}", what="type",
             got=type(got).__name__, first_index="")
    if got.shape != (m,):
        fail(f"{FN}(...) ({where}): expected shape ({m},), one result per query, got shape {got.shape}", what="shape", got=str(got.shape),
             first_index="")
    if got.dtype.kind not in "fiub":
        fail(f"{FN}(...) ({where}): expected float64 numbers, got dtype {got.dtype}", what="dtype", got=str(got.dtype), first_index="")


def unchanged_call(sub, case, where):
    """The learner's result for `case`; a failure when the call changed its inputs in place (every call of every check)."""
    def sorted_hint():
        reordered = control_value(sub, reordered_inputs, *case)
        return (f"It left {', '.join(reordered)} holding their own values in another order: sort an index array (np.argsort) and index with it"
                " instead of sorting the arrays themselves." if reordered else "")

    with explained(sorted_hint):
        return inputs_unchanged(sub, FN, *case, scenario=where, fix="compute new arrays instead of writing into the arguments.")


def judge(sub, case, where=""):
    where = where or describe(case)
    got = unchanged_call(sub, case, where)
    expect_results(got, case, where)
    return got


def arrays(entity, ts, value, q_entity, q_ts, window, gap):
    """A case as the arrays the learner gets (int64 or float64 times, float64 or int64 values)."""
    return (np.asarray(entity), np.asarray(ts), np.asarray(value), np.asarray(q_entity), np.asarray(q_ts), window, gap)


def at_events(entity, ts, value, window, gap, rows=None):
    """A case whose queries are the events themselves (all, or `rows`): the feature of each training row."""
    entity, ts = np.asarray(entity), np.asarray(ts)
    rows = np.arange(len(ts)) if rows is None else np.asarray(rows)
    return arrays(entity, ts, value, entity[rows], ts[rows], window, gap)


def random_case(rng, n, m, n_entities, t_max, window, gap, quarters=False, float_values=False):
    """Shuffled events (ties in time included) and queries, half of them at event times of their own entity."""
    entity = rng.integers(0, n_entities, n)
    ts = rng.integers(0, t_max, n)
    if quarters:
        ts = ts / 4
    value = rng.normal(5.0, 2.0, n) if float_values else rng.integers(-40, 41, n) / 4
    at = rng.integers(0, n, m // 2)
    q_entity = np.concatenate([entity[at], rng.integers(0, n_entities + 1, m - m // 2)])  # one id without events
    q_t = rng.integers(-2, t_max + window + gap + 2, m - m // 2)
    q_ts = np.concatenate([ts[at], q_t / 4 if quarters else q_t])
    perm = rng.permutation(m)
    return arrays(entity, ts, value, q_entity[perm], q_ts[perm], window, gap)


def small_cases():
    """Hypothesis cases: 0-12 events of entities 0-2 at times 0-9 with values in quarters, 1-8 queries at times 0-14, window 1-6,
    gap 1-3."""
    from hypothesis import strategies as st

    event = st.tuples(st.integers(0, 2), st.integers(0, 9), st.integers(-8, 8))
    query = st.tuples(st.integers(0, 2), st.integers(0, 14))
    return st.tuples(st.lists(event, max_size=12), st.lists(query, min_size=1, max_size=8), st.integers(1, 6), st.integers(1, 3)).map(
        lambda c: arrays(np.array([e for e, _, _ in c[0]], dtype=np.int64), np.array([t for _, t, _ in c[0]], dtype=np.int64),
                         np.array([v / 4 for _, _, v in c[0]], dtype=np.float64), np.array([e for e, _ in c[1]], dtype=np.int64),
                         np.array([t for _, t in c[1]], dtype=np.int64), c[2], c[3]))


# Ten events of one entity at times 0..9 with values 1, 2, 4, ..., 512: every set of events has its own sum.
POWERS = (np.zeros(10, dtype=np.int64), np.arange(10), 2.0 ** np.arange(10))


# Checks
@check("the window is q_ts - gap - window <= ts < q_ts - gap: its start is in, the cut-off and the row itself are out")
def window_bounds(sub, ctx):
    judge(sub, arrays([7, 7, 7, 7, 7, 7], [0, 1, 2, 3, 4, 5], [1.0, 2.0, 4.0, 8.0, 16.0, 32.0], [7], [5], 2, 2),
          "one entity, events at ts = 0..5 with values 1, 2, 4, ..., 32, one query at q_ts = 5 (the last event), window = 2, gap = 2:"
          " the window [1, 3) holds ts = 1 and 2")
    judge(sub, at_events(*POWERS, window=3, gap=2), "queries at every event of one entity, ts = 0..9, values 2**i, window = 3, gap = 2")
    judge(sub, at_events(*POWERS, window=1, gap=1), "queries at every event, window = 1, gap = 1: each window holds one event")
    judge(sub, at_events(*POWERS, window=4, gap=3), "queries at every event, window = 4, gap = 3")


@check("gap = 0: the window ends just before q_ts, the row itself still out")
def gap_zero(sub, ctx):
    judge(sub, at_events(*POWERS, window=3, gap=0), "queries at every event of one entity, ts = 0..9, values 2**i, window = 3, gap = 0")


@check("each query averages only its own entity's events (integer and string ids)")
def entities_apart(sub, ctx):
    case = arrays([1, 2, 1, 2, 1, 2], [0, 0, 1, 1, 2, 2], [1.0, 10.0, 2.0, 20.0, 4.0, 40.0], [1, 2, 1, 2], [3, 3, 4, 4], 3, 1)
    judge(sub, case, "entities 1 and 2 interleaved, window = 3, gap = 1")
    entity = np.array([3, 1, 2, 3, 1, 2, 3, 1, 2, 3])
    judge(sub, at_events(entity, np.arange(10), 2.0 ** np.arange(10), 4, 1), "three entities interleaved, queries at every event, window = 4, gap = 1")
    case = (["b", "a", "b", "a", "b"], np.array([0, 1, 2, 3, 4]), np.array([1.0, 2.0, 4.0, 8.0, 16.0]), ["a", "b", "a", "b"],
            np.array([3, 4, 5, 6]), 3, 1)
    got = sub.run(with_string_ids, *case)
    where = "string ids 'a' and 'b' (NumPy str arrays), window = 3, gap = 1"
    fail_if_changed(got["changed"], who=f"{FN}()", where=where)
    expect_results(got["result"], case, where)


@check("NaN when no event of the entity falls in the window")
def empty_windows(sub, ctx):
    case = arrays([1, 1, 2], [5, 6, 5], [1.0, 2.0, 4.0], [1, 1, 1, 3, 2], [5, 7, 20, 9, 6], 2, 2)
    judge(sub, case, "queries before the first event, inside the gap only, long after the last event, of an entity without events, window = 2, gap = 2")
    judge(sub, at_events([4, 4, 4], [0, 10, 20], [1.0, 2.0, 4.0], 5, 1), "events 10 apart, queries at the events, window = 5, gap = 1: every window is empty")


@check("events and queries in any order; result[j] belongs to query j")
def any_order(sub, ctx):
    rng = ctx.rng(3)
    base = at_events(np.array([0, 1, 0, 1, 0, 1, 0, 1]), np.array([0, 0, 1, 2, 3, 3, 5, 6]), 2.0 ** np.arange(8), 3, 1)
    judge(sub, base, "queries at every event, events in time order")
    for seed in range(3):
        perm_e, perm_q = rng.permutation(8), rng.permutation(8)
        entity, ts, value, q_entity, q_ts, window, gap = base
        case = (entity[perm_e], ts[perm_e], value[perm_e], q_entity[perm_q], q_ts[perm_q], window, gap)
        with explained(lambda case=case: sorted_events_hint(sub, case)):
            judge(sub, case, f"the same events and queries, both shuffled (shuffle {seed + 1})")
    with shrink_on_failure(sub, small_cases, lambda c: judge(sub, c)):
        judge(sub, random_case(rng, 300, 120, 4, 60, 10, 3))


def sorted_events_hint(sub, case):
    """A control call on the same events sorted by time: right results there show code that assumed sorted events."""
    order = np.argsort(case[1], kind="stable")
    control = control_value(sub, FN, case[0][order], case[1][order], case[2][order], *case[3:])
    if isinstance(control, np.ndarray) and same_values(control, brute_force(case), rtol=1e-5, atol=1e-8, equal_nan=True):
        return ("With the same events sorted by ts, your results are right: sort each entity's events by time before a binary search"
                " (np.searchsorted needs sorted input), or don't rely on the input's order.")
    return ""


@check("changing any event at or after the cut-off q_ts - gap changes nothing")
def future_is_invisible(sub, ctx):
    rng = ctx.rng(4)
    entity = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0])
    ts = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12])
    value = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0])
    base = at_events(entity, ts, value, 4, 2, rows=[4, 7, 10, 11])
    where = "queries at the events at ts = 4, 7, 10 and 12 of two interleaved entities, window = 4, gap = 2"
    before = unchanged_call(sub, base, where)  # judged here only by what the changes do to it (the other checks judge the values)
    expect_array(before, len(base[4]), where)
    for j in range(len(base[4])):
        for what, changed in future_changes(base, j, rng):
            probe(sub, base, before, changed, j, what)


def future_changes(case, j, rng):
    """(what changed, the changed case): the events at or after query j's cut-off perturbed, and new future events added."""
    entity, ts, value, q_entity, q_ts, window, gap = case
    cutoff = q_ts[j] - gap
    future = ts >= cutoff
    perturbed = value.copy()
    perturbed[future] = 100.0 + rng.integers(0, 400, int(future.sum())) / 4
    moved = ts.copy()
    moved[future] = cutoff + rng.integers(0, 6, int(future.sum()))
    swapped = entity.copy()
    swapped[future] = 1 - entity[future]
    new = (np.array([q_entity[j], q_entity[j], 1 - q_entity[j]]), np.array([cutoff, q_ts[j], cutoff + 1]), np.array([1000.0, -500.0, 250.0]))
    at = np.sort(rng.choice(len(ts) + 1, 3))  # where the new events go: anywhere in the arrays
    added = tuple(np.insert(a, at, b) for a, b in zip((entity, ts, value), new))
    return [
        ("the values of every event at or after the cut-off changed", (entity, ts, perturbed, q_entity, q_ts, window, gap)),
        ("the events at or after the cut-off moved to other times at or after it", (entity, moved, value, q_entity, q_ts, window, gap)),
        ("the entity of every event at or after the cut-off swapped", (swapped, ts, value, q_entity, q_ts, window, gap)),
        ("three events added: at the cut-off and at q_ts of the query's entity, one later of the other entity", (*added, q_entity, q_ts, window, gap)),
    ]


def probe(sub, base, before, changed, j, what):
    """Query j's result must not move when only its future changed (within PROBE_RTOL, NaN staying NaN)."""
    cutoff = base[4][j] - base[6]
    where = (f"query {j} (q_entity = {base[3][j].item()!r}, q_ts = {base[4][j].item()!r}, gap = {base[6]!r}, so the cut-off is"
             f" {cutoff.item()!r}); {what}")
    after = unchanged_call(sub, changed, where)
    shown = Call.code(f"before = {_call_text(base)}\nafter = {_call_text(changed)}\nbefore[{j}], after[{j}]  # must be equal")
    expect_array(after, len(changed[4]), where)
    moved = not (np.isnan(before[j]) and np.isnan(after[j])) and not abs(float(after[j]) - float(before[j])) <= PROBE_RTOL * abs(float(before[j]))
    with on_input(shown), explained(lambda: likely_cause(np.asarray(after, dtype=np.float64), changed) if moved else ""):
        assert_close(after[j], before[j], what=f"result[{j}] after the change", scenario=where, rtol=PROBE_RTOL, atol=0.0, equal_nan=True,
                     hint="Only events before q_ts - gap may count, and every changed event was at or after it.")


@check("equals the brute-force definition on random cases (integer and float times)")
def random_cases(sub, ctx):
    rng = ctx.rng(5)
    with shrink_on_failure(sub, small_cases, lambda c: judge(sub, c)):
        for n, m, n_entities, t_max, window, gap in ((20, 10, 2, 12, 4, 1), (200, 100, 5, 50, 7, 2), (2000, 500, 20, 400, 30, 5)):
            judge(sub, random_case(rng, n, m, n_entities, t_max, window, gap))
    judge(sub, random_case(rng, 300, 150, 4, 200, 2.5, 0.75, quarters=True), "float times in quarters, window = 2.5, gap = 0.75")
    judge(sub, random_case(rng, 300, 150, 4, 200, 8, 1.5, quarters=True, float_values=True), "float times, values N(5, 2)")


@check("returns a float64 array of shape (M,); integer values and times give float means")
def result_type(sub, ctx):
    case = arrays([0, 0, 0], [1, 2, 3], np.array([1, 2, 2]), [0, 0], [4, 5], 3, 1)
    got = judge(sub, case, "int64 values, int64 times")
    if got.dtype != np.float64:  # reached with the right means, 1.5 and 5/3: not an integer array
        fail(f"{FN}(...) with int64 values: got dtype {got.dtype}; return float64 means", what="dtype", got=str(got.dtype), first_index="")


@check("no events gives NaN for every query; no queries gives an empty array", edge="N = 0 gives M NaNs; M = 0 gives an empty float64 array.")
def empty_inputs(sub, ctx):
    no_events = arrays(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), [1, 2], [5, 6], 3, 1)
    judge(sub, no_events, "no events (N = 0), two queries")
    no_queries = arrays([1, 1], [0, 1], [1.0, 2.0], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 3, 1)
    got = judge(sub, no_queries, "no queries (M = 0)")
    if got.dtype != np.float64:
        fail(f"{FN}(...) with no queries: got an empty array of dtype {got.dtype}, expected float64", what="dtype", got=str(got.dtype), first_index="")


@check("invalid input raises ValueError: lengths that disagree, window <= 0, gap < 0",
       edge="`ValueError` when `entity`, `ts` and `value` are not of one length, when `q_entity` and `q_ts` are not of one length, when `window <= 0`,"
            " or when `gap < 0`.")
def invalid_input(sub, ctx):
    good = arrays([1, 1, 1], [0, 1, 2], [1.0, 2.0, 4.0], [1, 1], [3, 4], 2, 1)
    entity, ts, value, q_entity, q_ts, window, gap = good
    for case, why in (((entity, ts[:2], value, q_entity, q_ts, window, gap), "ts shorter than entity"),
                      ((entity, ts, value[:2], q_entity, q_ts, window, gap), "value shorter than entity"),
                      ((entity, ts, value, q_entity[:1], q_ts, window, gap), "q_entity shorter than q_ts"),
                      ((*good[:5], 0, gap), "window = 0"), ((*good[:5], -2, gap), "window = -2"), ((*good[:5], window, -1), "gap = -1")):
        expect_raises(sub.run(raised_by, FN, *case), what=f"{FN}(...) with {why}", shown=literal, failing_input=Call.code(_call_text(case) + "  # expected: ValueError"),
                      returned_hint="check the lengths, window > 0 and gap >= 0 first, and raise ValueError saying which is wrong")


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    rng = ctx.rng(6)
    unchanged_call(sub, random_case(rng, 12, 6, 2, 10, 3, 1), "shuffled events and queries")
    unchanged_call(sub, random_case(rng, 12, 6, 2, 10, 2.5, 0.75, quarters=True), "shuffled events and queries, float times in quarters")
