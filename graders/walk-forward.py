"""Checks for `walk-forward`: a walk-forward backtest per horizon, the last-value and seasonal naive baselines, and skill.

Graded by behaviour, through the forecasters the learner's walk_forward receives: code of the grader's own (RECORDING, MEAN, ...),
shown as it is in every failing input, run in the sandbox by the scenarios and here, in the judge, by the definitions
below (loops over the origins, never the reference). The recording forecaster keeps a copy of every history it is handed,
which is how the judge sees what the forecaster saw: exactly series[:origin] at every origin, nothing at or after it, a
fresh call at each. Every expected value is exact (fixed series, fixed seeds): nothing here needs a statistical band.
"""

import numpy as np

from mlprep.grading import (Call, CheckFailed, Snapshot, check, describe_value, expect_raises, explained, fail, fail_if_changed, inputs_unchanged,
                            listed, literal, mistake_hint, outcome, plural, raised_by, scenario, shrink_on_failure)

FUNCTIONS = ("walk_forward", "last_value", "seasonal_naive", "skill")
RTOL = ATOL = 1e-7  # float64's

# The grader's forecasters, as a failing input shows them. Each binds `forecast`; those that record bind `calls`.
RECORDING = '''calls = []  # a copy of every history forecast is handed
def forecast(history, horizon):  # the last value plus 0.5 per step ahead
    calls.append(np.array(history, dtype=float))
    return history[-1] + 0.5 * np.arange(1, horizon + 1)'''
MEAN = '''calls = []  # a copy of every history forecast is handed
def forecast(history, horizon):  # the mean of the whole history: refit at every call
    calls.append(np.array(history, dtype=float))
    return np.full(horizon, np.mean(history))'''
LISTED = '''calls = []  # a copy of every history forecast is handed
def forecast(history, horizon):  # the recording forecaster, returning a list
    calls.append(np.array(history, dtype=float))
    return [float(history[-1]) + 0.5 * (h + 1) for h in range(horizon)]'''
PERFECT = '''calls = []  # a copy of every history forecast is handed
def forecast(history, horizon):  # knows the future: the horizon values of series that follow its history
    calls.append(np.array(history, dtype=float))
    return series[len(history):len(history) + horizon]'''
LAST_VALUE = "forecast = last_value  # yours"
SEASONAL = "forecast = lambda history, horizon: seasonal_naive(history, horizon, 12)  # yours, season 12"
INTEGER = "forecast = lambda history, horizon: [int(history[-1])] * horizon  # integers"


def sized_forecast(k):
    return f"forecast = lambda history, horizon: [float(history[-1])] * {k}  # {plural(k, 'value')}, whatever the horizon"


# Series, as code
S12 = "series = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0, 8.0])"
S13 = "series = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0, 8.0, 9.0])"
S_INT = "series = np.array([4, 8, 15, 16, 23, 42, 8, 4, 16, 15, 42, 23, 4, 8])"
WALK = "series = np.cumsum(np.random.default_rng(1).standard_normal(120))  # a random walk"
SEASONAL_SERIES = ("t = np.arange(96)\nseries = 10 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(2).standard_normal(96)"
                   "  # period 12, noise")
WALK_INT = "series = np.cumsum(np.random.default_rng(3).integers(-3, 4, 40))  # an integer random walk"


# Scenarios (run in the sandbox) and their rendering
def backtest_code(series_code, forecaster, initial, horizon, step, show):
    """The lines of a backtest: the series, the forecaster, the call, and the expression `show` (None: the call itself is the last line,
    followed by the comment "expected: ValueError")."""
    call = f"walk_forward(series, forecast, initial={initial}, horizon={horizon}, step={step})"
    if show is None:
        return "\n".join([series_code, forecaster, f"{call}  # expected: ValueError"])
    return "\n".join([series_code, forecaster, f"errors = {call}", show])


def _namespace(module, *code):
    """The learner's functions and np, with `code` run in it."""
    namespace = {"np": np, **{name: getattr(module, name) for name in FUNCTIONS if hasattr(module, name)}}
    for lines in code:
        exec(lines, namespace)
    return namespace


def _kept(value):
    return value.copy() if isinstance(value, np.ndarray) else value


@scenario(repro=lambda interface, series_code, forecaster, initial, horizon, step, show="errors": Call.code(
    backtest_code(series_code, forecaster, initial, horizon, step, show)))
def backtest(module, series_code, forecaster, initial, horizon, step, show="errors"):
    """Scenario: one walk_forward on the series and with the forecaster their code builds: the errors, the histories the
    forecaster recorded (if it records), and whether the series was changed in place."""
    namespace = _namespace(module, series_code, forecaster)
    before = Snapshot(series=namespace["series"])
    errors = module.walk_forward(namespace["series"], namespace["forecast"], initial, horizon, step)
    return {"errors": _kept(errors), "calls": list(namespace.get("calls", [])), "changed": before.changed()}


@scenario(repro=lambda interface, series_code, forecaster, initial, horizon, step: Call.code(
    backtest_code(series_code, forecaster, initial, horizon, step, None)))
