"""Checks for `naive-bayes`: Multinomial Naive Bayes over count features, with additive smoothing, in log space.

Expected values come from the reference, run here in float64; it equals sklearn's MultinomialNB(alpha)
to 1e-12 on every graded input (the self-check grades a wrapper of sklearn's class as an alternative).
Labels are compared exactly, as values; string labels cross the sandbox as a list of str (a NumPy
string array cannot). A failure names the known mistake whose log-probabilities the learner's equal.
"""

from functools import partial

import numpy as np

from mlprep.grading import (Call, Snapshot, assert_close, assert_keeps_precision, assert_shape, check, explained, fail, fail_if_changed, inputs_from_code, lists_of,
                            literal, log_softmax, logsumexp, matrix, mistake_hint, plural, scenario, shrink_on_failure, sized)

LOG_PROBA = "predict_log_proba"
UNDERFLOW_HINT = ("The same model passed on short documents just before; the probabilities of a 5,000-token document are around"
                  " exp(-19,000), which is 0 in float64: a product of"
                  " probabilities, or exp of the joint log-likelihood before normalising, gives 0, then 0 / 0 = NaN or log 0 = -inf."
                  " Stay in log space: sum x * log P(feature | class), and normalise by subtracting each row's log-sum-exp"
                  " (m + log(sum(exp(s - m))) with m the row's maximum).")
UNSEEN_HINT = ("A feature that never occurs in a class's training documents has count 0 there, so without smoothing log P(feature |"
               " class) = log 0 = -inf, one occurrence zeroes the class (and 0 * -inf = NaN where it does not occur): add alpha to every"
               " count before normalising.")


# -- scenarios (run in the sandbox) and how their inputs read as learner code --------------------------
def plain_labels(labels):
    """Labels as plain data: numbers as an array; strings (a NumPy string array cannot cross) as {"text": [...], "shape": [...]}."""
    try:
        arr = np.asarray(labels)
    except Exception:  # whatever it is, the judge says what came back
        return labels
    if arr.dtype.kind in "USO":
        return {"text": [item if isinstance(item, (str, int, float)) else repr(item) for item in arr.ravel().tolist()], "shape": list(arr.shape)}
    return arr


def constructor_code(alpha, how):
    return {"default": "MultinomialNB()", "positional": f"MultinomialNB({alpha!r})", "keyword": f"MultinomialNB(alpha={alpha!r})"}[how]


def make_model(module, alpha, how):
    if how == "default":
        return module.MultinomialNB()
    return module.MultinomialNB(alpha) if how == "positional" else module.MultinomialNB(alpha=alpha)


def _fit_repro(interface, X, y, X_test, alpha, how, method):
    test = "X" if X_test is None else "X_test"
    lines = [f"X = {literal(X)}", f"y = np.array({literal(y)})" if isinstance(y, list) else f"y = {literal(y)}"]
    lines += [] if X_test is None else [f"X_test = {literal(X_test)}"]
    return Call.code("\n".join(lines + [f"model = {constructor_code(alpha, how)}", "model.fit(X, y)", f"model.{method}({test})"]))


@scenario(repro=_fit_repro)
def fit_and_call(module, X, y, X_test, alpha, how, method):
    """Scenario: construct (alpha default, positional or keyword), fit on (X, y), then `method` on X_test (None: X)."""
    model = make_model(module, alpha, how)
    model.fit(X, np.asarray(y))
    result = getattr(model, method)(X if X_test is None else X_test)
    return plain_labels(result) if method == "predict" else result


def _built_repro(interface, code, alpha, how, method):
    return Call.code(f"{code}\nmodel = {constructor_code(alpha, how)}\nmodel.fit(X, y)\nmodel.{method}(X_test)")


@scenario(repro=_built_repro)
def fit_and_call_built(module, code, alpha, how, method):
    """Scenario: as fit_and_call, on X, y, X_test built here by `code` (large inputs read as the code that makes them)."""
    X, y, X_test = build(code)
    return fit_and_call(module, X, y, X_test, alpha, how, method)


