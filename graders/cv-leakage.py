"""Checks for `cv-leakage`: stratified, shuffled k-fold cross-validation whose models see their training rows only.

Graded by behaviour, through the models the learner's code receives: make_model is the grader's recording
model, a standard scaler (MODEL_CODE, the lines every failing input shows) whose every instance notes the row
numbers of X its fit and its score got (-1 for a row that is not bitwise a row of X), what it learned and the
score it returned. `recorder` runs it in the sandbox with plain-data bookkeeping around it that changes none
of its values; the judge reads the record. The reference is not consulted for any value. Failures record
what went wrong as a category, not the learner's fold-dependent numbers, so that the diagnosis names a known
mistake however the learner's code shuffles.
"""

import numpy as np

from mlprep.grading import (Call, CheckFailed, InPlace, assert_close, check, expect_raises, expect_sequence, fail, fail_if_changed, inputs_from_code, listed,
                            on_input, outcome, plural, scenario)

STATE_RTOL = 1e-12  # what a model learned, with and without its validation rows perturbed
PERTURB = "1000 + 100 * X[val]"

# The recording model, as a failing input shows it (and as the scenarios run it, through `recorder`, which adds bookkeeping
# around it but changes none of its values): the rows each model made saw, as row numbers of X, what it learned, its score.
MODEL_CODE = '''row = {r.tobytes(): i for i, r in enumerate(X)}  # -1 below: not a row of X
log = []  # per model made: what it saw and learned
class Model:  # make_model: a standard scaler that logs what it sees
    def __init__(self): log.append(seen := {}); self.seen = seen
    def fit(self, A, b):
        self.seen["fit"] = [row.get(a.tobytes(), -1) for a in A]
        self.seen["learned"] = self.mu, self.sd = A.mean(0), A.std(0)
        return self
    def score(self, A, b):
        self.seen["score"] = [row.get(a.tobytes(), -1) for a in A]
        self.seen["value"] = v = float(((A - self.mu) / self.sd).mean())
        return v'''


# Scenarios (run in the sandbox) and their rendering
def recorder(X, y):
    """(make_model, records) for X and y: MODEL_CODE's Model, with every call also recorded as plain data: per model made,
    the row numbers of every fit and score call (int64 arrays, -1 for a row that is not bitwise a row of X), whether the first
    of its rows that are not rows of X are rows of X standardised with all its rows' statistics, whether the labels passed were
    those rows' own, what fit learned (mean, std) and what score returned."""
    namespace = {"np": np, "X": X}
    exec(MODEL_CODE, namespace)
    records = []

    def labels_ok(idx, b):
        b = np.asarray(b)
        return bool(len(b) == len(idx) and (idx >= 0).all() and np.array_equal(b, np.asarray(y)[idx]))

    with np.errstate(all="ignore"):
        Z = (X - X.mean(0)) / X.std(0)  # X standardised with all its rows' statistics

    def standardised(A, idx):  # whether the first rows passed that are not rows of X are rows of Z
        try:
            rows = np.asarray(A, dtype=np.float64)[idx < 0][:5]
            return bool(len(rows)) and all((np.abs(Z - r) <= 1e-9 * (1 + np.abs(Z))).all(1).any() for r in rows)
        except (TypeError, ValueError, IndexError):
            return False

    class Recorded(namespace["Model"]):
        def __init__(self):
            super().__init__()
            self.record = {"fit_rows": [], "score_rows": [], "fit_standardised": [], "score_standardised": [], "labels_ok": [], "learned": [], "score": []}
            records.append(self.record)

        def fit(self, A, b):
            returned = super().fit(A, b)
            idx = np.asarray(self.seen["fit"], dtype=np.int64)
            self.record["fit_rows"].append(idx)
            self.record["fit_standardised"].append(standardised(A, idx))
            self.record["labels_ok"].append(labels_ok(idx, b))
            self.record["learned"].append(tuple(np.array(v, dtype=np.float64) for v in self.seen["learned"]))
            return returned

        def score(self, A, b):
            value = super().score(A, b)
            idx = np.asarray(self.seen["score"], dtype=np.int64)
            self.record["score_rows"].append(idx)
            self.record["score_standardised"].append(standardised(A, idx))
            self.record["labels_ok"].append(labels_ok(idx, b))
            self.record["score"].append(value)
            return value

    return Recorded, records


