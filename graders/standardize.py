"""Checks for `standardize`. Every case is a script run on one Standardizer in the sandbox (`standardizer_script`):
its data are built there by the lines of code the failing input shows, its steps are called in order, and each
step records mean_, var_, what the call returned, transform's output and whether the argument changed. Expected
statistics are the two-pass ones (np.mean, then the mean of squared deviations), in float64, of exactly the rows
the contract says count, so any correct streaming formula passes; the reference is not consulted."""

from functools import partial

import numpy as np

from mlprep.grading import (Call, GraderDefect, Snapshot, assert_close, assert_keeps_precision, attribute_copy, check, check_each, control_value, explained,
                            fail, fail_if_changed, inputs_from_code, mistake_hint, on_input, outcome, scenario, tolerance_for)

STD_RTOL = 1e-6  # streaming std vs two-pass std, relative (the contract)
MEAN_ATOL_STD = 1e-4  # streaming mean vs two-pass mean, in units of the std (the contract)
OFFSET = 1e9
OFFSETS = "np.array([1e9, -1e9]) + "  # far from the origin too, each column on its own side

ZERO_VAR_HINT = ("a column whose var_ is 0 has std 0: give it 0 instead of dividing (divide only where var_ > 0, e.g."
                 " np.divide(..., out=np.zeros(...), where=std > 0))")
CANCEL_HINT = ("mean(x**2) - mean(x)**2 (or sum of squares minus n * mean**2) subtracts two numbers near 1e18 whose difference"
               " is about 1: all digits cancel. Keep a running mean and a sum of squared deviations instead (Welford per row, or"
               " Chan's merge of each batch's own mean and M2)")


# -- the scenario (runs in the sandbox) and its rendering -------------------------------------------
def script_code(data_code, steps, show):
    lines = [data_code, "s = Standardizer()"]
    for step in steps:
        method, expr = step[0], step[1]
        if method == "stream":
            lines += [f"for i in range(0, len({expr}), {step[2]}):", f"    s.partial_fit({expr}[i:i + {step[2]}])"]
        elif method == "transform":
            lines.append(f"out = s.transform({expr})")
        else:
            lines.append(f"s.{method}({expr})")
    return "\n".join(lines + [show])


@scenario(repro=lambda interface, data_code, steps, show="s.mean_, s.var_": Call.code(script_code(data_code, steps, show)))
def standardizer_script(module, data_code, steps, show="s.mean_, s.var_"):
    """Scenario: one Standardizer, the steps in order: ("fit" | "partial_fit" | "transform", expr) or ("stream", expr,
    batch) for partial_fit on consecutive batches; per step a record of mean_, var_, whether the call returned the
    object itself, transform's output, and whether the argument changed."""
    arrays = inputs_from_code(data_code)
    s = module.Standardizer()
    records = []
    for step in steps:
        method, expr = step[0], step[1]
        X = eval(expr, {"np": np}, arrays)
        before = Snapshot(X=X)
        if method == "stream":
            returned = [s.partial_fit(X[i:i + step[2]]) for i in range(0, len(X), step[2])][-1]
        else:
            returned = getattr(s, method)(X)
        record = {"changed": bool(before.changed()), "self": returned is s, "mean": attribute_copy(s, "mean_"), "var": attribute_copy(s, "var_")}
        if method == "transform":
            record["out"] = returned.copy() if isinstance(returned, np.ndarray) else returned
        records.append(record)
    return records


# -- the judge's side ------------------------------------------------------------------------------
def standardized(X, mean, var):
    std = np.sqrt(var)
    return np.divide(X - mean, std, out=np.zeros(X.shape), where=std > 0)


def expected(data_code, steps):
    """Per step: (the rows that count so far, the previous step's rows or None, the step's own input), float64."""
    arrays = inputs_from_code(data_code)
    seen, out = None, []
    for step in steps:
        X = np.asarray(eval(step[1], {"np": np}, arrays), dtype=np.float64)
        before = seen
        if step[0] == "fit":
            seen = X
        elif step[0] in ("partial_fit", "stream"):
            seen = X if seen is None else np.vstack([seen, X])
        out.append((seen, before, X))
    return out