@scenario(repro=lambda interface, X, y: Call.code(f"X = {literal(X)}\ny = {literal(y)}\nmodel = MultinomialNB()\n"
                                                  "model.fit(X, y) is model  # fit must return the model itself"))
def fit_returns(module, X, y):
    model = module.MultinomialNB()
    returned = model.fit(X, np.asarray(y))
    return {"is_self": returned is model, "returned": type(returned).__name__}


# How the inputs-unchanged scenarios read, after the lines that define X, y and X_test.
USE_THEN_COMPARE = ("before = X.copy(), y.copy(), X_test.copy()\nmodel = MultinomialNB()\nmodel.fit(X, y)\n"
                    "model.predict(X_test)\nmodel.predict_log_proba(X_test)\n"
                    "[np.array_equal(a, b) for a, b in zip((X, y, X_test), before)]  # all True: the inputs are unchanged")


@scenario(repro=lambda interface, X, y, X_test: Call.code(
    f"X = {literal(X)}\ny = np.array({literal(y)})\nX_test = {literal(X_test)}\n{USE_THEN_COMPARE}"))
def inputs_after_use(module, X, y, X_test):
    """Scenario: fit, predict and predict_log_proba, then which of the inputs they changed."""
    y = np.asarray(y)
    before = Snapshot(X=X, y=y, X_test=X_test)
    model = module.MultinomialNB()
    model.fit(X, y)
    model.predict(X_test)
    model.predict_log_proba(X_test)
    return before.changed()


@scenario(repro=lambda interface, code: Call.code(f"{code}\n{USE_THEN_COMPARE}"))
def inputs_after_use_built(module, code):
    """Scenario: as inputs_after_use, on X, y, X_test built here by `code`."""
    return inputs_after_use(module, *build(code))


def build(code):
    return inputs_from_code(code, "X", "y", "X_test")


def random_code(seed, N, V, K, N_test, labels=None, length=(5, 30), test_length=None, concentration=1.0):
    """Lines that build count data from K class-specific multinomials: y with every class, X (N, V), X_test (N_test, V)."""
    test_length = test_length or length
    names = f"np.array({labels!r})[labels]" if labels else "labels"
    return (f"rng = np.random.default_rng({seed})\ntheta = rng.dirichlet(np.full({V}, {concentration!r}), size={K})  # each class's feature distribution\n"
            f"labels = rng.permutation(np.arange({N}) % {K})\n"
            f"X = np.stack([rng.multinomial(n, theta[c]) for c, n in zip(labels, rng.integers({length[0]}, {length[1] + 1}, {N}))])\n"
            f"X_test = np.stack([rng.multinomial(n, theta[c]) for c, n in zip(rng.integers(0, {K}, {N_test}),"
            f" rng.integers({test_length[0]}, {test_length[1] + 1}, {N_test}))])\ny = {names}")


# -- expected values and known mistakes (judge side) ---------------------------------------------------
def reference_result(ctx, X, y, X_test, alpha, method):
    model = ctx.reference.MultinomialNB(alpha).fit(np.asarray(X), np.asarray(y))
    out = getattr(model, method)(np.asarray(X if X_test is None else X_test))
    return out.tolist() if method == "predict" else out