def call_text(k, seed):
    return f"cross_val_score(Model, X, y, k={k}, seed={seed})"


def run_code(data_code, k, seed, show):
    return "\n".join([data_code, MODEL_CODE, f"scores = {call_text(k, seed)}", show])


def _run(module, X, y, k, seed):
    """One call of cross_val_score with a fresh recorder: its records, what it returned, and what it changed."""
    import random

    before = InPlace(X=X, y=y)
    np_state, py_state = np.random.get_state(), random.getstate()
    make_model, records = recorder(X, y)
    result = module.cross_val_score(make_model, X, y, k, seed)
    np_touched = not all(np.array_equal(a, b) for a, b in zip(np_state, np.random.get_state()))
    if isinstance(result, np.ndarray):
        result = result.copy()
    elif isinstance(result, (list, tuple)):
        result = [float(v) if isinstance(v, (float, np.floating, int, np.integer)) and not isinstance(v, bool) else v for v in result]
    return {"log": records, "result": result, "np_touched": np_touched, "random_touched": random.getstate() != py_state, "changed": before.changed(),
            "reordered": before.reordered()}


@scenario(repro=lambda interface, data_code, k, seed, show="log": Call.code(run_code(data_code, k, seed, show)))
def cv_run(module, data_code, k, seed, show="log"):
    """Scenario: one run on the data data_code builds."""
    X, y = inputs_from_code(data_code, "X", "y")
    return _run(module, X, y, k, seed)


def repeat_code(data_code, k, runs):
    """Code for runs = [(seed, global seed or None), ...] that compares the runs' folds in its last line."""
    seeded = any(g is not None for _, g in runs)
    lines = [data_code, MODEL_CODE, f"def folds(seed{', global_seed' if seeded else ''}):  # each model's validation rows",
             *(["    np.random.seed(global_seed); log.clear()"] if seeded else ["    log.clear()"]),
             f"    {call_text(k, 'seed')}", "    return [m['score'] for m in log]"]
    calls = [f"folds({seed}, {global_seed})" if seeded else f"folds({seed})" for seed, global_seed in runs]
    return "\n".join(lines + [" == ".join(calls)])


def state_code(data_code, k, seed, which):
    """Code that shows cross_val_score changing np.random's (or random's) global state."""
    if which == "np.random":
        before, after = "np.random.get_state()[1].copy()", "(np.random.get_state()[1] == state).all()"
    else:
        before, after = "random.getstate()", "random.getstate() == state"
    return "\n".join([data_code, MODEL_CODE] + (["import random"] if which == "random" else []) +
                     [f"state = {before}", call_text(k, seed), f"{after}  # must be True"])


@scenario(repro=lambda interface, data_code, k, runs: Call.code(repeat_code(data_code, k, runs)))
def cv_repeat(module, data_code, k, runs):
    """Scenario: several runs, each (seed, global_seed): np.random seeded with global_seed (unless None) first."""
    out = []
    for seed, global_seed in runs:
        if global_seed is not None:
            np.random.seed(global_seed)
        X, y = inputs_from_code(data_code, "X", "y")
        out.append(_run(module, X, y, k, seed))
    return out


def probe_code(data_code, k, seed, fold):
    return "\n".join([data_code, MODEL_CODE, call_text(k, seed),
                      f"val, before = log[{fold}]['score'], log[{fold}]['learned']  # model {fold}'s validation rows",
                      f"X[val] = {PERTURB}  # change only their values",
                      "row = {r.tobytes(): i for i, r in enumerate(X)}",
                      f"log.clear(); {call_text(k, seed)}",
                      f"before, log[{fold}]['learned']  # model {fold}'s mean and std: must be equal"])