def call_text(step):
    if step[0] == "stream":
        return f"s.partial_fit({step[1]}[i:i + {step[2]}]) over all of {step[1]}"
    return f"s.{step[0]}({step[1]})"


def stat_hint(got, name, seen, before, X, step, rtol, atol):
    """What the learner's mean_ or var_ equals, if a known mistake gives it."""
    statistic = "mean" if name == "mean_" else "var"
    return mistake_hint(got, [
        ("this is the sample variance (divided by N - 1); var_ is the population variance, divided by N (ddof = 0)",
         (lambda: seen.var(axis=0, ddof=1)) if name == "var_" and len(seen) > 1 else None),
        ("these are the statistics of this batch alone: partial_fit must merge the batch into the rows seen before it (including those of"
         " an earlier fit)", (lambda: getattr(X, statistic)(axis=0)) if step[0] != "fit" and before is not None else None),
        ("these are the statistics of every row seen so far: fit must start afresh, from its own X_train alone",
         (lambda: getattr(np.vstack([before, X]), statistic)(axis=0)) if step[0] == "fit" and before is not None else None),
    ], say="{}", first=True, rtol=rtol, atol=atol)


def run_script(sub, data_code, steps, *, what, dtype="float64", show="s.mean_, s.var_", tol=None, errstate=None):
    """Run the script and compare every step with the two-pass statistics; tol = (std rtol, mean atol in stds,
    transform atol, transform rtol) for the cancellation case, else the dtype's tolerance."""
    with sub.errstate(**(errstate or {})):
        records = sub.run(standardizer_script, data_code, steps, show)
    if not isinstance(records, list) or len(records) != len(steps):
        raise GraderDefect(f"standardizer_script returned {type(records).__name__}, expected one record per step")
    for k, (step, record, (seen, before, X)) in enumerate(zip(steps, records, expected(data_code, steps))):
        call = call_text(step)
        shown = Call.code(script_code(data_code, steps[:k + 1], "out" if step[0] == "transform" else "s.mean_, s.var_"))
        want_mean, want_var = seen.mean(axis=0), seen.var(axis=0)
        for name, got in (("mean_", record["mean"]), ("var_", record["var"])):
            if got is None:
                fail(f"after {call} ({what}): the Standardizer has no attribute {name}; set {name} (a float array of shape"
                     f" {want_mean.shape}) in fit and partial_fit", failing_input=shown)
            if not isinstance(got, np.ndarray):
                fail(f"after {call} ({what}): {name} is not an array of numbers (got {got!r:.80})", failing_input=shown)
        if tol is None:
            rtol, atol = tolerance_for("float32" if dtype == "float32" else "float64")
            for name, got, want in (("mean_", record["mean"], want_mean), ("var_", record["var"], want_var)):
                with on_input(shown), explained(partial(stat_hint, got, name, seen, before, X, step, rtol, atol)):
                    assert_close(got, want, what=f"{name} after {call}", scenario=what, rtol=rtol, atol=atol)
        else:
            check_cancellation(sub, record, want_mean, want_var, f"after {call} ({what})", shown, data_code, steps[:k + 1], tol)
        if step[0] == "transform":
            check_transform(record, X, want_mean, want_var, call, what, shown, dtype, tol)
    return records


def check_transform(record, X, mean, var, call, what, shown, dtype, tol):
    got = record["out"]
    want = standardized(X, mean, var)
    rtol, atol = tolerance_for("float32" if dtype == "float32" else "float64") if tol is None else (tol[3], tol[2])
    hint = ""
    if isinstance(got, np.ndarray) and got.shape == want.shape:
        with np.errstate(all="ignore"):
            if (~np.isfinite(got.astype(np.float64)) & (var == 0)).any():
                hint = ZERO_VAR_HINT
            elif len(X) > 1 and np.allclose(got, standardized(X, X.mean(axis=0), X.var(axis=0)), rtol=rtol, atol=atol):
                hint = ("this is X standardized with its own mean and variance: transform must use the statistics learned by"
                        " fit / partial_fit (mean_ and var_), never refit on the data it transforms")
    with on_input(shown):
        assert_close(got, want, what=call, scenario=what, rtol=rtol, atol=atol, hint=hint)
        if dtype == "float64":
            assert_keeps_precision(got, "float64", what=call, scenario=what)
    if dtype == "int64" and isinstance(got, np.ndarray) and got.dtype.kind not in "fc":
        fail(f"{call} ({what}): got dtype {got.dtype}; standardized values are fractions, so return floats", failing_input=shown)