def backtest_outcome(module, series_code, forecaster, initial, horizon, step):
    """Scenario: what one walk_forward raised, or returned (see `outcome`)."""
    namespace = _namespace(module, series_code, forecaster)
    return outcome(lambda: module.walk_forward(namespace["series"], namespace["forecast"], initial, horizon, step))


@scenario(repro=lambda interface, setup, result: Call.code(f"{setup}\n{result}"))
def run_lines(module, setup, result):
    """Scenario: the lines of `setup` with the learner's functions, then the value of the expression `result`."""
    namespace = _namespace(module, setup)
    return _kept(eval(result, namespace))


# The definitions, judge side: loops over the origins, and the known mistakes as variants of them
def origins_of(n, initial, horizon, step):
    origins, origin = [], initial
    while origin + horizon <= n:
        origins.append(origin)
        origin += step
    return origins


def true_walk_forward(series, forecast, initial, horizon, step, *, history=None, late=0, refit=True, absolute=True):
    """errors[i, h] = |series[o_i + h] - forecast(series[:o_i], horizon)[h]|; the keywords make the known mistakes: what the
    forecaster is handed, actuals `late` steps late (the origins then stop `late` steps earlier), one fit, signed errors."""
    series = np.asarray(series)
    history = history or (lambda s, o: s[:o])
    rows, predicted = [], None
    for i, origin in enumerate(origins_of(len(series) - late, initial, horizon, step)):
        if refit or i == 0:
            predicted = np.asarray(forecast(history(series, origin).copy(), horizon), dtype=np.float64)
        error = series[origin + late:origin + late + horizon].astype(np.float64) - predicted
        rows.append(np.abs(error) if absolute else error)
    return np.array(rows, dtype=np.float64).reshape(len(rows), horizon)


def true_last_value(history, horizon):
    return np.array([float(history[-1])] * horizon)


def true_seasonal_naive(history, horizon, season):
    n = len(history)
    return np.array([float(history[n - season + h % season]) for h in range(horizon)])


def true_skill(errors, baseline_errors):
    errors, baseline_errors = np.asarray(errors, dtype=np.float64), np.asarray(baseline_errors, dtype=np.float64)
    return np.array([errors[:, h].mean() / baseline_errors[:, h].mean() for h in range(errors.shape[1])])


TRUTH = {"walk_forward": true_walk_forward, "last_value": true_last_value, "seasonal_naive": true_seasonal_naive, "skill": true_skill}


def judge_namespace(*code, **replaced):
    """The definitions in place of the learner's functions (or `replaced` ones), with `code` run in it."""
    namespace = {"np": np, **TRUTH, **replaced}
    for lines in code:
        exec(lines, namespace)
    return namespace


def expected_backtest(case, **mistake):
    """The expected errors of a backtest case, or those of one of its known mistakes (None where that mistake cannot run)."""
    series_code, forecaster, initial, horizon, step = case
    namespace = judge_namespace(series_code, forecaster)
    try:
        errors = true_walk_forward(namespace["series"], namespace["forecast"], initial, horizon, step, **mistake)
    except (ValueError, IndexError, TypeError):
        return None
    return errors


ERROR_MISTAKES = [  # (what the code does wrong, how the definition then reads)
    ("forecast was handed the whole series at every origin: it sees the values it is scored on (hand it series[:origin])",
     dict(history=lambda s, o: s)),
    ("forecast was handed series[:origin + 1], which holds series[origin], the first value scored: hand it series[:origin]",
     dict(history=lambda s, o: s[:o + 1])),
    ("each forecast is scored against the values one step later, series[o + 1:o + 1 + horizon]: errors[i, h] compares forecast[h]"
     " with series[o + h]", dict(late=1)),
    ("forecast was called once, at the first origin, and that forecast scored at every origin: call it again at each origin, with"
     " the history up to it", dict(refit=False)),
    ("these are the signed errors series[o + h] - forecast[h]: take their absolute value", dict(absolute=False)),
]


def likely_cause(got, case, want):
    """The known mistake whose errors the learner's equal, where they differ from the right ones; or ""."""
    mistakes = [(text, lambda mistake=mistake: expected_backtest(case, **mistake)) for text, mistake in ERROR_MISTAKES]
    mistakes.append(("rows and columns are swapped: errors[i, h] is origin i's error h + 1 steps ahead, shape (n_origins, horizon)",
                     want.T if want.ndim == 2 and want.shape[0] != want.shape[1] else None))
    return mistake_hint(got, mistakes, want=want, rtol=RTOL, atol=ATOL, say="Your errors match a known mistake: {}.",
                        two="Your errors match two known mistakes here: {}; or {}.")


# Judging what came back
def fmt(x):
    return f"{float(x):.10g}"


def case_text(case):
    series_code, forecaster, initial, horizon, step = case
    return f"initial = {initial}, horizon = {horizon}, step = {step}"


def run_backtest(sub, case, show="errors"):
    """The learner's record for a backtest case, after checking that the series was left as it was."""
    got = sub.run(backtest, *case, show)
    shown = Call.code(backtest_code(*case, show))
    if not isinstance(got, dict) or "errors" not in got:
        fail(f"walk_forward(...) ({case_text(case)}): the scenario's record came back as {describe_value(got)}", failing_input=shown)
    fail_if_changed(got["changed"], who="walk_forward()", where=case_text(case), failing_input=Call.code(backtest_code(
                    *case, "series  # must still hold the values of its first line")), fix="read the series, never write into it: a slice such as"
                    " series[o:o + horizon] is a view, and -= (or out=) on it writes into the series itself")
    return got, shown