def mistaken_log_probas(X, y, X_test, alpha):
    """{what the code does wrong: the predict_log_proba it then gives}: the known mistakes that give finite values, and apart from them
    those of a log-sum-exp shifted by another maximum than each row's own (-inf where that underflows)."""
    X, X_test, y = np.asarray(X, dtype=np.float64), np.asarray(X_test, dtype=np.float64), np.asarray(y)
    classes, inverse = np.unique(y, return_inverse=True)
    counts = np.zeros((len(classes), X.shape[1]))
    np.add.at(counts, inverse, X)
    documents = np.bincount(inverse, minlength=len(classes)).astype(np.float64)

    def log_proba(alpha_used=alpha, denominator_alpha=True, prior=documents, normalise=True):
        smoothed = counts + alpha_used
        denominator = smoothed.sum(axis=1, keepdims=True) if denominator_alpha else counts.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            jll = X_test @ (np.log(smoothed) - np.log(denominator)).T + np.log(prior) - np.log(prior.sum())
        return log_softmax(jll, axis=1) if normalise else jll

    found = {
        "alpha is not used: these are the values for alpha = 1.0 (add alpha, not 1, to every count)": log_proba(alpha_used=1.0),
        ("the denominator leaves out alpha * V: P(feature | class) = (count + alpha) / (the class's total count + alpha * V),"
         " V the number of features, so that it sums to 1 over the features"): log_proba(denominator_alpha=False),
        ("the prior counts tokens (each class's total feature count) instead of documents: P(class) = the class's share of the"
         " training documents"): log_proba(prior=counts.sum(axis=1)),
        ("the rows are not normalised: these are the joint log-likelihoods log P(class) + sum x * log P(feature | class);"
         " subtract each row's log-sum-exp"): log_proba(normalise=False),
    }
    first_seen = [int(np.flatnonzero(classes == label)[0]) for label in dict.fromkeys(y.tolist())]
    if first_seen != sorted(first_seen):
        found[f"the columns are in the order the classes first appear in y ({', '.join(map(repr, classes[first_seen].tolist()))});"
              f" they must follow np.unique(y), sorted ({', '.join(map(repr, classes.tolist()))})"] = log_proba()[:, first_seen]
    jll = log_proba(normalise=False)
    shifted = {("the log-sum-exp is shifted by the largest score of the whole batch instead of each row's own maximum: for a row whose scores all lie"
                " far below it (a long document beside a short one) every exp(s - m) underflows to 0, log 0 = -inf, and the row comes out inf;"
                " subtract each row's own maximum"): jll.max(),
               ("the log-sum-exp is shifted by each class's maximum over the rows (axis 0) instead of each row's maximum over the classes (axis 1):"
                " take m = s.max(axis=1, keepdims=True)"): jll.max(axis=0, keepdims=True)}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return found, {text: jll - (top + np.log(np.sum(np.exp(jll - top), axis=1, keepdims=True))) for text, top in shifted.items()}


def likely_cause(got, want, X, y, X_test, alpha):
    """The known mistake whose log-probabilities the learner's match (and the right ones do not), or ""."""
    finite, shifted = mistaken_log_probas(X, y, X if X_test is None else X_test, alpha)
    match = dict(want=want, rtol=1e-9, atol=1e-9, apart=(1e-7, 1e-7), say="Your values match a known mistake: {}.")
    return mistake_hint(got, finite, finite_only=True, **match) or mistake_hint(got, shifted, **match)


# -- judging ---------------------------------------------------------------------------------------
def describe_input(X, y, X_test, alpha, how):
    X, y = np.asarray(X), np.asarray(y)
    kind = "string" if y.dtype.kind in "US" else y.dtype.name
    test = "" if X_test is None else f", {plural(np.shape(X_test)[0], 'test row')}"
    return f"{X.dtype.name} counts X of shape {X.shape}, {kind} labels {np.unique(y).tolist()}{test}, {constructor_code(alpha, how)}"


def judge_log_proba(got, want, X, y, X_test, alpha, scenario, hint=""):
    """predict_log_proba's result against the expected (N, K) float64 values, with the known mistake it matches as the hint."""
    assert_shape(got, want.shape, what="predict_log_proba's result", scenario=scenario)
    assert_keeps_precision(got, "float64", what="predict_log_proba's result", scenario=scenario)
    with explained(lambda: likely_cause(got, want, X, y, X_test, alpha)):
        assert_close(got, want, what="predict_log_proba's result", scenario=scenario, hint=hint)