def check_cancellation(sub, record, want_mean, want_var, head, shown, data_code, steps, tol):
    std_rtol, mean_atol = tol[0], tol[1]
    got_mean, got_var = record["mean"], record["var"]
    with on_input(shown):
        for name, got, want in (("mean_", got_mean, want_mean), ("var_", got_var, want_var)):
            if got.shape != want.shape:
                assert_close(got, want, what=f"{name} {head}")
    want_std = np.sqrt(want_var)
    with np.errstate(invalid="ignore"):
        got_std = np.sqrt(got_var)
        std_err = np.abs(got_std - want_std) / want_std
        mean_err = np.abs(got_mean - want_mean) / want_std
    if not (std_err <= std_rtol).all():
        j = int(np.argmax(np.where(np.isfinite(std_err), std_err, np.inf)))
        hint = column_hint(std_err <= std_rtol, want_mean, want_std)
        if not hint:
            shifted = control_value(sub, standardizer_script, data_code.replace(f"{OFFSET:g} + ", "").replace(OFFSETS, ""), steps,
                                    read=lambda records: records[-1]["var"])
            if isinstance(shifted, np.ndarray) and np.allclose(shifted, want_var, rtol=1e-5):
                hint = f"The same data shifted to mean 0 give the right variance, so the formula cancels: {CANCEL_HINT}."
        fail(f"sqrt(var_) {head}: {got_std[j]:.10g} in column {j}, but the two-pass std of these rows is {want_std[j]:.10g}"
             f" (var_ {got_var[j]:.6g} instead of {want_var[j]:.6g}); allowed: within {std_rtol:g} relative. {hint}",
             failing_input=shown, column=j, got_std=float(got_std[j]), expected_std=float(want_std[j]))
    if not (mean_err <= mean_atol).all():
        j = int(np.argmax(mean_err))
        fail(f"mean_ {head}: {got_mean[j]:.17g} in column {j}, but the two-pass mean is {want_mean[j]:.17g}, {mean_err[j]:.3g} stds"
             f" away; allowed: {mean_atol:g} std", failing_input=shown, column=j)


def column_hint(right, means, stds):
    """For a std wrong in some columns only: whether the right ones are those of one offset, the wrong ones another."""
    if right.all() or not right.any() or np.ptp(means) < 1e3 * stds.max():
        return ""
    good, bad = np.flatnonzero(right), np.flatnonzero(~right)
    return (f"Columns {good.tolist()} are right and columns {bad.tolist()} are not, and their means differ ({means[good[0]]:.3g} and"
            f" {means[bad[0]]:.3g}): a stability shift shared by every column (one number) keeps the digits only of the columns near it."
            " Shift each column by its own value, or keep a running mean and sum of squared deviations per column (Welford, Chan).")


def normal_code(seed, arrays, dtype="float64"):
    """Lines that build named arrays: {name: (rows, cols, loc, scale)}, loc + scale * N(0, 1) per column."""
    lines = [f"rng = np.random.default_rng({seed})"]
    for name, (rows, cols, loc, scale) in arrays.items():
        text = f"rng.standard_normal(({rows}, {cols}))"
        text = f"{scale!r} * {text}" if scale != 1 else text
        text = f"{loc:g} + {text}" if loc else text
        lines.append(f"{name} = ({text}).astype(np.{dtype})" if dtype != "float64" else f"{name} = {text}")
    return "\n".join(lines)