@scenario(repro=lambda interface, data_code, k, seed, fold: Call.code(probe_code(data_code, k, seed, fold)))
def cv_probe(module, data_code, k, seed, fold):
    """Scenario: a run, then the same run with the values of model `fold`'s validation rows changed."""
    X, y = inputs_from_code(data_code, "X", "y")
    first = _run(module, X, y, k, seed)
    log = first["log"]
    if not (len(log) > fold and log[fold]["score_rows"] and (log[fold]["score_rows"][0] >= 0).all()):
        return first, None
    val = log[fold]["score_rows"][0]
    X2 = X.copy()
    X2[val] = 1000 + 100 * X2[val]
    make_model2, log2 = recorder(X2, y)
    module.cross_val_score(make_model2, X2, y, k, seed)
    return first, log2


@scenario(repro=lambda interface, data_code, k, seed: Call.code("\n".join([data_code, MODEL_CODE, f"{call_text(k, seed)}  # expected: ValueError"])))
def outcome_of(module, data_code, k, seed):
    """Scenario: what one call raised, or returned (see `outcome`)."""
    X, y = inputs_from_code(data_code, "X", "y")
    make_model, _ = recorder(X, y)
    return outcome(lambda: module.cross_val_score(make_model, X, y, k, seed))


# Data: float64 X with distinct rows; y integer (or string) labels
SMALL = "X = np.array([[0.5], [1.5], [-1.0], [2.5], [0.0], [3.0], [-0.75], [1.25]])\ny = np.array([0, 1, 0, 1, 0, 1, 0, 1])"


def labels_code(seed, counts, d=2, labels=None):
    """Lines that build y (counts[c] rows of class c, shuffled) and X = N(0, 1) + 2 * class in each of d columns."""
    names = list(labels) if labels else list(range(len(counts)))
    n = sum(counts)
    lines = [f"rng = np.random.default_rng({seed})", f"y = rng.permutation(np.repeat({names!r}, {list(counts)!r}))"]
    if labels:
        lines.append(f"X = rng.standard_normal(({n}, {d})) + 2.0 * np.unique(y, return_inverse=True)[1][:, None]")
    else:
        lines.append(f"X = rng.standard_normal(({n}, {d})) + 2.0 * y[:, None]")
    return "\n".join(lines)


RARE = labels_code(0, (990, 10))  # 1% positives
THREE = labels_code(1, (7, 10, 23), d=3)
WORDS = labels_code(2, (9, 5), labels=("ham", "spam"))
EXACTLY_K = labels_code(3, (20, 3))  # for k = 3: one positive per fold


def describe(data_code, k):
    y = inputs_from_code(data_code, "y")
    classes, counts = np.unique(y, return_counts=True)
    return f"{len(y)} rows (" + ", ".join(f"{n} of class {c.item()!r}" for c, n in zip(classes, counts)) + f"), k = {k}"


# The judge's side: reading one run's log
def fmt_rows(rows):
    return "[" + listed(sorted(int(r) for r in rows)) + "]"


def run_once(sub, data_code, k, seed=0, show="log"):
    return sub.run(cv_run, data_code, k, seed, show), Call.code(run_code(data_code, k, seed, show)), describe(data_code, k)


def check_models(record, k, where, shown):
    """make_model called k times; each model fitted once, then scored once."""
    log = record["log"]
    made = len(log)
    if made != k:
        fits = sum(len(m["fit_rows"]) for m in log)
        hint = ""
        if made == 1 and fits == k:
            hint = " The one model was fitted k times: call make_model() inside the loop over the folds, one fresh model per fold."
        elif made == 1 and fits == 1 and sum(len(m["score_rows"]) for m in log) == k:
            hint = " It was fitted once and scored on every fold: a fold's model must be fitted on that fold's training rows only."
        fail(f"{where}: make_model() was called {plural(made, 'time')}; expected k = {k}, one fresh model per fold.{hint}",
             failing_input=shown, what="make_model calls", got=f"{made} made, {fits} fits", first_index="")
    for m, seen in enumerate(log):
        fits, scores = len(seen["fit_rows"]), len(seen["score_rows"])
        if fits != 1 or scores != 1:
            fail(f"{where}: model {m} (the {m + 1}th made) was fitted {fits} and scored {scores} times; each fold's model is fitted once, on"
                 " its training rows, and scored once, on its validation rows", failing_input=shown, what=f"calls of model {m}",
                 got=f"{fits} fit, {scores} score", first_index="")