def is_scalar(value):
    return isinstance(value, (int, float, np.number)) or (isinstance(value, np.ndarray) and value.shape == ())


def expect_array(got, shape, what, where, *, explain=None, failing_input=None, hint=""):
    """got is a numeric NumPy array of `shape`; `hint` follows a failure of its type or shape."""
    hint = f" {hint}" if hint else ""
    if not isinstance(got, np.ndarray):
        fail(f"{what} ({where}): expected a float64 NumPy array of shape {tuple(shape)}, got {describe_value(got)}.{hint}", explain=explain,
             failing_input=failing_input, what=f"type of {what}", got=type(got).__name__, first_index="")
    if got.shape != tuple(shape):
        fail(f"{what} ({where}): expected shape {tuple(shape)}, got shape {got.shape}.{hint}", explain=explain, failing_input=failing_input,
             what=f"shape of {what}", got=str(got.shape), first_index="")
    if got.dtype.kind not in "fiu":
        fail(f"{what} ({where}): expected float64 numbers, got dtype {got.dtype}", failing_input=failing_input, what=f"dtype of {what}",
             got=str(got.dtype), first_index="")


def first_difference(got, want):
    g = got.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(g - want) <= ATOL + RTOL * np.abs(want)
    bad = np.flatnonzero(~ok.ravel())
    return (int(bad[0]), len(bad)) if len(bad) else (None, 0)


def expect_errors(got, case, where, shown):
    """The learner's errors for a backtest case: the definition's, shape (n_origins, horizon), row i for origin i."""
    series_code, forecaster, initial, horizon, step = case
    want = expected_backtest(case)
    series = judge_namespace(series_code)["series"]
    origins = origins_of(len(series), initial, horizon, step)
    explain = lambda: likely_cause(got, case, want) if isinstance(got, np.ndarray) else ""
    expect_array(got, want.shape, "errors of walk_forward(...)", where, explain=explain, failing_input=shown)
    first, count = first_difference(got, want)
    if first is None:
        return
    i, h = (int(k) for k in np.unravel_index(first, want.shape))
    origin = origins[i]
    predicted = forecast_at(case, origin)
    formula = (f"|series[{origin + h}] - forecast[{h}]| = |{fmt(series[origin + h])} - {fmt(predicted[h])}|" if predicted is not None
               else f"|series[{origin + h}] - forecast[{h}]|")
    message = (f"walk_forward(...) ({where}): {count} of {want.size} errors differ; first at errors[{i}, {h}], origin {origin} (row {i}),"
               f" {plural(h + 1, 'step')} ahead (column {h}): expected {formula} = {fmt(want[i, h])}, got {fmt(got[i, h])}.")
    raise CheckFailed(message, {"what": "errors", "scenario": where, "first_index": f"({i}, {h})", "expected": fmt(want[i, h]),
                                "got": fmt(got[i, h]), "rtol": RTOL, "atol": ATOL, "mismatches": count}, failing_input=shown, explain=explain)


def forecast_at(case, origin):
    """What the case's forecaster forecasts at `origin`, judge side (None if it cannot say)."""
    series_code, forecaster, _, horizon, _ = case
    namespace = judge_namespace(series_code, forecaster)
    try:
        return np.asarray(namespace["forecast"](namespace["series"][:origin].copy(), horizon), dtype=np.float64)
    except (ValueError, IndexError, TypeError):
        return None


def expect_forecast(got, want, what, where, *, mistakes=()):
    """A baseline's forecast: an array of shape (horizon,) with the definition's values (any numeric dtype: float64 is its own check)."""
    expect_array(got, want.shape, what, where, hint="Return horizon values, an array of shape (horizon,), not one number." if is_scalar(got) else "")
    first, count = first_difference(got, want)
    if first is None:
        return
    hint = mistake_hint(got, list(mistakes), want=want, rtol=RTOL, atol=ATOL, say=" {}.")
    raise CheckFailed(f"{what} ({where}): {count} of {want.size} values differ; first at forecast[{first}], {plural(first + 1, 'step')}"
                      f" ahead: expected {fmt(want[first])}, got {fmt(got[first])}.{hint}",
                      {"what": what, "scenario": where, "first_index": f"({first},)", "expected": fmt(want[first]), "got": fmt(got[first]),
                       "rtol": RTOL, "atol": ATOL})


def call_lengths(record, shown):
    calls = record["calls"]
    if not isinstance(calls, list) or not all(isinstance(c, np.ndarray) and c.ndim == 1 for c in calls):
        fail("the recording forecaster's record came back broken: each history must be a 1-D array of numbers", failing_input=shown)
    return [len(c) for c in calls]


