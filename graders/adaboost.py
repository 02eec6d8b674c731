"""Checks for `adaboost`: discrete AdaBoost with decision stumps, labels -1/+1, graded through its margins.

The stumps never leave the sandbox: `boost` fits, then asks the learner's own `margins` for every single
stump (whose sign is y_i h_t(x_i) and whose size must be alpha_t), for prefixes, a stepped slice, the
whole ensemble with y flipped, and new rows. From the alphas and those signs alone the judge rebuilds
the weights AdaBoost implies before each round, each stump's weighted error, the alpha it must get and
the loss after each round, in float64; so fit is judged by the checks on alpha and the loss, and
margins by the checks on margins. Alpha and the loss allow 1e-6 relative plus 1e-9 (weights kept by
renormalised multiplicative updates instead of exp(-M)).
"""

import numpy as np

from mlprep.grading import (Call, Snapshot, as_float, assert_close, assert_shape, check, fail, fail_if_changed, inputs_from_code, literal, mistake_hint, on_input,
                            outcome, scenario)

ALPHA_RTOL, ALPHA_ATOL = 1e-6, 1e-9
FALL = 1e-12  # the loss must fall by more than rounding: loss_t < (1 - FALL) loss_(t-1)


# -- the scenario (run in the sandbox) and its inputs as code ------------------------------------------
def build(code):
    return inputs_from_code(code, "X", "y", "X_test", "y_test")