def check_raw(record, where, shown):
    """Every row passed to fit or score is bitwise a row of X, with its own label."""
    for m, seen in enumerate(record["log"]):
        for method in ("fit", "score"):
            for idx, standardised in zip(seen[f"{method}_rows"], seen[f"{method}_standardised"]):
                if (idx < 0).any():
                    hint = (" They are rows of X standardised with the mean and std of all its rows: scaling belongs inside the model, fitted on"
                            " its training rows; scaling X before the split leaks the validation rows' statistics." if standardised else "")
                    fail(f"{where}: {int((idx < 0).sum())} of the {len(idx)} rows passed to model {m}'s {method} are not rows of X (bit for"
                         f" bit): pass X[train] and X[val] as they are.{hint}", failing_input=shown, what=f"rows of model {m}'s {method}",
                         got="not rows of X", first_index="")
        if not all(seen["labels_ok"]):
            fail(f"{where}: model {m} got labels that are not its rows' own: pass y[train] with X[train] (and y[val] with X[val]), indexed by the"
                 " same row numbers", failing_input=shown, what=f"labels of model {m}", got="misaligned", first_index="")


def folds_of(record, n, k, where, shown):
    """The validation rows of each model, after checking that each model trains on exactly the other rows and the folds partition."""
    check_models(record, k, where, shown)
    check_raw(record, where, shown)
    folds = []
    everything = set(range(n))
    for m, seen in enumerate(record["log"]):
        fit, val = seen["fit_rows"][0], seen["score_rows"][0]
        fit_set, val_set = set(fit.tolist()), set(val.tolist())
        leaked = fit_set & val_set
        if leaked:
            hint = (" It was fitted on all the rows." if fit_set == everything else
                    " It was fitted on exactly the rows it was scored on: fit on the other folds, score on this one." if fit_set == val_set else "")
            fail(f"{where}: model {m} was scored on {len(val_set)} rows, {len(leaked)} of which it had been fitted on too (rows"
                 f" {fmt_rows(leaked)}): a fold's model must never see its validation rows during fit.{hint}", failing_input=shown,
                 what=f"rows in both fit and score of model {m}", got="all its validation rows" if leaked == val_set else "some of its validation rows",
                 first_index="")
        if len(fit) != len(fit_set) or len(val) != len(val_set):
            fail(f"{where}: model {m} got some rows more than once (fit: {len(fit)} rows, {len(fit_set)} distinct; score: {len(val)}, {len(val_set)}"
                 " distinct)", failing_input=shown, what=f"repeated rows of model {m}", got=f"{len(fit)}/{len(val)}", first_index="")
        if fit_set | val_set != everything:
            fail(f"{where}: model {m} neither fitted nor scored rows {fmt_rows(everything - fit_set - val_set)}: its training rows are every row"
                 " not in its validation fold.", failing_input=shown, what=f"rows unused by model {m}", got="rows neither fitted nor scored", first_index="")
        if len(fit_set) < len(val_set):
            fail(f"{where}: model {m} was fitted on {len(fit_set)} rows and scored on {len(val_set)}: fit on the k - 1 other folds and score on"
                 " the one validation fold, not the other way round", failing_input=shown, what=f"fit rows of model {m}",
                 got=str(len(fit_set)), first_index="")
        folds.append(val_set)
    seen_twice = [r for r in everything if sum(r in f for f in folds) > 1]
    never = [r for r in everything if not any(r in f for f in folds)]
    if seen_twice or never:
        fail(f"{where}: the {k} validation folds do not partition the rows: rows {fmt_rows(seen_twice)} are validated more than once, rows"
             f" {fmt_rows(never)} never; every row is in exactly one fold", failing_input=shown, what="validation folds",
             got="not a partition of the rows", first_index="")
    return folds


# Checks
@check("a fresh make_model() per fold, fitted once and scored once")
def fresh_model_per_fold(sub, ctx):
    for data_code, k in ((SMALL, 2), (RARE, 5), (THREE, 4)):
        record, shown, where = run_once(sub, data_code, k, show="len(log)  # models made: one per fold")
        check_models(record, k, where, shown)