def read_labels(got, n, scenario):
    """The learner's predicted labels as a list of Python values, or a clean fail."""
    if isinstance(got, dict) and "text" in got:
        values, shape = got["text"], tuple(got["shape"])
    elif isinstance(got, np.ndarray) and got.dtype.kind in "biuf":
        values, shape = got.ravel().tolist(), got.shape
    else:
        fail(f"predict's result ({scenario}): expected a 1-D array of {n} labels, got {type(got).__name__} {str(got)[:80]}")
    if shape != (n,):
        fail(f"predict's result ({scenario}): expected shape ({n},), one label per row, got shape {shape}", expected_shape=[n], got_shape=list(shape))
    return values


def same_label(got, want):
    if isinstance(want, str):
        return isinstance(got, str) and got == want
    return not isinstance(got, (str, bool)) and got == want


def judge_labels(got, want, classes, scenario, hint=""):
    """predict's labels, exactly, by value; the hint says when they are class positions rather than labels."""
    values = read_labels(got, len(want), scenario)
    wrong = [i for i, (g, w) in enumerate(zip(values, want)) if not same_label(g, w)]
    if not wrong:
        return
    i = wrong[0]
    positions = [classes.index(w) for w in want]
    if values == positions and positions != want:
        hint = (f"These are the positions of the classes in np.unique(y) (0 to {len(classes) - 1}), not the labels: return"
                f" classes[argmax], the labels {classes} themselves")
    elif isinstance(want[i], str) and not isinstance(values[i], str):
        hint = "The labels in y are strings here: predict must return them as they are"
    fail(f"predict's labels ({scenario}): {len(wrong)} of {len(want)} differ; first at row {i}: expected {want[i]!r}, got {values[i]!r}."
         + (f" {hint}." if hint else ""), what="predict's labels", first_index=str(i), expected=repr(want[i]), got=repr(values[i]))


def judge_case(sub, ctx, method, X=None, y=None, X_test=None, *, code=None, alpha=1.0, how="default", hint="", what=""):
    """One case judged by `method`, its inputs given (X_test None: X itself) or built by `code`; returns the learner's result."""
    if code is not None:
        X, y, X_test = build(code)
    scenario = describe_input(X, y, X_test, alpha, how) + what
    got = sub.run(fit_and_call, X, y, X_test, alpha, how, method) if code is None else sub.run(fit_and_call_built, code, alpha, how, method)
    want = reference_result(ctx, X, y, X_test, alpha, method)
    hint = hint(got) if callable(hint) else hint
    if method == "predict":
        judge_labels(got, want, np.unique(np.asarray(y)).tolist(), scenario, hint)
        return got
    with explained(lambda: "" if hint or code is not None or all_finite(got) else zero_count_control(sub, X, y, X_test, alpha, how)):
        judge_log_proba(got, want, X, y, X_test, alpha, scenario, hint)
    return got


def all_finite(values):
    try:
        return bool(np.all(np.isfinite(np.asarray(values, dtype=np.float64))))
    except (TypeError, ValueError):
        return True  # not numbers at all: the message says so, no hint


def zero_count_control(sub, X, y, X_test, alpha, how):
    """After inf/NaN log-probabilities: the same fit with every training count raised by 1 (no zero counts left). If that is
    finite, the zero counts are the cause."""
    X_plus = np.asarray(X) + 1
    got = sub.control(fit_and_call, X_plus, y, X if X_test is None else X_test, alpha, how, "predict_log_proba")
    if got is None or not all_finite(got):
        return ""
    return f"With every training count raised by 1 (no zero counts left), your predict_log_proba is finite. {UNSEEN_HINT}"


def tokens_text(length):
    return f"{length[0]:,}" if length[0] == length[1] else f"{length[0]:,}-{length[1]:,}"