# Checks
@check("last_value repeats history[-1] horizon times", uses=("last_value",))
def last_value_repeats(sub, ctx):
    history = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    for horizon in (1, 3, 7):
        where = f"history = {literal(history)}, horizon = {horizon}"
        got = inputs_unchanged(sub, "last_value", history, horizon, scenario=where)
        expect_forecast(got, true_last_value(history, horizon), "last_value(...)", where,
                        mistakes=[("That is history[0], the first value: the last one is history[-1]", np.full(horizon, history[0]))])
    for history, where in ((np.array([2.5]), "a history of one value"), (np.array([4, 8, 15, 16, 23, 42]), "an integer history")):
        got = inputs_unchanged(sub, "last_value", history, 4, scenario=where)
        expect_forecast(got, true_last_value(history, 4), "last_value(...)", f"{where}, horizon = 4")


@check("seasonal_naive repeats the last season, starting over when horizon > season", uses=("seasonal_naive",))
def seasonal_repeats(sub, ctx):
    history = np.array([5.0, 1.0, 7.0, 3.0, 9.0, 2.0, 8.0, 4.0, 6.0])
    cases = ((4, 2, "horizon below the season"), (4, 4, "horizon = season"), (4, 10, "horizon = 2.5 seasons: the forecast wraps twice"),
             (1, 3, "season = 1: the last value"), (9, 12, "season = len(history)"), (3, 7, "season 3, horizon 7"))
    for season, horizon, why in cases:
        where = f"history = {literal(history)}, horizon = {horizon}, season = {season}: {why}"
        got = inputs_unchanged(sub, "seasonal_naive", history, horizon, season, scenario=where)
        n = len(history)
        start = [history[h - season] for h in range(horizon)]  # negative indices for h < season: right there
        expect_forecast(got, true_seasonal_naive(history, horizon, season), "seasonal_naive(...)", where, mistakes=[
            ("For h >= season your forecast reads history[h - season] from the start of the history: repeat the last season,"
             " history[len(history) - season + h % season]", np.array(start) if horizon > season else None),
            ("That is the first season of the history repeated: the forecast repeats the last one",
             np.array([history[h % season] for h in range(horizon)]) if n > season else None),
        ])
    integers = np.array([4, 8, 15, 16, 23, 42, 8])
    got = inputs_unchanged(sub, "seasonal_naive", integers, 5, 3, scenario="an integer history")
    expect_forecast(got, true_seasonal_naive(integers, 5, 3), "seasonal_naive(...)", f"history = {literal(integers)}, horizon = 5, season = 3")


ORIGIN_CASES = [  # (series, initial, horizon, step, why)
    (S12, 5, 3, 2, "12 values: origins 5, 7, 9; the last window, 9 + 3 = 12, ends exactly at the end of the series"),
    (S13, 5, 3, 2, "13 values: origins 5, 7, 9 (11 + 3 > 13)"),
    (S12, 3, 2, 1, "step = 1: every origin from 3 to 10"),
    (S12, 2, 2, 4, "a step larger than the horizon: origins 2, 6, 10"),
    (S12, 1, 4, 3, "initial = 1, a history of one value first: origins 1, 4, 7"),
]


def origins_hint(lengths, origins, initial, horizon, step, n):
    if len(lengths) == 1 and len(origins) > 1:
        return (" It was called once only: call it again at every origin, with the history up to that origin (the model is refit as the"
                " backtest walks forward).")
    if sorted(lengths) == origins[:-1] or sorted(lengths) == [o + 1 for o in origins[:-1]]:
        return (f" The last origin, {origins[-1]}, is missing: its window ends at {origins[-1]} + {horizon} = {origins[-1] + horizon}"
                f"{' = len(series)' if origins[-1] + horizon == n else f' <= len(series) = {n}'}, so it fits: keep origins while"
                " origin + horizon <= len(series).")
    if step > 1 and sorted(lengths) in (origins_of(n, initial, horizon, 1), [o + 1 for o in origins_of(n, initial, horizon, 1)]):
        return f" That is an origin at every step of 1: move the origin forward by step = {step}."
    return ""


@check("forecast is called once per origin: initial, initial + step, ... while origin + horizon <= len(series)", uses=("walk_forward",))
def origins_per_call(sub, ctx):
    for series_code, initial, horizon, step, why in ORIGIN_CASES:
        case = (series_code, RECORDING, initial, horizon, step)
        n = len(judge_namespace(series_code)["series"])
        want = origins_of(n, initial, horizon, step)
        show = f"len(calls), [len(h) for h in calls]  # calls of forecast, and the length of each history: expected {len(want)}, {want}"
        record, shown = run_backtest(sub, case, show)
        lengths = call_lengths(record, shown)
        where = f"{case_text(case)}; {why}"
        if len(lengths) != len(want):
            fail(f"walk_forward(...) ({where}): forecast was called {plural(len(lengths), 'time')}, with histories of lengths"
                 f" [{listed(lengths, 12)}]; expected {len(want)} calls, one per origin [{listed(want, 12)}]."
                 f"{origins_hint(lengths, want, initial, horizon, step, n)}", failing_input=shown, what="calls of forecast",
                 got=str(lengths), first_index="")
        expect_array(record["errors"], (len(want), horizon), "errors of walk_forward(...)", where, failing_input=shown)