@check("fit and score get raw rows of X with their own labels (no preprocessing outside)")
def raw_rows(sub, ctx):
    for data_code, k in ((SMALL, 2), (RARE, 5), (WORDS, 3)):
        record, shown, where = run_once(sub, data_code, k, show="[(m['fit'], m['score']) for m in log]")
        check_models(record, k, where, shown)
        check_raw(record, where, shown)


@check("no validation row reaches fit: each fold's model trains on the other folds")
def no_validation_row_in_fit(sub, ctx):
    for data_code, k in ((SMALL, 2), (SMALL, 4), (RARE, 5), (THREE, 4)):
        record, shown, where = run_once(sub, data_code, k, show="[(sorted(m['fit']), sorted(m['score'])) for m in log]")
        y = inputs_from_code(data_code, "y")
        folds_of(record, len(y), k, where, shown)


@check("the k scores in fold order: result[i] is what fold i's model.score returned")
def scores_in_fold_order(sub, ctx):
    for data_code, k in ((SMALL, 2), (RARE, 5), (THREE, 4)):
        record, shown, where = run_once(sub, data_code, k, show="scores, [m['value'] for m in log]  # must be equal")
        check_models(record, k, where, shown)
        want = [seen["score"][0] for seen in record["log"]]
        got = record["result"]
        if isinstance(got, np.ndarray):
            got = got.tolist() if got.ndim == 1 else got
        got = expect_sequence(got, k, what="cross_val_score(...)", scenario=where)
        try:
            assert_close(np.asarray(got, dtype=np.float64) if all(isinstance(g, (int, float)) for g in got) else got, np.array(want),
                         what="the returned scores", scenario=where + "; expected each model's own score, in the order the models were made")
        except CheckFailed as failure:
            # What was wrong, as a category: the values themselves depend on how the folds were shuffled.
            failure.failing_input = shown
            failure.details.update(got="other values", first_index="")
            values = [g for g in got if isinstance(g, (int, float))]
            if len(values) == k and sorted(values) == sorted(want):
                in_order = values == sorted(want) or values == sorted(want, reverse=True)
                failure.details["got"] = "the right scores, sorted" if in_order else "the right scores in another order"
                failure.notes.append(f"They are {failure.details['got']}: return them in fold order, the score of the i-th model made at index i.")
            raise