# -- checks -----------------------------------------------------------------------------------------
# Each one's scripts, as (data code, steps, options of run_script), are also the inputs of the check of inputs left unchanged.
FIT = [("X = np.array([[1.0, 2.0], [3.0, 6.0]])", [("fit", "X")], {"what": "X = [[1, 2], [3, 6]]"}),
       ("X = np.array([[5.0, -2.0, 0.5]])", [("fit", "X")], {"what": "one row"})] + [
    (normal_code(seed, {"X": (n, d, loc, scale)}), [("fit", "X")], {"what": f"X ({n}, {d}) = {loc:g} + {scale:g} * N(0, 1)"})
    for seed, (n, d, loc, scale) in enumerate([(10, 3, 2.0, 3.0), (200, 5, -7.0, 0.25), (30, 1, 0.0, 1.0)], start=1)]
TRANSFORM = [("X = np.array([[1.0, 2.0], [3.0, 6.0]])", [("fit", "X"), ("transform", "X")], {"what": "X = [[1, 2], [3, 6]]"})] + [
    (normal_code(seed, {"X": (n, d, loc, scale)}), [("fit", "X"), ("transform", "X")], {"what": f"X ({n}, {d}) = {loc:g} + {scale:g} * N(0, 1)"})
    for seed, (n, d, loc, scale) in enumerate([(12, 3, 4.0, 2.0), (300, 6, -1.0, 0.01)], start=11)]
NEW_DATA = [
    ("X_train = np.array([[1.0, 2.0], [3.0, 6.0]])\nX_test = np.array([[2.0, 8.0], [5.0, 0.0], [1.0, 4.0]])", [("fit", "X_train"), ("transform", "X_test")],
     {"what": "fit on X_train, then X_test", "show": "out, s.mean_, s.var_"}),
    ("X_train = np.array([[1.0, 2.0], [3.0, 6.0]])\nX_test = np.array([[4.0, -1.0]])", [("fit", "X_train"), ("transform", "X_test")],
     {"what": "one test row", "show": "out, s.mean_, s.var_"}),
    (normal_code(21, {"X_train": (100, 4, 0.0, 1.0), "X_test": (40, 4, 3.0, 5.0)}), [("fit", "X_train"), ("transform", "X_test"), ("transform", "X_train")],
     {"what": "X_train = N(0, 1), X_test = 3 + 5 * N(0, 1)", "show": "out, s.mean_, s.var_"})]
ZERO_VAR = [  # column 1 (or every column) is constant
    ("X = np.array([[1.0, 3.0], [2.0, 3.0], [4.0, 3.0]])", [("fit", "X"), ("transform", "X")], {"what": "column 1 constant (3.0)", "show": "out"}),
    ("X = np.array([[5.0, -2.0]])", [("fit", "X"), ("transform", "X")], {"what": "one row: every column has variance 0", "show": "out"}),
    ("X = np.column_stack([np.arange(7.0), np.full(7, 2.5), np.arange(7.0) ** 2])", [("stream", "X", 2), ("transform", "X")],
     {"what": "column 1 constant (2.5), streamed in batches of 2", "show": "out"})]
ACCUMULATES = [
    ("A = np.array([[1.0, 2.0], [3.0, 6.0]])\nB = np.array([[5.0, 10.0]])", [("partial_fit", "A"), ("partial_fit", "B")],
     {"what": "A = [[1, 2], [3, 6]], B = [[5, 10]]"}),
    # Batches of uneven sizes (a single row among them) with different means, so the merge's between-batch term matters.
    (normal_code(31, {"A": (7, 3, 0.0, 1.0), "B": (1, 3, 5.0, 1.0), "C": (20, 3, -3.0, 2.0), "D": (4, 3, 10.0, 0.5)}), [("partial_fit", n) for n in "ABCD"],
     {"what": "batches A (7 rows), B (1), C (20), D (4) with means 0, 5, -3, 10"}),
    (normal_code(32, {"X": (50, 2, 1.0, 3.0)}) + "\nZ = X + 4.0", [("stream", "X", 1), ("stream", "Z", 8)],
     {"what": "50 rows one by one, then 50 more in batches of 8"})]