def history_problem(calls, series, origins):
    """Why the histories forecast was handed are not series[:o] for the origins o: (the first wrong call, why), or None. With one call per
    origin, the calls (in order of their lengths: their order is free) are paired with the origins; otherwise each history must at least
    be a prefix of the series, and not all of it (the number of calls is the origins' check's business)."""
    n = len(series)
    for c, history in enumerate(calls):
        k = len(history)
        if k > n:
            return c, f"a history of {k} values, longer than the series ({n} values). Hand the forecaster series[:origin]"
        j = next((j for j in range(k) if history[j] != series[j]), None)
        if j is not None:
            return c, (f"a history of {k} values that is not series[:{k}]: its value {j} is {fmt(history[j])}, series[{j}] is {fmt(series[j])}."
                       " Hand the forecaster series[:origin] itself")
        if k == n:
            return c, (f"the whole series (series[:{k}]): it sees every value it is then scored on, a leak of the future that makes any"
                       " forecaster look good. Hand it series[:origin], the values before the origin")
    if len(calls) != len(origins):
        return None
    for (c, k), origin in zip(sorted(enumerate(len(h) for h in calls), key=lambda ck: ck[1]), origins):
        if k == origin + 1:
            return c, (f"series[:{k}] at origin {origin}: it holds series[{origin}], the value at the origin, which is the first one it is"
                       f" scored on (one step of look-ahead). Hand it series[:{origin}]")
        if k > origin:
            return c, (f"series[:{k}] at origin {origin}: it holds series[{origin}:{k}], values at and after the origin, which it is scored on."
                       f" Hand it series[:{origin}]")
        if k < origin:
            return c, (f"series[:{k}] at origin {origin}: it misses series[{k}:{origin}], values known at the origin. Hand it"
                       f" series[:{origin}], every value before the origin")
    return None


@check("forecast sees exactly series[:origin]: no value at or after the origin", uses=("walk_forward",))
def no_look_ahead(sub, ctx):
    for series_code, initial, horizon, step, why in ORIGIN_CASES:
        case = (series_code, RECORDING, initial, horizon, step)
        series = judge_namespace(series_code)["series"]
        want = origins_of(len(series), initial, horizon, step)
        shown = Call.code(backtest_code(*case, f"[len(h) for h in calls]  # each history must be series[:origin]: lengths {want}"))
        record, _ = run_backtest(sub, case)
        call_lengths(record, shown)
        problem = history_problem(record["calls"], series, want)
        if problem is not None:
            c, why_wrong = problem
            fail(f"walk_forward(...) ({case_text(case)}; {why}): call {c} of forecast was handed {why_wrong}.", failing_input=shown,
                 what=f"history of call {c}", got=f"{len(record['calls'][c])} values", first_index="")


ERROR_CASES = [  # (series, forecaster, initial, horizon, step, why)
    (S13, RECORDING, 5, 3, 2, "13 values, the recording forecaster"),
    (S12, RECORDING, 5, 3, 2, "12 values, the recording forecaster: the last window ends at the end"),
    (S13, RECORDING, 2, 4, 3, "13 values, the recording forecaster, step 3"),
    (S13, MEAN, 3, 3, 2, "the mean forecaster, refit at every origin"),
    (S12, LISTED, 4, 2, 3, "a forecaster that returns a list"),
]


@check("errors[i, h] = |series[o_i + h] - forecast_i[h]|: row i for origin i, column h for h + 1 steps ahead", uses=("walk_forward",))
def errors_per_origin_and_step(sub, ctx):
    for series_code, forecaster, initial, horizon, step, why in ERROR_CASES:
        case = (series_code, forecaster, initial, horizon, step)
        record, shown = run_backtest(sub, case)
        expect_errors(record["errors"], case, f"{case_text(case)}; {why}", shown)


@check("a perfect forecaster gives errors of 0", uses=("walk_forward",))
def perfect_forecaster(sub, ctx):
    for series_code, initial, horizon, step in ((S13, 5, 3, 2), (S12, 1, 4, 3), (WALK, 60, 12, 6)):
        case = (series_code, PERFECT, initial, horizon, step)
        record, shown = run_backtest(sub, case)
        expect_errors(record["errors"], case, f"{case_text(case)}; a forecaster that knows the future: every error is 0", shown)


BASELINE_CASES = [  # (series, forecaster, initial, horizon, step, why)
    (WALK, LAST_VALUE, 60, 12, 6, "a random walk of 120 values, your last_value"),
    (SEASONAL_SERIES, SEASONAL, 48, 18, 6, "a seasonal series of 96 values, your seasonal_naive with season 12 (horizon 18 wraps)"),
    (WALK_INT, LAST_VALUE, 10, 5, 5, "an integer random walk, your last_value"),
]


BASELINE_CALLS = {LAST_VALUE: ("last_value", ()), SEASONAL: ("seasonal_naive", (12,))}