def check_stratified(folds, y, k, where, shown):
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    per_fold = np.array([np.bincount(codes[sorted(fold)], minlength=len(classes)) for fold in folds])  # (fold, class) counts
    for i, c in zip(*np.nonzero((per_fold < counts // k) | (per_fold > -(-counts // k)))):
        n_c, g, lo, hi = counts[c], per_fold[i, c], counts[c] // k, -(-counts[c] // k)
        fail(f"{where}: fold {i} (model {i}'s validation rows) holds {plural(g, 'row')} of class {classes[c].item()!r}, which has {n_c} rows: every"
             f" fold holds floor or ceil of {n_c} / {k}, {plural(lo, 'row') if lo == hi else f'{lo} or {hi} rows'}. {stratify_hint(per_fold, counts, c, k)}",
             failing_input=shown, what="rows of each class per fold", got="outside floor(n_c / k) .. ceil(n_c / k)", first_index="")


def stratify_hint(per_fold, counts, c, k):
    """What the per-class counts of the folds show: chunks of ceil(n_c / k), or folds of the right sizes that ignore the classes."""
    size = -(-counts[c] // k)
    if per_fold[:, c].tolist() == [min(size, max(0, counts[c] - f * size)) for f in range(k)]:
        return (f"Its rows were cut into chunks of ceil({counts[c]} / {k}) = {size}, which leaves the last folds short: deal each class's shuffled rows"
                " round-robin (fold = position % k), or split them with np.array_split into k parts.")
    totals, n = per_fold.sum(1), counts.sum()
    if ((n // k <= totals) & (totals <= -(-n // k))).all():
        return ("The folds have the right sizes but not per class, as a split that ignores the classes leaves them: shuffle and deal each class's rows"
                " over the folds separately (or stable-sort a permutation by class and deal position r to fold r % k).")
    return "Deal each class's shuffled rows over the folds round-robin (fold = position % k), or split them with np.array_split into k parts."


@check("stratified: every fold holds floor or ceil of n_c / k rows of each class")
def stratified(sub, ctx):
    # The 1% data first: a split that ignores the classes fails there whatever its shuffle (all five folds get exactly two of the
    # ten positives with probability about 1%), so that its failure does not depend on how it shuffles.
    for data_code, k in ((RARE, 5), (RARE, 3), (THREE, 4), (WORDS, 3), (SMALL, 2), (EXACTLY_K, 3)):
        record, shown, where = run_once(sub, data_code, k, show="[np.unique(y[m['score']], return_counts=True) for m in log]")
        y = inputs_from_code(data_code, "y")
        check_stratified(folds_of(record, len(y), k, where, shown), y, k, where, shown)


def single_run_checks(record, data_code, k, seed, where):
    """What one run must show before runs can be compared: k models, each fitted and scored once, on raw rows."""
    shown = Call.code(run_code(data_code, k, seed, "len(log), [(m['fit'], m['score']) for m in log]"))
    check_models(record, k, where, shown)
    check_raw(record, where, shown)


def fold_lists(record):
    return [sorted(m["score_rows"][0].tolist()) if m["score_rows"] else [] for m in record["log"]]


@check("seed alone decides the folds; the global random state stays untouched")
def deterministic_per_seed(sub, ctx):
    k, runs = 5, [(7, 1), (7, 2)]
    records = sub.run(cv_repeat, RARE, k, runs)
    where = describe(RARE, k) + ": two calls with seed = 7 (np.random seeded with 1, then 2)"
    shown = Call.code(repeat_code(RARE, k, runs))
    for record, (seed, _) in zip(records, runs):
        single_run_checks(record, RARE, k, seed, where)
    for n, record in enumerate(records, start=1):
        for name, touched in (("np.random", record["np_touched"]), ("random", record["random_touched"])):
            if touched:
                fail(f"{where}: call {n} changed {name}'s global state: cross_val_score must draw from its own generator,"
                     " np.random.default_rng(seed), and leave the caller's random state alone (np.random.seed or np.random.permutation"
                     " inside it changes every random number the program draws afterwards)", failing_input=Call.code(state_code(RARE, k, 7, name)),
                     what="global random state", got=f"{name}'s changed by call {n}", first_index="")
    first, second = (fold_lists(r) for r in records)
    if first != second:
        fail(f"{where} made different folds: take all randomness from np.random.default_rng(seed)",
             failing_input=shown, what="folds of two calls with one seed", got="different", first_index="")


@check("the folds are shuffled with seed: another seed gives other folds")
def seed_shuffles(sub, ctx):
    k, runs = 5, [(0, None), (1, None)]
    records = sub.run(cv_repeat, RARE, k, runs)
    where = describe(RARE, k)
    shown = Call.code(repeat_code(RARE, k, runs))
    for record, (seed, _) in zip(records, runs):
        single_run_checks(record, RARE, k, seed, where)
    first, second = (fold_lists(r) for r in records)
    if first == second:
        fail(f"{where}: seed = 0 and seed = 1 made the same folds: {unshuffled_hint(first, inputs_from_code(RARE, 'y'), k)}",
             failing_input=shown, what="folds of seeds 0 and 1", got="equal", first_index="")


def unshuffled_hint(folds, y, k):
    """Whether each class's rows, in their stored order, were dealt in that order (round-robin, or in runs): folds never shuffled."""
    fold_of = {row: i for i, fold in enumerate(folds) for row in fold}
    dealt = [[fold_of.get(row, -1) for row in np.flatnonzero(y == c)] for c in np.unique(y)]
    if all(f == sorted(f) or all((b - a) % k == 1 for a, b in zip(f, f[1:])) for f in dealt):
        return ("each class's rows went to the folds in their stored order, so the folds were never shuffled: shuffle each class's rows with"
                " np.random.default_rng(seed) before dealing them out (unshuffled folds follow the rows' stored order, often sorted by time or class)")
    return ("the folds do not depend on seed: draw the shuffle from np.random.default_rng(seed), the generator seeded by the argument (not one"
            " with a fixed seed of your own)")


@check("changing a fold's validation rows changes nothing its model learns")
def validation_rows_invisible(sub, ctx):
    for data_code, k in ((SMALL, 2), (RARE, 5)):
        for fold in (0, k - 1):
            first, second = sub.run(cv_probe, data_code, k, 0, fold)
            where = describe(data_code, k) + f", fold {fold}'s validation rows changed"
            shown = Call.code(probe_code(data_code, k, 0, fold))
            single_run_checks(first, data_code, k, 0, where)
            if second is None:
                fail(f"{where}: model {fold} was not scored on rows of X, so the second call could not be built", failing_input=shown,
                     what="validation rows", got="none", first_index="")
            if len(second) <= fold or not second[fold]["fit_rows"]:
                fail(f"{where}: the second call made no model {fold}, or did not fit it", failing_input=shown, what="second call", got="no model",
                     first_index="")
            before, after = first["log"][fold], second[fold]
            if not np.array_equal(before["score_rows"][0], after["score_rows"][0]):
                fail(f"{where}: model {fold}'s validation rows differ between the two calls, though only X's values changed: the folds must"
                     " depend on y, k and seed alone", failing_input=shown, what=f"validation rows of model {fold}", got="changed", first_index="")
            for name, b, a in zip(("the scaler's mean", "the scaler's std"), before["learned"][0], after["learned"][0]):
                with on_input(shown):
                    assert_close(a, b, what=f"{name} model {fold} learned", scenario=where, rtol=STATE_RTOL, atol=0.0,
                                 hint="The values of its validation rows reached its fit: fit the model on X[train] as it is, nothing"
                                      " computed from the other rows (a global scaler, a model fitted on all of X).")


def expect_value_error(sub, data_code, k, why):
    expect_raises(sub.run(outcome_of, data_code, k, 0), what=f"{describe(data_code, k)} ({why})", shown=lambda result: str(result)[:80],
                  returned_hint="check k >= 2 and that every class has at least k rows before splitting, and raise ValueError saying which")


@check("ValueError for k < 2 or a class with fewer than k rows",
       edge="`ValueError` when `k < 2` or when some class has fewer than `k` rows (a fold would get none of it).")
def invalid_k(sub, ctx):
    expect_value_error(sub, SMALL, 1, "k = 1")
    expect_value_error(sub, SMALL, 0, "k = 0")
    expect_value_error(sub, SMALL, 5, "each class has 4 rows, k = 5")
    expect_value_error(sub, RARE, 11, "10 positives, k = 11")
    got = sub.run(outcome_of, EXACTLY_K, 3, 0)
    if got["raised"]:
        fail(f"{describe(EXACTLY_K, 3)}: a class of exactly k rows is allowed (one row in each fold), but it raised {got['raised']}: {got['message']};"
             " raise only when a class has fewer than k rows", failing_input=Call.code(run_code(EXACTLY_K, 3, 0, "scores")), what="a class of exactly k rows",
             got=got["raised"], first_index="")


@check("X and y unchanged")
def inputs_kept(sub, ctx):
    for data_code, k in ((SMALL, 2), (RARE, 5), (THREE, 4), (WORDS, 3), (EXACTLY_K, 3)):
        record, _, where = run_once(sub, data_code, k)
        shown = Call.code(run_code(data_code, k, 0, f"{', '.join(record['changed'])}  # changed by cross_val_score"))
        fail_if_changed(record["changed"], who="cross_val_score", where=where, failing_input=shown, fix=unchanged_fix(record))


def unchanged_fix(record):
    """The remedy for inputs changed in place, by what the change shows: the same rows in another order (a shuffle), or new values."""
    if record["changed"] and set(record["changed"]) <= set(record["reordered"]):
        return "shuffle an index array and index X and y with the folds' row numbers (X[train]), not the arrays themselves: they now hold their rows in another order"
    return "index X and y with the folds' row numbers (X[train]) and write into neither: scale, convert or relabel copies (inside the model, for X)"