def as_case(drawn):
    X, first, rest, alpha = drawn
    return X, np.array(first + rest, dtype=np.int64), alpha


def small_case(alphas, N, V):
    """Hypothesis cases (X, y, alpha): N documents, V features, counts 0-5, labels 0-2, classes 0 and 1 present."""
    from hypothesis import strategies as st

    first = st.sampled_from(([0, 1], [1, 0]))  # [1, 0]: the classes first seen out of sorted order
    return st.tuples(matrix(N, V, st.integers(0, 5), dtype="int64"), first, lists_of(st.integers(0, 2), N - 2), st.sampled_from(alphas)).map(as_case)


def built_from_random_data(failure):
    """Worth shrinking: a failure on random data (shown as the code that makes it, complete but long)."""
    return failure.failing_input is None or "default_rng" in str(failure.failing_input)


def shrinking(sub, ctx, alphas=(1.0,), how="default"):
    cases = lambda: sized((2, 6), (1, 4), then=partial(small_case, alphas))
    return shrink_on_failure(sub, cases, lambda case: judge_case(sub, ctx, LOG_PROBA, case[0], case[1], alpha=case[2], how=how), worth_shrinking=built_from_random_data)


# -- the cases (module level: the inputs-unchanged check runs them all) -------------------------------------
SMALL_X = np.array([[2, 1, 0, 0], [3, 0, 1, 0], [0, 1, 2, 4], [1, 0, 3, 2], [0, 2, 2, 1]])
SMALL_Y = np.array([0, 0, 1, 1, 1])
SMALL_TEST = np.array([[1, 1, 1, 1], [5, 0, 0, 0], [0, 0, 0, 3]])
LABELLED = (np.array([[4, 0, 1], [3, 1, 0], [0, 4, 1], [1, 3, 0], [0, 1, 5], [1, 0, 4]]), np.array([3, 3, 7, 7, 11, 11]),
            np.array([[5, 0, 0], [0, 6, 1], [0, 0, 7], [2, 2, 3]]))
EMPTY = (np.array([[2, 0, 1], [0, 3, 1], [1, 1, 0], [0, 2, 2]]), np.array([0, 1, 1, 1]), np.array([[0, 0, 0]]))  # priors 1/4, 3/4 (3/13, 10/13 from tokens)
# Feature 3 never occurs in class 1's documents; test row 0 is class 1's in every other respect.
UNSEEN = (np.array([[0, 2, 3, 1], [1, 3, 2, 2], [4, 0, 1, 0], [3, 1, 0, 0], [5, 0, 0, 0]]), np.array([0, 0, 1, 1, 1]), np.array([[6, 0, 0, 1], [6, 0, 0, 0]]))
# First seen: spam, ham, eggs; np.unique: eggs, ham, spam.
STRINGS = (np.array([[0, 1, 4], [3, 1, 0], [1, 4, 0], [1, 0, 2], [4, 0, 2], [0, 3, 1]]), ["spam", "ham", "eggs", "spam", "ham", "eggs"],
           np.array([[0, 0, 5], [5, 1, 0], [0, 5, 1], [1, 1, 1]]))
INPUTS = (np.array([[1, 0, 2], [0, 3, 1], [2, 1, 0], [0, 0, 4], [1, 2, 1]]), ["spam", "ham", "spam", "eggs", "ham"], np.array([[0, 1, 1], [3, 0, 0]]))
FLOAT_COUNTS = (INPUTS[0].astype(np.float64), INPUTS[1], INPUTS[2].astype(np.float64))  # np.asarray(X, dtype=np.float64) is X itself here
RANDOM = [random_code(seed, N, V, K, 25) for seed, (N, V, K) in enumerate([(12, 6, 3), (200, 40, 4)], start=11)]
ALPHA_RANDOM, LABELLED_RANDOM = random_code(21, 60, 20, 3, 15), random_code(31, 90, 30, 3, 40, labels=[3, 7, 11])
NORMALISED = {length: random_code(41, 60, 50, 3, 8, test_length=length, concentration=0.5) for length in ((10, 30), (5000, 5000))}
LONG = {length: random_code(51, 60, 50, 3, 12, test_length=length, concentration=0.5) for length in ((10, 30), (5000, 5000))}
MIXED = random_code(71, 60, 50, 3, 12, test_length=(10, 5000), concentration=0.5)
STRINGS_RANDOM = random_code(61, 80, 25, 3, 20, labels=["spam", "ham", "eggs"])