def baseline_hint(sub, case, got):
    """Where the errors first differ, your baseline's own forecast from the same history (a control call): when it is not the
    definition's, the difference is in the baseline, not in walk_forward; "" otherwise."""
    series_code, forecaster, initial, horizon, step = case
    want = expected_backtest(case)
    if not isinstance(got, np.ndarray) or got.shape != want.shape:
        return ""
    first, _ = first_difference(got, want)
    if first is None:
        return ""
    i, h = (int(k) for k in np.unravel_index(first, want.shape))
    origin = initial + i * step
    fn, extra = BASELINE_CALLS[forecaster]
    history = judge_namespace(series_code)["series"][:origin]
    mine = sub.control(fn, history, horizon, *extra)
    truth = forecast_at(case, origin)
    if not isinstance(mine, np.ndarray) or mine.shape != (horizon,) or mine.dtype.kind not in "fiu" or truth is None:
        return ""
    if abs(float(mine[h]) - truth[h]) <= ATOL + RTOL * abs(truth[h]):
        return ""
    args = ", ".join([f"series[:{origin}]", str(horizon), *map(str, extra)])
    return (f"Your {fn}({args}) itself forecasts {fmt(mine[h])} {plural(h + 1, 'step')} ahead, where the definition gives {fmt(truth[h])}:"
            f" the difference is in {fn}, not in walk_forward.")


@check("walk_forward with your last_value and seasonal_naive as forecast", uses=("walk_forward", "last_value", "seasonal_naive"))
def baselines_in_a_backtest(sub, ctx):
    for series_code, forecaster, initial, horizon, step, why in BASELINE_CASES:
        case = (series_code, forecaster, initial, horizon, step)
        record, shown = run_backtest(sub, case)
        with explained(lambda case=case, got=record["errors"]: baseline_hint(sub, case, got)):
            expect_errors(record["errors"], case, f"{case_text(case)}; {why}", shown)


SKILL_ERRORS = np.array([[1.0, 4.0, 10.0, 0.5], [3.0, 2.0, 30.0, 0.25], [2.0, 6.0, 20.0, 1.5]])
SKILL_BASELINE = np.array([[2.0, 2.0, 5.0, 1.0], [1.0, 4.0, 5.0, 0.25], [4.0, 1.0, 8.0, 0.5]])


def quiet(compute):
    """compute() with NumPy's warnings off (a mistake's value may divide by zero), as a mistake's lazy value."""
    def value():
        with np.errstate(all="ignore"):
            return compute()
    return value


def skill_mistakes(errors, baseline):
    return [
        ("That is errors.mean() / baseline_errors.mean() over every origin and horizon at once: keep one ratio per horizon (axis=0)",
         quiet(lambda: np.full(errors.shape[1], errors.mean() / baseline.mean()))),
        ("That is a ratio of sums of squared errors: the contract asks for the ratio of mean absolute errors",
         quiet(lambda: (errors ** 2).sum(axis=0) / (baseline ** 2).sum(axis=0))),
        ("That is the inverse ratio, the baseline's mean error over the model's: skill is errors' mean over baseline_errors' mean",
         quiet(lambda: baseline.mean(axis=0) / errors.mean(axis=0))),
        ("That is the mean of the per-origin ratios errors / baseline_errors: divide the two means instead",
         quiet(lambda: (errors / baseline).mean(axis=0))),
    ]


def expect_skill(got, want, where, errors=None, baseline=None, failing_input=None):
    """skill's ratios: an array of shape (horizon,) with the definition's values; hints from the known mistakes on `errors`, `baseline`."""
    mistakes = skill_mistakes(errors, baseline) if errors is not None else []
    hint = ""
    if is_scalar(got) and not np.iscomplexobj(got) and want.shape != (1,):
        hint = "One ratio per horizon: skill is never averaged over the horizons."
        if mistakes and mistake_hint(np.full(want.shape, float(np.asarray(got))), mistakes[:1], want=want, rtol=RTOL, atol=ATOL):
            hint = (f"It is errors.mean() / baseline_errors.mean(), one ratio over every horizon at once; skill keeps the {len(want)} horizons"
                    " apart: the means over the origins, axis=0.")
    expect_array(got, want.shape, "skill(...)", where, failing_input=failing_input, hint=hint)
    first, count = first_difference(got, want)
    if first is None:
        return
    hint = mistake_hint(got, mistakes, want=want, rtol=RTOL, atol=ATOL, say=" {}.") if mistakes else ""
    fail(f"skill(...) ({where}): {count} of {want.size} ratios differ; first at horizon {first + 1} (index {first}): expected {fmt(want[first])},"
         f" got {fmt(got[first])}.{hint}", failing_input=failing_input, what="skill", first_index=f"({first},)", expected=fmt(want[first]),
         got=fmt(got[first]), rtol=RTOL, atol=ATOL)


@check("skill is the ratio of mean absolute errors per horizon, one per horizon", uses=("skill",))
def skill_per_horizon(sub, ctx):
    cases = ((SKILL_ERRORS, SKILL_BASELINE, "3 origins, 4 horizons of different scales"),
             (SKILL_ERRORS[:1, :2], SKILL_BASELINE[:1, :2], "1 origin, 2 horizons"),
             (SKILL_ERRORS[:, 2:3], SKILL_BASELINE[:, 2:3], "3 origins, 1 horizon"))
    for errors, baseline, why in cases:
        where = f"errors of shape {errors.shape}, {why}"
        got = inputs_unchanged(sub, "skill", errors, baseline, scenario=where)
        expect_skill(got, true_skill(errors, baseline), where, errors, baseline)