AFTER_FIT = [
    ("A = np.array([[1.0, 2.0], [3.0, 6.0]])\nB = np.array([[5.0, 10.0]])", [("fit", "A"), ("partial_fit", "B")],
     {"what": "fit(A = [[1, 2], [3, 6]]), partial_fit(B = [[5, 10]])"}),
    (normal_code(41, {"A": (30, 3, 0.0, 1.0), "B": (10, 3, 4.0, 2.0), "C": (5, 3, -2.0, 1.0)}), [("fit", "A"), ("partial_fit", "B"), ("partial_fit", "C")],
     {"what": "fit(A), partial_fit(B), partial_fit(C)"})]
SMALL_AB = "A = np.array([[1.0, 2.0], [3.0, 6.0]])\nB = np.array([[5.0, 10.0], [7.0, 0.0]])"
RESETS = [(SMALL_AB, [("fit", "A"), ("fit", "B")], {"what": "fit(A), then fit(B)"}),
          (SMALL_AB, [("partial_fit", "A"), ("fit", "B")], {"what": "partial_fit(A), then fit(B)"}),
          (normal_code(51, {"A": (20, 3, 5.0, 1.0), "B": (15, 3, -5.0, 2.0), "C": (25, 3, 0.0, 1.0)}),
           [("partial_fit", "A"), ("partial_fit", "B"), ("fit", "C"), ("partial_fit", "A")], {"what": "partial_fit(A), partial_fit(B), fit(C), partial_fit(A)"})]
CANCEL_TOL = (STD_RTOL, MEAN_ATOL_STD, MEAN_ATOL_STD + 1e-12, STD_RTOL)
CANCELLATION = [
    (normal_code(seed, {"X": (n, d, OFFSET, 1.0)}), [("stream", "X", batch), ("transform", "X")],
     {"what": f"X ({n}, {d}) = 1e9 + N(0, 1) in batches of {batch}", "tol": CANCEL_TOL, "show": "np.sqrt(s.var_), s.mean_ - X.mean(axis=0)"})
    for seed, (n, d, batch) in enumerate([(10, 2, 3), (2000, 3, 100), (300, 2, 1)], start=61)] + [
    (normal_code(64, {"X": (1000, 3, OFFSET, 1.0)}), [("fit", "X")], {"what": "fit(X), X (1000, 3) = 1e9 + N(0, 1)", "tol": CANCEL_TOL, "show": "np.sqrt(s.var_)"}),
    (f"rng = np.random.default_rng(65)\nX = {OFFSETS}rng.standard_normal((300, 2))", [("stream", "X", 10), ("transform", "X")],
     {"what": "X (300, 2) = [1e9, -1e9] + N(0, 1): a column at each offset, in batches of 10", "tol": CANCEL_TOL,
      "show": "np.sqrt(s.var_), s.mean_ - X.mean(axis=0)"})]
DTYPES = [
    (normal_code(71, {"A": (40, 3, 2.0, 3.0), "B": (9, 3, -1.0, 1.0)}, dtype="float32"), [("fit", "A"), ("partial_fit", "B"), ("transform", "B")],
     {"what": "float32 A (40, 3), B (9, 3)", "dtype": "float32", "show": "out"}),
    ("A = np.array([[1, 2], [3, 6], [2, 2], [0, 5]])\nB = np.array([[4, 4], [1, 0]])", [("fit", "A"), ("partial_fit", "B"), ("transform", "B")],
     {"what": "int64 A (4, 2), B (2, 2)", "dtype": "int64", "show": "out"})]
ZERO_VAR_EDGE = ('In a column whose `var_` is 0 the result is 0, without a division by zero and without a NumPy warning (the grader runs'
                 ' that case under `np.errstate(divide="raise", invalid="raise")`).')


def run_case(sub, code, steps, opts):
    """One script of a check's table, (data code, steps, options of run_script), run and judged."""
    run_script(sub, code, steps, **opts)