def shows_underflow(got, method):
    """Whether a result on long documents shows an underflow: inf or NaN log-probabilities, or every prediction the first class
    (the argmax of scores that all came out 0, -inf or NaN)."""
    if method == "predict":
        return isinstance(got, np.ndarray) and got.size > 0 and bool(np.all(got == 0))
    return not all_finite(got)


# -- checks -----------------------------------------------------------------------------------------
@check("fit returns the model itself (self)", edge="`fit` returns the model itself (`return self`), so `MultinomialNB().fit(X, y).predict(X)` works.")
def fit_returns_self(sub, ctx):
    got = sub.run(fit_returns, SMALL_X, SMALL_Y)
    if not (isinstance(got, dict) and got.get("is_self") is True):
        returned = got.get("returned") if isinstance(got, dict) else "?"
        fail(f"fit (counts X of shape {SMALL_X.shape}, labels [0, 1]): expected fit to return the model itself, so that"
             f" MultinomialNB().fit(X, y).predict(X) works; it returned {'None' if returned == 'NoneType' else 'a ' + str(returned)}."
             " End fit with `return self`.", what="fit's result", got=str(returned))


@check("predict_log_proba matches sklearn's MultinomialNB (alpha = 1.0, the default)")
def matches_sklearn(sub, ctx):
    with shrinking(sub, ctx):
        judge_case(sub, ctx, LOG_PROBA, SMALL_X, SMALL_Y)
        judge_case(sub, ctx, LOG_PROBA, SMALL_X, SMALL_Y, SMALL_TEST)
        for code in RANDOM:
            judge_case(sub, ctx, LOG_PROBA, code=code)


@check("alpha is used: 0.5, 0.01 and 2.5, positional or keyword")
def alpha_used(sub, ctx):
    with shrinking(sub, ctx, alphas=(0.5, 0.01, 2.5), how="keyword"):
        for alpha, how in ((0.5, "keyword"), (0.01, "positional"), (2.5, "keyword")):
            judge_case(sub, ctx, LOG_PROBA, SMALL_X, SMALL_Y, alpha=alpha, how=how)
        judge_case(sub, ctx, LOG_PROBA, code=ALPHA_RANDOM, alpha=0.25, how="positional")


@check("predict returns the most probable class's label (integer labels 3, 7, 11)")
def predict_labels(sub, ctx):
    judge_case(sub, ctx, "predict", *LABELLED)
    judge_case(sub, ctx, "predict", code=LABELLED_RANDOM)


@check("rows of predict_log_proba log-sum-exp to 0, for 10-30- and 5,000-token documents")
def rows_normalised(sub, ctx):
    for length, code in NORMALISED.items():
        X, y, X_test = build(code)
        scenario = f"{describe_input(X, y, X_test, 1.0, 'default')}, test documents of {tokens_text(length)} tokens"
        got = sub.run(fit_and_call_built, code, 1.0, "default", "predict_log_proba")
        assert_shape(got, (len(X_test), 3), what="predict_log_proba's result", scenario=scenario)
        row_lse = logsumexp(got, axis=1)
        hint = UNDERFLOW_HINT if length[0] == 5000 and not all_finite(row_lse) else ""  # the same model passed on short documents just before
        assert_close(row_lse, np.zeros(len(X_test)), what="the log-sum-exp of each row of predict_log_proba (log of the probabilities' sum)",
                     scenario=scenario, hint=hint)