SKILL_RUNS = [  # (the lines that run the backtests, the skill they are judged by, what it must show)
    (f"{WALK}\nnaive = walk_forward(series, last_value, initial=60, horizon=12, step=6)", "skill(naive, naive)",
     "last value against itself on a random walk: 1 at every horizon"),
    (f"{WALK}\n{PERFECT}\nmodel = walk_forward(series, forecast, initial=60, horizon=12, step=6)\n"
     "naive = walk_forward(series, last_value, initial=60, horizon=12, step=6)", "skill(model, naive)",
     "a perfect forecaster against last value: 0 at every horizon"),
    (f"{SEASONAL_SERIES}\n{SEASONAL}\nmodel = walk_forward(series, forecast, initial=48, horizon=18, step=6)\n"
     "naive = walk_forward(series, last_value, initial=48, horizon=18, step=6)", "skill(model, naive)",
     "seasonal naive (season 12) against last value on a seasonal series"),
]


@check("skill in a backtest: last value against itself is 1, a perfect forecaster 0, per horizon")
def skill_in_a_backtest(sub, ctx):
    for setup, result, why in SKILL_RUNS:
        namespace = judge_namespace(setup)
        want = eval(result, namespace)
        shown = Call.code(f"{setup}\n{result}")
        got = sub.run(run_lines, setup, result)
        expect_skill(got, want, why, namespace.get("model", namespace["naive"]), namespace["naive"], failing_input=shown)


def random_case(rng):
    """A backtest case with at least one origin: a series of 2-60 values in quarters, the recording forecaster."""
    horizon, step = int(rng.integers(1, 9)), int(rng.integers(1, 7))
    n = int(rng.integers(horizon + 1, 61))
    initial = int(rng.integers(1, n - horizon + 1))
    seed = int(rng.integers(0, 2**31))
    return (f"series = np.random.default_rng({seed}).integers(-40, 41, {n}) / 4", RECORDING, initial, horizon, step)


def small_cases():
    """Hypothesis cases: 2-14 values in halves, and initial, horizon, step with at least one origin."""
    from hypothesis import strategies as st

    def case(values, initial, horizon, step):
        return (f"series = {literal(np.array(values, dtype=np.float64))}", RECORDING, initial, horizon, step)

    return st.lists(st.integers(-8, 8), min_size=2, max_size=14).flatmap(lambda values: st.tuples(
        st.just([v / 2 for v in values]), st.integers(1, len(values) - 1), st.integers(1, 4), st.integers(1, 4)).filter(
        lambda c: c[1] + c[2] <= len(c[0])).map(lambda c: case(*c)))


def judge_case(sub, case):
    record, shown = run_backtest(sub, case)
    series = judge_namespace(case[0])["series"]
    origins = origins_of(len(series), *case[2:])
    lengths = call_lengths(record, shown)
    where = f"{case_text(case)}, {len(series)} values"
    problem = history_problem(record["calls"], series, origins)
    if problem is not None:
        fail(f"walk_forward(...) ({where}): call {problem[0]} of forecast was handed {problem[1]}.", failing_input=shown,
             what=f"history of call {problem[0]}", got=f"{lengths[problem[0]]} values", first_index="")
    if sorted(lengths) != origins:
        handed = f"was handed histories of lengths [{listed(lengths, 12)}]" if lengths else "was never called"
        fail(f"walk_forward(...) ({where}): forecast {handed}; expected series[:o] once for"
             f" each origin o in [{listed(origins, 12)}].{origins_hint(lengths, origins, *case[2:], len(series))}", failing_input=shown,
             what="calls of forecast", got=str(lengths), first_index="")
    expect_errors(record["errors"], case, where, shown)


@check("random backtests against the definition", uses=("walk_forward",))
def random_backtests(sub, ctx):
    rng = ctx.rng(7)
    # Every failing input here is whole Python (a seeded series), but a dozen values read better than 60: always shrink.
    with shrink_on_failure(sub, small_cases, lambda case: judge_case(sub, case), worth_shrinking=lambda failure: True):
        for _ in range(30):
            judge_case(sub, random_case(rng))


@check("no origin fits: an empty (0, horizon) array, and forecast never called", uses=("walk_forward",),
       edge="When not even the first fits, the result is an empty float64 array of shape `(0, horizon)` and `forecast` is never called.")
def no_origin_fits(sub, ctx):
    for series_code, initial, horizon, why in (("series = np.array([1.0, 2.0, 3.0, 4.0, 5.0])", 4, 3, "5 values, 4 + 3 > 5"),
                                                ("series = np.array([1.0, 2.0, 3.0, 4.0, 5.0])", 5, 1, "5 values, initial = 5 = len(series)")):
        case = (series_code, RECORDING, initial, horizon, 1)
        record, shown = run_backtest(sub, case, "errors.shape, len(calls)  # expected (0, 3) and 0" if horizon == 3 else
                                     "errors.shape, len(calls)  # expected (0, 1) and 0")
        where = f"{case_text(case)}; {why}"
        if call_lengths(record, shown):
            fail(f"walk_forward(...) ({where}): forecast was called {plural(len(record['calls']), 'time')}; no origin fits, so it is never called",
                 failing_input=shown, what="calls of forecast", got=str(len(record["calls"])), first_index="")
        errors = record["errors"]
        hint = ("np.array of an empty list of rows has shape (0,): give it its columns, np.zeros((0, horizon)) or .reshape(-1, horizon)."
                if isinstance(errors, np.ndarray) and errors.shape == (0,) else "")
        expect_array(errors, (0, horizon), "errors of walk_forward(...)", where, failing_input=shown, hint=hint)
        if errors.dtype != np.float64:
            fail(f"errors of walk_forward(...) ({where}): an empty array of dtype {errors.dtype}; expected float64", failing_input=shown,
                 what="dtype of errors", got=str(errors.dtype), first_index="")