fit_statistics = check_each("fit: mean_ and var_ are the population mean and variance (ddof = 0)", FIT, run_case)


@check("fit and partial_fit return the Standardizer itself", edge="Both return self.")
def returns_self(sub, ctx):
    for method in ("fit", "partial_fit"):
        records = sub.run(standardizer_script, "X = np.array([[1.0, 2.0], [3.0, 6.0], [0.0, 1.0]])", [(method, "X")], f"s.{method}(X) is s")
        if not records[-1]["self"]:
            fail(f"s.{method}(X) did not return s itself: return self at the end of {method}, so that"
                 f" Standardizer().{method}(X).transform(X) works (as in scikit-learn)")


transform_training = check_each("transform standardizes with mean_ and var_", TRANSFORM, run_case)
training_statistics_only = check_each("transform of new data uses the training statistics", NEW_DATA, run_case)
zero_variance = check_each("zero-variance columns transform to 0", ZERO_VAR, run_case, edge=ZERO_VAR_EDGE)
zero_variance_no_warning = check_each("zero-variance columns raise no floating-point warning", [
    (code, steps, {**opts, "what": opts["what"] + ', under np.errstate(divide="raise", invalid="raise")',
                   "errstate": {"divide": "raise", "invalid": "raise"}})
    for code, steps, opts in ZERO_VAR], run_case, edge=ZERO_VAR_EDGE)
partial_fit_accumulates = check_each("partial_fit accumulates: after each batch, the statistics of every row so far", ACCUMULATES, run_case)
partial_fit_after_fit = check_each("partial_fit after fit adds to fit's rows", AFTER_FIT, run_case)
fit_resets = check_each("fit starts afresh, also after partial_fit", RESETS, run_case)
streaming_cancellation = check_each("streaming on data with mean 1e9 and unit spread (no cancellation)", CANCELLATION, run_case)
input_dtypes = check_each("float32 and integer inputs", DTYPES, run_case)


@scenario(repro=lambda interface, data_code, steps: Call.code(script_code(data_code, steps, "s.mean_, s.var_")))
def changed_arguments(module, data_code, steps):
    """Scenario: the script, whatever its calls return or raise; per step, whether the call changed its argument
    (until a call raises)."""
    changed = []

    def run():
        arrays, s = inputs_from_code(data_code), module.Standardizer()
        for method, expr, *batch in steps:
            X = eval(expr, {"np": np}, arrays)
            before = Snapshot(X=X)
            if method == "stream":
                for i in range(0, len(X), batch[0]):
                    s.partial_fit(X[i:i + batch[0]])
            else:
                getattr(s, method)(X)
            changed.append(bool(before.changed()))
    outcome(run)
    return changed


def fail_if_argument_changed(code, steps, k):
    step = steps[k]
    fail_if_changed([step[1]], who=f"s.{'partial_fit' if step[0] == 'stream' else step[0]}({step[1]})",
                    fix="compute new arrays (Z = (X - mean) / std) instead of writing into the argument (X -= ..., X /= ...)",
                    failing_input=Call.code(script_code(code, steps[:k + 1], f"{step[1]}  # changed by {call_text(step)}")))


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    code = "A = np.array([[1.0, 2.0], [3.0, 6.0], [2.0, 5.0]])\nB = np.array([[4.0, 4.0], [1.0, 0.5]])"
    steps = [("fit", "A"), ("partial_fit", "B"), ("transform", "B"), ("transform", "A")]
    for k, record in enumerate(sub.run(standardizer_script, code, steps)):
        if record["changed"]:
            fail_if_argument_changed(code, steps, k)
    # The scripts of every other check, the float32, integer and 1e9 ones included, whatever the learner's code does on them.
    for code, steps, _ in FIT + TRANSFORM + NEW_DATA + ZERO_VAR + ACCUMULATES + AFTER_FIT + RESETS + CANCELLATION + DTYPES:
        changed = sub.run(changed_arguments, code, steps)
        if any(changed):
            fail_if_argument_changed(code, steps, changed.index(True))