@check("an empty document gets the class priors, log(documents of the class / N)")
def empty_document(sub, ctx):
    judge_case(sub, ctx, LOG_PROBA, *EMPTY, what=", an empty test document: expected the log priors, log(1/4) and log(3/4)"
               " (with no tokens the likelihood is 1, so the posterior is the prior: each class's share of the training documents)")


@check("a feature unseen in a class's training documents doesn't zero that class")
def unseen_feature(sub, ctx):
    X, y, X_test = UNSEEN
    scenario = describe_input(X, y, X_test, 1.0, "default") + ", feature 3 unseen in class 1, once in test row 0"
    got = sub.run(fit_and_call, X, y, X_test, 1.0, "default", "predict")
    want = reference_result(ctx, X, y, X_test, 1.0, "predict")
    values = read_labels(got, 2, scenario)
    zeroed = same_label(values[1], want[1]) and not same_label(values[0], want[0])  # only the row with the unseen feature is wrong
    judge_labels(got, want, [0, 1], scenario, hint=UNSEEN_HINT.rstrip(".") if zeroed else "")
    got = sub.run(fit_and_call, X, y, X_test, 1.0, "default", "predict_log_proba")
    shows_zero = all_finite(np.asarray(got)[1:]) if isinstance(got, np.ndarray) and got.shape == (2, 2) else False
    zeroed = shows_zero and not np.isfinite(got[0, 1]) and got.dtype.kind == "f"
    judge_log_proba(got, reference_result(ctx, X, y, X_test, 1.0, "predict_log_proba"), X, y, X_test, 1.0, scenario,
                    hint=f"Class 1's log-probability is {got[0, 1]!r} in row 0, the row with the unseen feature. {UNSEEN_HINT}" if zeroed else "")


@check("5,000-token documents (the product of probabilities underflows) still classify")
def long_documents(sub, ctx):
    for length, code in LONG.items():
        what = f", test documents of {tokens_text(length)} tokens"
        for method in ("predict", LOG_PROBA):  # the same model passed on short documents just before
            hint = (lambda got, method=method: UNDERFLOW_HINT if shows_underflow(got, method) else "") if length[0] == 5000 else ""
            judge_case(sub, ctx, method, code=code, what=what, hint=hint)


@check("documents of 10 to 5,000 tokens in one batch: each row is normalised by its own log-sum-exp")
def mixed_lengths(sub, ctx):
    judge_case(sub, ctx, LOG_PROBA, code=MIXED, what=", test documents of 10 to 5,000 tokens in one call (their scores lie thousands apart)")


@check("string labels: predict returns them, columns follow np.unique(y)")
def string_labels(sub, ctx):
    for method in ("predict", LOG_PROBA):
        judge_case(sub, ctx, method, *STRINGS)
    for method in ("predict", LOG_PROBA):
        judge_case(sub, ctx, method, code=STRINGS_RANDOM)


@check("fit, predict and predict_log_proba leave X, y and X_test unchanged")
def inputs_left_unchanged(sub, ctx):
    for X, y, X_test in [INPUTS, FLOAT_COUNTS, (SMALL_X, SMALL_Y, SMALL_X), (SMALL_X, SMALL_Y, SMALL_TEST), LABELLED, EMPTY, UNSEEN, STRINGS]:
        fail_if_changed(sub.run(inputs_after_use, X, y, X_test), who="fit, predict or predict_log_proba", where=describe_input(X, y, X_test, 1.0, "default"))
    for code in (*RANDOM, ALPHA_RANDOM, LABELLED_RANDOM, *NORMALISED.values(), *LONG.values(), MIXED, STRINGS_RANDOM):  # the long documents included
        fail_if_changed(sub.run(inputs_after_use_built, code), who="fit, predict or predict_log_proba", where=describe_input(*build(code), 1.0, "default"))