@check("invalid input raises ValueError", edge="`ValueError` from `walk_forward` when `initial`, `horizon` or `step` is below 1, or when"
       " `forecast` returns a number of values other than `horizon` (...); from `seasonal_naive` when `season < 1` or `len(history) < season`;"
       " from `skill` when the two arrays' shapes differ.")
def invalid_input(sub, ctx):
    for initial, horizon, step, forecaster, why in ((0, 3, 2, RECORDING, "initial = 0"), (5, 0, 2, RECORDING, "horizon = 0"),
                                                    (5, 3, 0, RECORDING, "step = 0"), (5, 3, 2, sized_forecast(4), "a forecast of 4 values"),
                                                    (5, 3, 2, sized_forecast(2), "a forecast of 2 values"),
                                                    (5, 3, 2, sized_forecast(1), "a forecast of 1 value, for horizon = 3")):
        case = (S12, forecaster, initial, horizon, step)
        expect_raises(sub.run(backtest_outcome, *case), what=f"walk_forward(...) with {why}", failing_input=Call.code(
            backtest_code(*case, None)), returned_hint=(
            "check that forecast returned horizon values (np.asarray(f).shape == (horizon,)): NumPy would spread a single value over the horizon"
            if "1 value" in why else "check initial, horizon and step (each at least 1) and the length of every forecast, and raise ValueError"))
    history = np.array([5.0, 1.0, 7.0])
    for season, why in ((0, "season = 0"), (4, "season = 4, longer than the history of 3 values")):
        expect_raises(sub.run(raised_by, "seasonal_naive", history, 2, season), what=f"seasonal_naive(...) with {why}",
                      failing_input=Call("seasonal_naive", history, 2, season, note="expected: ValueError"),
                      returned_hint="raise ValueError when season < 1 or len(history) < season")
    expect_raises(sub.run(raised_by, "skill", SKILL_ERRORS, SKILL_BASELINE[:2]), what="skill(...) of arrays of shapes (3, 4) and (2, 4)",
                  failing_input=Call("skill", SKILL_ERRORS, SKILL_BASELINE[:2], note="expected: ValueError"),
                  returned_hint="raise ValueError when errors.shape != baseline_errors.shape")


@check("float64 results, for integer inputs too", edge="Errors. ... A new float64 array (integer series give float errors). ... Both return a"
       " new float64 array of shape `(horizon,)`")
def float_results(sub, ctx):
    calls = [("last_value", (np.array([4, 8, 15, 16, 23, 42]), 3), "an integer history"), ("last_value", (np.array([0.5, 1.5]), 2), "a float history"),
             ("seasonal_naive", (np.array([4, 8, 15, 16, 23, 42]), 2, 3), "an integer history"),
             ("seasonal_naive", (np.array([0.5, 1.5, 2.5]), 3, 3), "a float history"),
             ("skill", (np.array([[1, 2], [3, 4]]), np.array([[2, 2], [2, 2]])), "integer errors")]
    for fn, args, why in calls:
        got = sub.call(fn, *args)
        if isinstance(got, np.ndarray) and got.dtype != np.float64:
            fail(f"{fn}(...) of {why}: got dtype {got.dtype}; expected float64", what=f"dtype of {fn}", got=str(got.dtype), first_index="")
    for case, why in (((S_INT, INTEGER, 3, 2, 2), "an integer series with integer forecasts"), ((S12, RECORDING, 5, 3, 2), "a float series")):
        record, shown = run_backtest(sub, case, "errors.dtype  # expected float64")
        errors = record["errors"]
        if isinstance(errors, np.ndarray) and errors.dtype != np.float64:
            fail(f"walk_forward(...) of {why}: errors of dtype {errors.dtype}; expected float64", failing_input=shown, what="dtype of errors",
                 got=str(errors.dtype), first_index="")


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    for case in ((WALK, RECORDING, 60, 12, 6), (S_INT, RECORDING, 3, 2, 2)):  # the grader's forecaster: only walk_forward is judged here
        run_backtest(sub, case)
    inputs_unchanged(sub, "last_value", np.array([3.0, 1.0, 4.0]), 3, scenario="history of 3 values")
    inputs_unchanged(sub, "seasonal_naive", np.array([3.0, 1.0, 4.0, 1.0]), 2, 2, scenario="history of 4 values, season 2")
    inputs_unchanged(sub, "skill", SKILL_ERRORS.copy(), SKILL_BASELINE.copy(), scenario="errors of shape (3, 4)")