def prefix_lengths(T):
    return sorted({t for t in (1, 2, T // 2, T) if 1 <= t <= T})


def shown(code, rounds, expr):
    return Call.code(f"{code}\nstumps, alphas = fit(X, y, {rounds})\n{expr}")


def _boost_repro(interface, code, rounds):
    return shown(code, rounds, "margins(X, y, stumps, alphas)")


@scenario(repro=_boost_repro)
def boost(module, code, rounds):
    """Scenario: fit on (X, y) built by `code`, then the learner's margins of every single stump, a few
    prefixes, a stepped slice, the whole ensemble with y flipped, and on new rows; plus which of X and y it all changed."""
    X, y, X_test, y_test = build(code)
    before = Snapshot(X=X, y=y)
    out = boosted(module, X, y, X_test, y_test, rounds)
    return out if "fit_returned" in out else {**out, "changed": before.changed()}


@scenario(repro=_boost_repro)
def changed_by_boosting(module, code, rounds):
    """Scenario: which of X and y boost's calls change, whatever they return or raise (the other checks judge that)."""
    X, y, X_test, y_test = build(code)
    before = Snapshot(X=X, y=y)
    outcome(lambda: boosted(module, X, y, X_test, y_test, rounds))
    return before.changed()


def boosted(module, X, y, X_test, y_test, rounds):
    fitted = module.fit(X, y, rounds)
    if not (isinstance(fitted, (tuple, list)) and len(fitted) == 2):
        return {"fit_returned": type(fitted).__name__ if not isinstance(fitted, (tuple, list)) else f"a sequence of {len(fitted)}"}
    stumps, alphas = fitted
    T, A = len(stumps), len(alphas)
    out = {"n_stumps": T, "n_alphas": A, "alphas": [alphas[t] for t in range(A)]}
    if T == A and T >= 1:
        out["single"] = [module.margins(X, y, stumps[t:t + 1], alphas[t:t + 1]) for t in range(T)]
        out["prefix"] = [[t, module.margins(X, y, stumps[:t], alphas[:t])] for t in prefix_lengths(T)]
        if T >= 2:
            out["odd"] = module.margins(X, y, stumps[1::2], alphas[1::2])
        out["flipped"] = module.margins(X, -y, stumps, alphas)
        out["test_single"] = [module.margins(X_test, y_test, stumps[t:t + 1], alphas[t:t + 1]) for t in range(T)]
        out["test_full"] = module.margins(X_test, y_test, stumps, alphas)
    return out


def data_code(X, y, X_test=None, y_test=None):
    """Lines that define a small hand-built case exactly."""
    X_test, y_test = (X, y) if X_test is None else (X_test, y_test)
    return f"X = {literal(X)}\ny = {literal(y)}\nX_test = {literal(X_test)}\ny_test = {literal(y_test)}"


def circle_code(seed, n, n_test):
    """Points uniform in [-1, 1]^2, labelled +1 inside the circle of radius sqrt(0.5): no single stump comes close."""
    return (f"rng = np.random.default_rng({seed})\nX = rng.uniform(-1, 1, ({n}, 2))\ny = np.where((X**2).sum(axis=1) < 0.5, 1.0, -1.0)\n"
            f"X_test = rng.uniform(-1, 1, ({n_test}, 2))\ny_test = np.where((X_test**2).sum(axis=1) < 0.5, 1.0, -1.0)")


def ties_code(seed, n):
    """Integer features 0..3 (many ties), int64 labels from a noisy sum of two of them."""
    return (f"rng = np.random.default_rng({seed})\nX = rng.integers(0, 4, ({n}, 3)).astype(np.float64)\n"
            f"y = np.where(X[:, 0] + X[:, 1] + rng.normal(0, 1, {n}) > 3, 1, -1)\nX_test, y_test = X[:10], y[:10]")


SMALL = data_code(np.arange(1.0, 7.0)[:, None], np.array([1, 1, -1, -1, 1, 1]))
CASES = [  # (what, code, rounds), small first
    ("6 rows, 1 feature, int64 labels", SMALL, 3),
    ("40 rows, 3 integer features (ties), int64 labels", ties_code(5, 40), 30),
    ("120 points in a circle, 2 features, float64 labels", circle_code(7, 120, 30), 40),
]


# -- the judge's side: what the returned alphas and single-stump margins imply -----------------------------
class Boosted:
    """One fit, read back from the scenario: alphas, y h_t(x) per stump, and what AdaBoost implies from them."""

    def __init__(self, sub, what, code, rounds):
        self.code, self.rounds, self.what = code, rounds, what
        self.X, self.y, self.X_test, self.y_test = build(code)
        self.y = self.y.astype(np.float64)
        self.got = got = sub.run(boost, code, rounds)
        self.n = len(self.y)
        scenario = f"{what}, rounds = {rounds}"
        self.scenario = scenario
        with on_input(shown(code, rounds, "len(stumps), len(alphas)")):
            if not isinstance(got, dict) or "fit_returned" in got:
                returned = got.get("fit_returned") if isinstance(got, dict) else type(got).__name__
                fail(f"fit ({scenario}): expected a tuple (stumps, alphas), got {returned}", what="fit's result")
            T, A = got["n_stumps"], got["n_alphas"]
            if T != A:
                fail(f"fit ({scenario}): returned {T} stumps and {A} alphas; expected one alpha per stump", what="number of alphas", expected=T, got=A)
            if not 1 <= T <= rounds:
                fail(f"fit ({scenario}): returned {T} stumps; expected between 1 and rounds = {rounds} (fewer only when training ends"
                     " early: a perfect stump, or no stump better than chance)", what="number of stumps", got=T)
        self.T = T
        self.alphas = np.array([as_float(a, what=f"alphas[{t}]", scenario=scenario) for t, a in enumerate(got["alphas"])])

    # -- alphas ---------------------------------------------------------------------------------
    def require_alphas(self):
        with on_input(shown(self.code, self.rounds, "alphas")):
            for t, a in enumerate(self.alphas):
                if not np.isfinite(a) or a <= 0:
                    fail(f"alphas[{t}] ({self.scenario}): got {a:.10g}; every alpha must be finite and > 0 (a stump better than chance,"
                         " err < 0.5, has alpha = 0.5 ln((1 - err) / err) > 0; a perfect one gets a finite, capped alpha)",
                         what=f"alphas[{t}]", got=float(a), explain=lambda t=t: self.alpha_hint(t))

    # -- single stumps ----------------------------------------------------------------------------
    def single(self, t, test=False):
        key, X_name, y_name, n = ("test_single", "X_test", "y_test", len(self.y_test)) if test else ("single", "X", "y", self.n)
        expr = f"margins({X_name}, {y_name}, stumps[{t}:{t + 1}], alphas[{t}:{t + 1}])"
        value = self.got[key][t]
        with on_input(shown(self.code, self.rounds, expr)):
            assert_shape(value, (n,), what=expr, scenario=self.scenario)
        return np.asarray(value, dtype=np.float64), expr

    def require_single_sizes(self, test=False):
        for t in range(self.T):
            value, expr = self.single(t, test)
            with on_input(shown(self.code, self.rounds, expr)):
                assert_close(np.abs(value), np.full(value.shape, abs(self.alphas[t])), what=f"|{expr}|, which must be alphas[{t}] at every row",
                             scenario=self.scenario, hint=single_hint(value, self.alphas[t]))

    def signs(self):
        """y_i h_t(x_i), (T, n), from the single-stump margins' signs; a clean fail where one is 0 or not finite."""
        out = np.empty((self.T, self.n))
        for t in range(self.T):
            value, expr = self.single(t)
            bad = ~np.isfinite(value) | (value == 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                fail(f"{expr} ({self.scenario}): got {value[i]:.10g} at row {i}; a stump's margin is y * alpha * h(x) with h = -1 or +1, so it"
                     " is never 0. " + single_hint(value, self.alphas[t]), failing_input=shown(self.code, self.rounds, expr), what=expr, index=i)
            out[t] = np.sign(value) * np.sign(self.alphas[t])
        return out

    # -- what AdaBoost implies ----------------------------------------------------------------------
    def implied(self):
        """(M, err): M[t] the margins of stumps[:t] (M[0] = 0), err[t] the weighted error of stumps[t] under w proportional to exp(-M[t])."""
        yh = self.signs()
        M = np.vstack([np.zeros(self.n), np.cumsum(self.alphas[:, None] * yh, axis=0)])
        err = np.array([weighted_error(M[t], yh[t]) for t in range(self.T)])
        self.yh = yh
        return M, err

    def alpha_hint(self, t):
        """The known mistake alphas[t] matches, computed from the same stumps."""
        try:
            M, err = self.implied()
        except Exception:  # the margins themselves are broken: no evidence about alpha
            return ""
        a = self.alphas[t]
        want = alpha_for(err[t])
        unnormalised = np.exp(-M[t])[self.yh[t] < 0].sum() / self.n  # the weights (1/n) prod exp(-alpha y h), never renormalised
        return mistake_hint(a, {
            "alpha is ln((1 - err) / err), without the 0.5": 2 * want,
            "alpha has the wrong sign: it is 0.5 ln((1 - err) / err), positive for err < 0.5": -want,
            ("err comes from weights that were never renormalised: after round 1 they no longer sum to 1, so the sum of the"
             " misclassified weights is not the error; divide by their sum (or renormalise after each update)"): alpha_for(unnormalised),
            ("the weights grow on the rows the stump got right: the update is w_i *= exp(-alpha y_i h(x_i)), which raises the"
             " misclassified rows"): alpha_for(weighted_error(-M[t], self.yh[t])),
        }, want=want, apart=(ALPHA_RTOL, ALPHA_ATOL), finite_only=True, say="Your alpha matches a known mistake: {}.")


def weighted_error(M, yh):
    """The weight of the misclassified rows (yh < 0) under w proportional to exp(-M), normalised (shifted: no overflow)."""
    w = np.exp(-(M - M.min()))
    return float(w[yh < 0].sum() / w.sum())


def alpha_for(err):
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(0.5 * np.log((1 - err) / err))


def single_hint(value, alpha):
    """What a wrong single-stump margin shows: +-1 per row (normalised by alpha), or 0 where h is a 0/1 class."""
    magnitude = np.abs(value[np.isfinite(value)])
    if magnitude.size and np.all(np.isclose(magnitude, 1.0)) and not np.isclose(abs(alpha), 1.0):
        return ("Every row's margin is +-1 instead of +-alpha: margins are y * sum(alpha_t h_t(x)), unnormalised; do not divide"
                " by the sum of the alphas.")
    if magnitude.size and np.any(magnitude == 0) and np.all(np.isclose(magnitude[magnitude > 0], abs(alpha))):
        return ("Some rows get 0 and the others +-alpha: h(x) looks like a 0/1 class. A stump's output is -1 or +1, with labels -1/+1;"
                " then y * h is -1 exactly when the stump is wrong.")
    return ""


# -- checks -----------------------------------------------------------------------------------------
@check("fit returns 1 to rounds stumps with one finite, positive alpha each")
def stumps_and_alphas(sub, ctx):
    for what, code, rounds in [("6 rows, 1 feature, int64 labels", SMALL, 1), *CASES]:
        Boosted(sub, what, code, rounds).require_alphas()


@check("margins: each stump adds y * alpha_t * h_t(x), h = +-1, to every row, training rows and new ones")
def single_stump_margins(sub, ctx):
    for what, code, rounds in CASES:
        fitted = Boosted(sub, what, code, rounds)
        fitted.require_single_sizes()
        fitted.require_single_sizes(test=True)


@check("margins of any slice: prefixes, stumps[1::2], the whole ensemble, y flipped, new rows")
def slices(sub, ctx):
    for what, code, rounds in CASES:
        fitted = Boosted(sub, what, code, rounds)
        fitted.require_alphas()
        M, _ = fitted.implied()
        contributions = fitted.alphas[:, None] * fitted.yh
        test = np.sum([fitted.single(t, test=True)[0] for t in range(fitted.T)], axis=0)
        expected = [(f"margins(X, y, stumps[:{t}], alphas[:{t}])", got, M[t], fitted.alphas[:t].sum()) for t, got in fitted.got["prefix"]]
        if fitted.T >= 2:
            expected.append(("margins(X, y, stumps[1::2], alphas[1::2])", fitted.got["odd"], contributions[1::2].sum(axis=0), fitted.alphas[1::2].sum()))
        expected.append(("margins(X, -y, stumps, alphas)", fitted.got["flipped"], -M[-1], fitted.alphas.sum()))
        expected.append(("margins(X_test, y_test, stumps, alphas)", fitted.got["test_full"], test, fitted.alphas.sum()))
        for expr, got, want, alpha_sum in expected:
            with on_input(shown(code, rounds, expr)):
                assert_close(got, want, what=expr, scenario=fitted.scenario, hint=normalised_hint(got, want, alpha_sum))


def normalised_hint(got, want, alpha_sum):
    return mistake_hint(got, {"These are the margins divided by the sum of the slice's alphas: margins are unnormalised, y * sum(alpha_t h_t(x)).": want / alpha_sum},
                        say="{}", is_right=lambda value: bool(np.isclose(alpha_sum, 1.0)))


@check("alpha_t = 0.5 ln((1 - err_t) / err_t), err_t the stump's error under the renormalised weights")
def alpha_matches_error(sub, ctx):
    for what, code, rounds in CASES:
        fitted = Boosted(sub, what, code, rounds)
        fitted.require_alphas()
        M, err = fitted.implied()
        for t in range(fitted.T):
            expr = f"alphas[{t}]"
            weights = f"w proportional to exp(-margins(X, y, stumps[:{t}], alphas[:{t}]))" if t else "uniform w = 1/n"
            with on_input(shown(code, rounds, expr)):
                if err[t] == 0:
                    continue  # a perfect stump: any finite positive alpha
                if err[t] >= 0.5:
                    fail(f"{expr} ({fitted.scenario}): stump {t} misclassifies {err[t]:.6g} of the weight under {weights}, the weights"
                         " AdaBoost has after the stumps before it: no better than chance. Either the weights were not updated as"
                         " w_i *= exp(-alpha y_i h(x_i)) (renormalised), or the stump was not chosen by its weighted error under them.",
                         what=f"err_{t}", got=float(err[t]), explain=lambda t=t, fitted=fitted: fitted.alpha_hint(t))
                want = alpha_for(err[t])
                if not np.isclose(fitted.alphas[t], want, rtol=ALPHA_RTOL, atol=ALPHA_ATOL):
                    fail(f"{expr} ({fitted.scenario}): expected 0.5 ln((1 - err) / err) = {want:.10g}, got {fitted.alphas[t]:.10g}; stump {t}"
                         f" misclassifies a weighted error err = {err[t]:.10g} under {weights} (the alpha you returned corresponds"
                         f" to err = {1 / (1 + np.exp(2 * fitted.alphas[t])):.10g}).", what=expr, expected=want, got=float(fitted.alphas[t]),
                         explain=lambda t=t, fitted=fitted: fitted.alpha_hint(t))


@check("the exponential loss falls every round and equals the product of 2 sqrt(err_t (1 - err_t))")
def loss_falls(sub, ctx):
    for what, code, rounds in CASES:
        fitted = Boosted(sub, what, code, rounds)
        fitted.require_alphas()
        M, err = fitted.implied()
        loss = np.exp(-M).mean(axis=1)
        product = 1.0
        for t in range(fitted.T):
            expr = f"np.mean(np.exp(-margins(X, y, stumps[:{t + 1}], alphas[:{t + 1}])))"
            with on_input(shown(code, rounds, f"{expr}  # the loss after stumps[:{t + 1}]")):
                if not loss[t + 1] < (1 - FALL) * loss[t]:
                    before = f"after stumps[:{t}] {loss[t]:.10g}" if t else "before any stump 1"
                    fail(f"exponential loss mean(exp(-margins)) ({fitted.scenario}): after stumps[:{t + 1}] it is {loss[t + 1]:.10g}, {before};"
                         f" it must fall every round. Stump {t} has weighted error err = {err[t]:.6g} under the weights before it, and"
                         f" alphas[{t}] = {fitted.alphas[t]:.6g}; alpha = 0.5 ln((1 - err) / err) multiplies the loss by 2 sqrt(err (1 - err)),"
                         " which is below 1 for every err < 0.5.", what="loss", index=t, got=float(loss[t + 1]), expected_below=float(loss[t]))
                if err[t] == 0:
                    break  # a perfect stump: its capped alpha makes the loss whatever it makes it; training may stop here
                product *= 2 * np.sqrt(err[t] * (1 - err[t]))
                assert_close(loss[t + 1], product, what=f"the loss after stumps[:{t + 1}] against the product of 2 sqrt(err_s (1 - err_s)) for s <= {t}",
                             scenario=fitted.scenario, rtol=ALPHA_RTOL, atol=ALPHA_ATOL)


PERFECT = [  # (what, X, y): one stump classifies every row
    ("4 rows, 1 feature, separable at 1.5", np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([-1, -1, 1, 1])),
    ("4 rows, separable on feature 1 only", np.array([[3.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 3.0]]), np.array([-1.0, -1.0, 1.0, 1.0])),
]


@check("a perfect stump gets a finite alpha, without dividing by zero (np.errstate raises)",
       edge="A perfect stump (err_t = 0) must not divide by zero: give it any finite alpha > 0 (...) and stop training, or cap err and continue.")
def perfect_stump(sub, ctx):
    for what, X, y in PERFECT:
        code = data_code(X, y)
        with sub.errstate(divide="raise", invalid="raise"):
            fitted = Boosted(sub, what, code, 5)
        fitted.require_alphas()
        M, err = fitted.implied()
        with on_input(shown(code, 5, "margins(X, y, stumps, alphas)")):
            if err[0] != 0:
                fail(f"stump 0 ({fitted.scenario}): misclassifies weight {err[0]:.6g}, but one stump classifies every row here", what="err_0")
            if not (M[-1] > 0).all():
                fail(f"margins ({fitted.scenario}): row {int(np.argmin(M[-1] > 0))} has margin {M[-1].min():.6g}; every row is classified by"
                     " the first stump, so every margin must be positive", what="margins")


CIRCLE = ("100 points in a circle, 2 features", circle_code(11, 100, 10), 200)


@check("training error after 200 rounds is below that after one (100 points in a circle)")
def boosting_helps(sub, ctx):
    what, code, rounds = CIRCLE
    fitted = Boosted(sub, what, code, rounds)
    prefix = dict((t, np.asarray(m, dtype=np.float64)) for t, m in fitted.got["prefix"])
    first, last = (float(np.mean(prefix[t] <= 0)) for t in (1, fitted.T))
    if not last < first:
        hint = ""
        signs = fitted.signs()
        if fitted.T > 1 and all(np.array_equal(signs[0], s) for s in signs[1:]):
            hint = (f" All {fitted.T} stumps make the same predictions as the first, so the vote never changes: after each round the rows"
                    " the stump got wrong must weigh more (w_i *= exp(-alpha y_i h(x_i)), renormalised), and the next stump is the one"
                    " of least weighted error under those weights.")
        fail(f"training error ({fitted.scenario}): {last:.3f} of the rows have margin <= 0 after all {fitted.T} stumps, {first:.3f} after"
             f" the first alone; boosting must reduce it.{hint}", failing_input=shown(code, rounds, "np.mean(margins(X, y, stumps, alphas) <= 0),"
                                                                                     " np.mean(margins(X, y, stumps[:1], alphas[:1]) <= 0)"),
             what="training error", got=last, first=first)


@check("inputs unchanged (fit and margins)")
def inputs_kept(sub, ctx):
    for what, code, rounds in CASES[:2]:
        got = sub.run(boost, code, rounds)
        if not isinstance(got, dict) or "changed" not in got:
            fail(f"fit ({what}): expected a tuple (stumps, alphas), got {got.get('fit_returned') if isinstance(got, dict) else type(got).__name__}",
                 what="fit's result")
        fail_if_changed(got["changed"], who="fit or margins", where=what, failing_input=shown(code, rounds, f"{', '.join(got['changed'])}  # changed"))
    for what, code, rounds in [CASES[2], *((what, data_code(X, y), 5) for what, X, y in PERFECT)]:  # the other checks' inputs (boosting_helps' circle: CASES[2]'s kind)
        changed = sub.run(changed_by_boosting, code, rounds)
        fail_if_changed(changed, who="fit or margins", where=what, failing_input=shown(code, rounds, f"{', '.join(changed)}  # changed"))
