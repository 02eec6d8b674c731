"""Checks for `ab-test`: Welch's t-test on revenue per user, a delta-method z-test on click-through (a ratio of
sums over randomised users), and the sample-ratio-mismatch p-value (chi-square goodness of fit, 1 df).

Expected values come from the prompt's formulas, here in the judge, never from the reference: means and sums
of squares with math.fsum, Student's t and the chi-square from the toolkit's own distribution functions
(mlprep.grading.experiments, no SciPy), compared at |got - expected| <= 1e-9 + 1e-6 * |expected| for each of
diff, ci_low, ci_high and p_value by name.

The statistical checks run seeded simulations in the sandbox (the data drawn there from a seed by the same
code the failing input shows, the learner's function applied to each run) and count here, in the judge, how
often a run rejects or misses: each count must lie in the band that holds a Binomial(runs, p) count with
probability 1 - 1e-8 (experiments.expect_rate). The designs are ones where the correct test's own rate is
within 0.2% of nominal, measured with SciPy's tests over 10^5 runs or more of the same designs (other seeds):
  - A/A at small n, 5 control users N(50, 10) against 50 treatment users N(50, 1): Welch's test rejects at
    alpha = 0.05 in 5.07% of runs (4e5 runs), a pooled variance in 56%, the normal in 12.2%, df = n_c + n_t - 2
    in 11.6%, a one-sided p in 10.1%;
  - heavy-tailed A/B runs, 500 control and 400 treatment users, 30% of each spending log-normal amounts
    (log-mean 3.0 and 3.1, log-sd 1): Welch's interval misses the true difference in 4.82% of runs (10^5 runs),
    one from the 1 - alpha quantile in 10.1%;
  - A/A click-through tests of 500 users per arm, views geometric(1/8) - 1 and each user's CTR Beta(0.4, 10):
    the delta method rejects in 4.98% (10^5 tests), independent impressions in 18.7%, the variance without its
    covariance term in 2.4%.
With those rates a correct solution fails a statistical check with probability below 6e-8 whatever the seed
(exact binomial tails: the bands are 87..223 of 3,000 and 49..160 of 2,000), and each mistake above but the
last misses outside its band with probability above 1 - 1e-6 (the last is caught by the values).

Hints follow the evidence: after a wrong result the judge recomputes what each known mistake gives on the same
input (pooled variance, one-sided p, the normal instead of Student's t, df = n_c + n_t - 2, ddof = 0, control
minus treatment, the 1 - alpha quantile; impressions as independent trials, the mean of users' CTRs, the
covariance term dropped, users without views dropped; a continuity correction, ratio as treatment's share,
2 degrees of freedom) and names the one the learner's results match, when exactly one does; after a
statistical check fails, it does the same on the first runs of the simulation, drawn again here.
"""

import math

import numpy as np

from mlprep.grading import (Call, as_float, check, chi_square_sf, expect_raises, expect_rate, expect_sequence, explained, fail, inputs_unchanged, literal,
                            mistake_hint, normal_quantile, normal_sf, raised_by, scenario, shrink_on_failure, student_t_quantile, student_t_sf)

FIELDS = ("diff", "ci_low", "ci_high", "p_value")
RTOL, ATOL = 1e-6, 1e-9  # of every value: a distribution written by hand to 1e-7 passes, a wrong formula does not
MATCH_RTOL, MATCH_ATOL = 1e-8, 1e-11  # "the values of a known mistake": far tighter than the check, looser than two t-distributions' rounding
HINT_RUNS = 30  # runs of a simulation recomputed for a hint
BAND_ERROR = 1e-8  # of the statistical checks' bands: see the docstring

# ---------------------------------------------------------------------------------------------
# The definitions and the known mistakes, judge side
# ---------------------------------------------------------------------------------------------


def revenue_definition(control, treatment, alpha=0.05, *, pooled=False, df_pooled=False, normal=False, one_sided=False, level_tail=None, ddof=1,
                       reverse=False):
    """(diff, ci_low, ci_high, p_value) of Welch's test, or of the mistake the keywords name."""
    c, t = np.asarray(control, dtype=np.float64), np.asarray(treatment, dtype=np.float64)
    n_c, n_t = len(c), len(t)
    m_c, m_t = math.fsum(c) / n_c, math.fsum(t) / n_t
    ss_c, ss_t = math.fsum((c - m_c) ** 2), math.fsum((t - m_t) ** 2)
    if pooled:
        se = math.sqrt((ss_c + ss_t) / (n_c + n_t - 2) * (1 / n_c + 1 / n_t))
        df = n_c + n_t - 2
    else:
        a, b = ss_c / (n_c - ddof) / n_c, ss_t / (n_t - ddof) / n_t
        se = math.sqrt(a + b)
        df = (a + b) ** 2 / (a * a / (n_c - 1) + b * b / (n_t - 1))
    if df_pooled:
        df = n_c + n_t - 2
    diff = m_c - m_t if reverse else m_t - m_c
    tail = alpha / 2 if level_tail is None else level_tail
    if normal:
        tail_p, q = normal_sf(abs(diff) / se), normal_quantile(1 - tail)
    else:
        tail_p, q = student_t_sf(abs(diff) / se, df), student_t_quantile(1 - tail, df)
    return diff, diff - q * se, diff + q * se, tail_p if one_sided else 2 * tail_p


def revenue_mistakes(control, treatment, alpha=0.05):
    """(what the code did wrong, a function giving the results it then gives) for revenue_test."""
    def given(**mistake):
        return lambda: revenue_definition(control, treatment, alpha, **mistake)

    return [
        ("the variances were pooled (Student's t-test, df = n_c + n_t - 2): Welch's test keeps each arm's own variance,"
         " se = sqrt(s_c**2 / n_c + s_t**2 / n_t), with the Welch-Satterthwaite df", given(pooled=True)),
        ("the p-value is one-sided, P(T > |t|): the test is two-sided, p_value = 2 * P(T > |t|)", given(one_sided=True)),
        ("the normal distribution was used (1.96, a z p-value): with few users the t distribution with the Welch-Satterthwaite df"
         " has heavier tails", given(normal=True)),
        ("Welch's standard error with df = n_c + n_t - 2: the df that goes with Welch's se is Welch-Satterthwaite's", given(df_pooled=True)),
        ("the variances divide by n (ddof = 0): the sample variances divide by n - 1 (ddof = 1)", given(ddof=0)),
        ("diff is control minus treatment: it is mean(treatment) - mean(control)", given(reverse=True)),
        ("the interval uses the 1 - alpha quantile: a two-sided (1 - alpha) interval uses the 1 - alpha/2 quantile", given(level_tail=alpha)),
    ]


def ctr_definition(clicks_c, views_c, clicks_t, views_t, alpha=0.05, *, bernoulli=False, user_mean=False, no_cov=False, drop_no_views=False,
                   reverse=False, level_tail=None):
    """(diff, ci_low, ci_high, p_value) of the delta-method z-test, or of the mistake the keywords name."""
    def arm(clicks, views):
        x, y = np.asarray(clicks, dtype=np.float64), np.asarray(views, dtype=np.float64)
        if drop_no_views:
            x, y = x[y > 0], y[y > 0]
        n = len(x)
        if user_mean:
            rates = x[y > 0] / y[y > 0]
            mean = math.fsum(rates) / len(rates)
            return mean, math.fsum((rates - mean) ** 2) / (len(rates) - 1) / len(rates)
        r = math.fsum(x) / math.fsum(y)
        mean_y = math.fsum(y) / n
        if bernoulli:
            return r, r * (1 - r) / math.fsum(y)
        if no_cov:
            mean_x = math.fsum(x) / n
            spread = (math.fsum((x - mean_x) ** 2) + r * r * math.fsum((y - mean_y) ** 2)) / (n - 1)
        else:
            spread = math.fsum((x - r * y) ** 2) / (n - 1)
        return r, spread / (n * mean_y ** 2)

    (r_c, var_c), (r_t, var_t) = arm(clicks_c, views_c), arm(clicks_t, views_t)
    diff = r_c - r_t if reverse else r_t - r_c
    se = math.sqrt(var_c + var_t)
    q = normal_quantile(1 - (alpha / 2 if level_tail is None else level_tail))
    return diff, diff - q * se, diff + q * se, 2 * normal_sf(abs(diff) / se)


def ctr_mistakes(clicks_c, views_c, clicks_t, views_t, alpha=0.05):
    def given(**mistake):
        return lambda: ctr_definition(clicks_c, views_c, clicks_t, views_t, alpha, **mistake)

    return [
        ("every impression was treated as an independent Bernoulli trial, var = R(1 - R) / sum(views): users were randomised, and one"
         " user's impressions go together, so the variance is computed over users (the delta method)", given(bernoulli=True)),
        ("the CTR is the mean of the users' own CTRs: it is the ratio of sums, sum(clicks) / sum(views), which weighs users by their views",
         given(user_mean=True)),
        ("the covariance term was dropped: the delta method's variance is (Var(x) - 2 R Cov(x, y) + R**2 Var(y)) / (n mean(y)**2),"
         " that is sum((x - R y)**2) / (n - 1) / (n mean(y)**2)", given(no_cov=True)),
        ("users without views were dropped: they are users of the arm and count in n", given(drop_no_views=True)),
        ("diff is control minus treatment: it is R_t - R_c", given(reverse=True)),
        ("the interval uses the 1 - alpha quantile: a two-sided (1 - alpha) interval uses the 1 - alpha/2 quantile", given(level_tail=alpha)),
    ]


def srm_definition(n_c, n_t, ratio=0.5, *, yates=False, swapped=False, df=1):
    share = 1 - ratio if swapped else ratio
    total = n_c + n_t
    expected_c, expected_t = total * share, total * (1 - share)
    shift = 0.5 if yates else 0.0
    statistic = max(abs(n_c - expected_c) - shift, 0.0) ** 2 / expected_c + max(abs(n_t - expected_t) - shift, 0.0) ** 2 / expected_t
    return chi_square_sf(statistic, df)


def srm_mistakes(n_c, n_t, ratio=0.5):
    return [
        ("Yates' continuity correction was applied, (|O - E| - 1/2)**2 / E: Pearson's statistic has none", lambda: srm_definition(n_c, n_t, ratio, yates=True)),
        ("ratio was taken as treatment's share: it is the share of users meant for control", lambda: srm_definition(n_c, n_t, ratio, swapped=True)),
        ("the chi-square has 2 degrees of freedom: two groups whose counts add up to a fixed total leave 1", lambda: srm_definition(n_c, n_t, ratio, df=2)),
    ]


# ---------------------------------------------------------------------------------------------
# Simulations: the data each run sees, drawn in the sandbox (and again here, for a hint) from a seed
# ---------------------------------------------------------------------------------------------
SMALL_AA = (2601, 3000)  # (seed, runs)
HEAVY_AB = (2602, 3000)
CTR_AA = (2603, 2000, 500)  # (seed, tests, users per arm)
HEAVY_TRUE_DIFF = 0.3 * (math.exp(3.1 + 0.5) - math.exp(3.0 + 0.5))  # E[revenue] = P(spend) * E[log-normal amount]


def small_aa_data(seed, runs):
    rng = np.random.default_rng(seed)
    control = rng.normal(50.0, 10.0, (runs, 5))
    treatment = rng.normal(50.0, 1.0, (runs, 50))
    return control, treatment


def heavy_ab_data(seed, runs):
    rng = np.random.default_rng(seed)
    control = np.where(rng.random((runs, 500)) < 0.3, rng.lognormal(3.0, 1.0, (runs, 500)), 0.0)
    treatment = np.where(rng.random((runs, 400)) < 0.3, rng.lognormal(3.1, 1.0, (runs, 400)), 0.0)
    return control, treatment


def ctr_aa_data(seed, tests, users):
    rng = np.random.default_rng(seed)
    views = rng.geometric(0.125, (2, tests, users)) - 1
    clicks = rng.binomial(views, rng.beta(0.4, 10.0, (2, tests, users)))
    return clicks, views


def _small_aa_code(interface, seed, runs, alpha):
    return Call.code(f"rng = np.random.default_rng({seed})\n"
                     f"control = rng.normal(50.0, 10.0, ({runs}, 5))\n"
                     f"treatment = rng.normal(50.0, 1.0, ({runs}, 50))\n"
                     f"results = [revenue_test(control[i], treatment[i], {alpha!r}) for i in range({runs})]\n"
                     f"sum(p < {alpha!r} for *_, p in results), sum(not lo <= 0 <= hi for _, lo, hi, _ in results)"
                     f"  # (false positives, intervals missing 0): each about {alpha * runs:g}")


def _heavy_ab_code(interface, seed, runs, alpha):
    return Call.code(f"rng = np.random.default_rng({seed})\n"
                     f"control = np.where(rng.random(({runs}, 500)) < 0.3, rng.lognormal(3.0, 1.0, ({runs}, 500)), 0.0)\n"
                     f"treatment = np.where(rng.random(({runs}, 400)) < 0.3, rng.lognormal(3.1, 1.0, ({runs}, 400)), 0.0)\n"
                     "true_diff = 0.3 * (np.exp(3.1 + 0.5) - np.exp(3.0 + 0.5))\n"
                     f"results = [revenue_test(control[i], treatment[i], {alpha!r}) for i in range({runs})]\n"
                     f"sum(not lo <= true_diff <= hi for _, lo, hi, _ in results)  # intervals missing the true difference: about {alpha * runs:g}")


def _ctr_aa_code(interface, seed, tests, users, alpha):
    return Call.code(f"rng = np.random.default_rng({seed})\n"
                     f"views = rng.geometric(0.125, (2, {tests}, {users})) - 1\n"
                     f"clicks = rng.binomial(views, rng.beta(0.4, 10.0, (2, {tests}, {users})))\n"
                     f"results = [ctr_test(clicks[0, i], views[0, i], clicks[1, i], views[1, i], {alpha!r}) for i in range({tests})]\n"
                     f"sum(p < {alpha!r} for *_, p in results)  # false positives: about {alpha * tests:g}")


@scenario(repro=_small_aa_code)
def small_aa_runs(module, seed, runs, alpha):
    control, treatment = small_aa_data(seed, runs)
    return [module.revenue_test(control[i], treatment[i], alpha) for i in range(runs)]


@scenario(repro=_heavy_ab_code)
def heavy_ab_runs(module, seed, runs, alpha):
    control, treatment = heavy_ab_data(seed, runs)
    return [module.revenue_test(control[i], treatment[i], alpha) for i in range(runs)]


@scenario(repro=_ctr_aa_code)
def ctr_aa_runs(module, seed, tests, users, alpha):
    clicks, views = ctr_aa_data(seed, tests, users)
    return [module.ctr_test(clicks[0, i], views[0, i], clicks[1, i], views[1, i], alpha) for i in range(tests)]


# ---------------------------------------------------------------------------------------------
# Judging results
# ---------------------------------------------------------------------------------------------
def read_result(got, fn, scenario):
    """The four floats (diff, ci_low, ci_high, p_value) of one result, or a clean fail."""
    items = expect_sequence(got, 4, what=f"{fn}(...)", scenario=scenario)
    return [as_float(item, what=f"{name} of {fn}(...)", scenario=scenario) for name, item in zip(FIELDS, items)]


def numbers(want, got):
    """Both at 8 significant digits, or at 17 where 8 print the same."""
    short = f"{want:.8g}", f"{got:.8g}"
    return short if short[0] != short[1] else (f"{want:.17g}", f"{got:.17g}")


def expect_result(got, want, *, fn, scenario, mistakes):
    """Each of the four results within the tolerance; a failure names every one that is not, and the known
    mistake the values show, if one does."""
    values = read_result(got, fn, scenario)
    wrong = [i for i, (g, w) in enumerate(zip(values, want)) if not abs(g - w) <= ATOL + RTOL * abs(w)]
    if not wrong:
        return values
    first = wrong[0]
    shown = "; ".join("{} expected {}, got {}".format(FIELDS[i], *numbers(want[i], values[i])) for i in wrong)
    right = [FIELDS[i] for i in range(4) if i not in wrong]
    message = (f"{fn}(...) ({scenario}): {shown}" + (f" ({', '.join(right[:-1]) + ' and ' if len(right) > 1 else ''}{right[-1]}"
                                                     f" {'are' if len(right) > 1 else 'is'} right)" if right else "")
               + f". Allowed |got - expected| <= {ATOL:g} + {RTOL:g} * |expected|.")
    hint = lambda: mistake_hint(values, mistakes, want=list(want), rtol=MATCH_RTOL, atol=MATCH_ATOL, say="Your results match a known mistake: {}.",
                                two="Your results match two known mistakes here: {}; or {}.")
    fail(message, explain=hint, what=f"{FIELDS[first]} of {fn}(...)", scenario=scenario, expected=repr(want[first]), got=repr(values[first]),
         first_index="", rtol=RTOL, atol=ATOL, wrong=[FIELDS[i] for i in wrong])


def judge_revenue(sub, control, treatment, alpha=None, *, scenario):
    control, treatment = np.asarray(control, dtype=np.float64), np.asarray(treatment, dtype=np.float64)
    got = sub.call("revenue_test", control, treatment) if alpha is None else sub.call("revenue_test", control, treatment, alpha)
    alpha = 0.05 if alpha is None else alpha
    expect_result(got, revenue_definition(control, treatment, alpha), fn="revenue_test", scenario=scenario,
                  mistakes=revenue_mistakes(control, treatment, alpha))


def judge_ctr(sub, case, alpha=None, *, scenario):
    case = tuple(np.asarray(a, dtype=np.int64) for a in case)
    got = sub.call("ctr_test", *case) if alpha is None else sub.call("ctr_test", *case, alpha)
    alpha = 0.05 if alpha is None else alpha
    expect_result(got, ctr_definition(*case, alpha), fn="ctr_test", scenario=scenario, mistakes=ctr_mistakes(*case, alpha))


def read_runs(results, fn, runs, scenario):
    """The learner's results of a simulation as a (runs, 4) float array of finite values, or a clean fail naming the run."""
    if not isinstance(results, list) or len(results) != runs:
        fail(f"{fn}() over {runs:,} simulated runs ({scenario}): the scenario's results came back as {type(results).__name__}", what="results",
             got="no list", first_index="")
    rows = np.empty((runs, 4))
    for i, got in enumerate(results):
        rows[i] = read_result(got, fn, f"{scenario}, run {i}")
        if not np.isfinite(rows[i]).all():
            name = FIELDS[int(np.flatnonzero(~np.isfinite(rows[i]))[0])]
            fail(f"{name} of {fn}(...) ({scenario}, run {i}): expected a finite number, got {rows[i][FIELDS.index(name)]}", what=name,
                 got="non-finite", first_index=f"run {i}")
    return rows


def simulation_hint(rows, runs_of, definition, mistakes):
    """The known mistake whose results the learner's equal on the first HINT_RUNS runs (drawn again here), when exactly one does; or ""."""
    def results_of(make):
        return [make(*args) for args in runs_of]

    want = results_of(lambda *args: definition(*args))
    got = [list(row) for row in rows[:len(runs_of)]]
    found = []
    for index, (text, _) in enumerate(mistakes(*runs_of[0])):
        value = results_of(lambda *args, index=index: mistakes(*args)[index][1]())
        if value != want and mistake_hint(got, [(text, value)], want=want, rtol=MATCH_RTOL, atol=MATCH_ATOL, say="{}"):
            found.append(text)
    if len(found) == 1:
        return f"On the first {len(runs_of)} runs your results match a known mistake: {found[0]}."
    return ""


# ---------------------------------------------------------------------------------------------
# Checks: revenue_test
# ---------------------------------------------------------------------------------------------
HAND_C = [12.0, 0.0, 30.5, 8.0, 0.0, 21.25]
HAND_T = [15.0, 40.0, 0.0, 22.5, 9.75, 31.0, 0.0, 18.0]
SPREAD = [0.0, 0.0, 240.0, 5.0, 0.0, 120.0, 3.5, 0.0, 60.0, 0.0, 0.0, 14.0, 0.0, 200.0, 0.0, 7.5]
NEAR_TEN = [10.0, 11.0, 9.5, 10.5, 10.0, 9.0]


@check("revenue_test by hand: diff = mean(treatment) - mean(control), Welch's interval and two-sided p", uses=("revenue_test",))
def revenue_by_hand(sub, ctx):
    judge_revenue(sub, HAND_C, HAND_T, scenario="6 control users against 8 treatment users, the default alpha")


@check("revenue_test keeps each arm's own variance (Welch), not a pooled one", uses=("revenue_test",))
def revenue_welch_not_pooled(sub, ctx):
    judge_revenue(sub, SPREAD, NEAR_TEN, 0.05, scenario="16 control users spread from 0 to 240 against 6 treatment users near 10")
    judge_revenue(sub, NEAR_TEN, SPREAD, 0.05, scenario="6 control users near 10 against 16 treatment users spread from 0 to 240")


@check("revenue_test on small samples uses Student's t with the Welch-Satterthwaite df", uses=("revenue_test",))
def revenue_small_samples(sub, ctx):
    judge_revenue(sub, [3.0, 7.0], [6.0, 12.0], 0.05, scenario="2 users against 2")
    judge_revenue(sub, [4.0, 9.5, 0.0], [12.0, 7.5, 15.0, 10.0], 0.05, scenario="3 users against 4")
    judge_revenue(sub, [20.0, 35.0, 5.0, 12.5, 30.0], [41.0, 38.0, 55.5], 0.05, scenario="5 users against 3")


@check("alpha sets revenue_test's interval: the 1 - alpha/2 quantile", uses=("revenue_test",))
def revenue_alpha(sub, ctx):
    for alpha in (0.01, 0.1, 0.2, 0.5):
        judge_revenue(sub, HAND_C, HAND_T, alpha, scenario=f"6 control users against 8 treatment users, alpha = {alpha}")


def zero_inflated(rng, n, spend, log_mean):
    return np.where(rng.random(n) < spend, np.round(rng.lognormal(log_mean, 1.2, n), 2), 0.0)


def small_revenue_cases():
    """Hypothesis cases: 2-6 users per arm with revenue in quarters from 0 to 10, alpha 0.05 or 0.2."""
    from hypothesis import strategies as st

    arm = st.lists(st.integers(0, 40), min_size=2, max_size=6).map(lambda v: np.array(v, dtype=np.float64) / 4)
    return st.tuples(arm, arm, st.sampled_from([0.05, 0.2]))


def verify_revenue_case(sub, case):
    control, treatment, alpha = case
    if np.ptp(control) == 0 and np.ptp(treatment) == 0:
        return  # both arms constant: not a case of the formulas (it raises)
    judge_revenue(sub, control, treatment, alpha, scenario=f"{len(control)} users against {len(treatment)}, alpha = {alpha}")


@check("revenue_test equals the formulas on random zero-inflated log-normal revenue", uses=("revenue_test",))
def revenue_random(sub, ctx):
    rng = ctx.rng(11)
    with shrink_on_failure(sub, small_revenue_cases, lambda case: verify_revenue_case(sub, case)):
        for n_c, n_t, alpha in ((2, 3, 0.05), (7, 5, 0.1), (40, 60, 0.05), (500, 400, 0.01), (5000, 3000, 0.05), (1200, 4000, 0.2)):
            control, treatment = zero_inflated(rng, n_c, 0.4, 3.0), zero_inflated(rng, n_t, 0.35, 3.2)
            if np.ptp(control) == 0:
                control[0] += 1.0
            judge_revenue(sub, control, treatment, alpha, scenario=f"zero-inflated log-normal revenue, {n_c} against {n_t} users, alpha = {alpha}")


@check("A/A at small n: p_value < alpha, and an interval that misses 0, each in about alpha of 3,000 runs", uses=("revenue_test",))
def revenue_aa_small(sub, ctx):
    seed, runs = SMALL_AA
    alpha = 0.05
    where = f"{runs:,} A/A runs of 5 control users N(50, 10) against 50 treatment users N(50, 1)"
    rows = read_runs(sub.run(small_aa_runs, seed, runs, alpha), "revenue_test", runs, where)

    def hint():
        control, treatment = small_aa_data(seed, runs)  # all the runs' draws: the first runs' data depend on how many there are
        return simulation_hint(rows, [(control[i], treatment[i], alpha) for i in range(HINT_RUNS)], revenue_definition, revenue_mistakes)

    with explained(hint):
        expect_rate(int(np.sum(rows[:, 3] < alpha)), runs, alpha, what="A/A runs with p_value < alpha = 0.05", scenario=where, error_rate=BAND_ERROR)
        expect_rate(int(np.sum((rows[:, 1] > 0) | (rows[:, 2] < 0))), runs, alpha, what="A/A runs whose 95% interval misses 0", scenario=where,
                    error_rate=BAND_ERROR)


@check("heavy-tailed A/B runs: revenue_test's interval holds the true difference in about 1 - alpha of 3,000 runs", uses=("revenue_test",))
def revenue_coverage(sub, ctx):
    seed, runs = HEAVY_AB
    alpha = 0.05
    where = (f"{runs:,} A/B runs of 500 control and 400 treatment users, 30% spending log-normal amounts (log-mean 3.0 and 3.1):"
             f" true difference {HEAVY_TRUE_DIFF:.6g}")
    rows = read_runs(sub.run(heavy_ab_runs, seed, runs, alpha), "revenue_test", runs, where)

    def hint():
        control, treatment = heavy_ab_data(seed, runs)
        return simulation_hint(rows, [(control[i], treatment[i], alpha) for i in range(HINT_RUNS)], revenue_definition, revenue_mistakes)

    with explained(hint):
        misses = int(np.sum((rows[:, 1] > HEAVY_TRUE_DIFF) | (rows[:, 2] < HEAVY_TRUE_DIFF)))
        expect_rate(misses, runs, alpha, what="95% intervals that miss the true difference", scenario=where, error_rate=BAND_ERROR)


# ---------------------------------------------------------------------------------------------
# Checks: ctr_test
# ---------------------------------------------------------------------------------------------
CTR_HAND = ([0, 1, 3, 0, 2, 0], [4, 10, 12, 1, 8, 3], [1, 0, 4, 2, 0, 5], [5, 2, 20, 6, 1, 15])


@check("ctr_test by hand: R = sum(clicks) / sum(views) per arm, the delta method, a two-sided z-test", uses=("ctr_test",))
def ctr_by_hand(sub, ctx):
    judge_ctr(sub, CTR_HAND, scenario="6 users per arm with 1 to 20 views, the default alpha")


@check("ctr_test's CTR is the ratio of sums, not the mean of the users' CTRs", uses=("ctr_test",))
def ctr_ratio_of_sums(sub, ctx):
    case = ([1, 1, 1, 2, 3, 1], [2, 2, 200, 3, 150, 1], [0, 1, 2, 1, 4, 2], [1, 4, 180, 2, 220, 3])
    judge_ctr(sub, case, 0.05, scenario="6 users per arm, two of them with 150 to 220 views, the others with 1 to 4")


@check("ctr_test's variance is over users (the delta method), not over independent impressions", uses=("ctr_test",))
def ctr_delta_method(sub, ctx):
    case = ([0, 12, 0, 9, 1, 0, 15, 0], [20, 30, 25, 18, 40, 22, 35, 30], [14, 0, 0, 10, 0, 2, 0, 11], [28, 24, 30, 16, 45, 20, 26, 25])
    judge_ctr(sub, case, 0.05, scenario="8 users per arm, half of them clicking often, half never")


@check("ctr_test counts the users without views in n", uses=("ctr_test",),
       edge="Users of the arm without any views (y = 0) are still users: they count in n.")
def ctr_users_without_views(sub, ctx):
    case = ([1, 0, 0, 3, 0, 2, 0], [4, 0, 0, 9, 0, 5, 6], [2, 0, 4, 0, 1, 0, 3], [3, 0, 10, 2, 6, 0, 7])
    judge_ctr(sub, case, 0.05, scenario="7 users per arm, 3 of them (control) and 2 (treatment) without views")


@check("alpha sets ctr_test's interval: the 1 - alpha/2 quantile of the normal", uses=("ctr_test",))
def ctr_alpha(sub, ctx):
    for alpha in (0.01, 0.2):
        judge_ctr(sub, CTR_HAND, alpha, scenario=f"6 users per arm, alpha = {alpha}")


def small_ctr_cases():
    """Hypothesis cases: 2-5 users per arm with 1 to 6 views and 0 to all of them clicked, alpha 0.05."""
    from hypothesis import strategies as st

    user = st.integers(1, 6).flatmap(lambda views: st.tuples(st.integers(0, views), st.just(views)))
    arm = st.lists(user, min_size=2, max_size=5).map(lambda users: (np.array([c for c, _ in users]), np.array([v for _, v in users])))
    return st.tuples(arm, arm).map(lambda arms: (arms[0][0], arms[0][1], arms[1][0], arms[1][1]))


def no_spread(clicks, views):
    """Every user of the arm at the arm's own CTR (clicks == R * views, in integers): the arm adds nothing to se."""
    return bool(np.all(clicks * views.sum() == clicks.sum() * views))


def verify_ctr_case(sub, case):
    if no_spread(case[0], case[1]) and no_spread(case[2], case[3]):
        return  # se = 0: not a case of the formulas (it raises)
    judge_ctr(sub, case, 0.05, scenario=f"{len(case[0])} users against {len(case[2])}")


@check("ctr_test equals the formulas on random users (2 to 5,000 per arm, 2 to 200 views each)", uses=("ctr_test",))
def ctr_random(sub, ctx):
    rng = ctx.rng(12)
    with shrink_on_failure(sub, small_ctr_cases, lambda case: verify_ctr_case(sub, case)):
        for n_c, n_t, alpha in ((2, 3, 0.05), (9, 6, 0.1), (50, 80, 0.05), (1000, 700, 0.01), (5000, 4000, 0.05)):
            arms = []
            for n in (n_c, n_t):
                views = np.minimum(1 + rng.geometric(0.08, n), 200)
                clicks = rng.binomial(views, rng.beta(0.5, 8.0, n))
                clicks[0] = max(clicks[0], 1)
                arms += [clicks, views]
            judge_ctr(sub, arms, alpha, scenario=f"{n_c} against {n_t} users with 2 to 200 views, per-user CTRs Beta(0.5, 8), alpha = {alpha}")


@check("A/A click-through tests: p_value < alpha in about alpha of 2,000 tests of users with their own CTRs and views", uses=("ctr_test",))
def ctr_aa_false_positives(sub, ctx):
    seed, tests, users = CTR_AA
    alpha = 0.05
    where = f"{tests:,} A/A tests of {users:,} users per arm, views geometric(1/8) - 1, each user's CTR Beta(0.4, 10)"
    rows = read_runs(sub.run(ctr_aa_runs, seed, tests, users, alpha), "ctr_test", tests, where)

    def hint():
        clicks, views = ctr_aa_data(seed, tests, users)
        return simulation_hint(rows, [(clicks[0, i], views[0, i], clicks[1, i], views[1, i], alpha) for i in range(HINT_RUNS)], ctr_definition,
                               ctr_mistakes)

    with explained(hint):
        expect_rate(int(np.sum(rows[:, 3] < alpha)), tests, alpha, what="A/A tests with p_value < alpha = 0.05", scenario=where, error_rate=BAND_ERROR)


# ---------------------------------------------------------------------------------------------
# Checks: srm_p_value
# ---------------------------------------------------------------------------------------------
def judge_srm(sub, n_c, n_t, ratio=None):
    got = sub.call("srm_p_value", n_c, n_t) if ratio is None else sub.call("srm_p_value", n_c, n_t, ratio)
    ratio = 0.5 if ratio is None else ratio
    where = f"n_c = {n_c:,}, n_t = {n_t:,}, ratio = {ratio}"
    value = as_float(got, what="srm_p_value(...)", scenario=where)
    want = srm_definition(n_c, n_t, ratio)
    if abs(value - want) <= ATOL + RTOL * abs(want):
        return
    hint = lambda: mistake_hint(value, srm_mistakes(n_c, n_t, ratio), want=want, rtol=MATCH_RTOL, atol=MATCH_ATOL,
                                say="Your p-value matches a known mistake: {}.")
    fail("srm_p_value(...) ({}): expected {}, got {}. Allowed |got - expected| <= {:g} + {:g} * |expected|.".format(where, *numbers(want, value), ATOL, RTOL),
         explain=hint, what="srm_p_value(...)", scenario=where, expected=repr(want), got=repr(value), first_index="", rtol=RTOL, atol=ATOL)


@check("srm_p_value is the chi-square goodness-of-fit p-value with 1 degree of freedom", uses=("srm_p_value",))
def srm_values(sub, ctx):
    for n_c, n_t in ((5000, 5000), (5100, 4900), (7, 13), (3, 0), (0, 12), (50_600, 49_400), (49_700, 48_300)):
        judge_srm(sub, n_c, n_t, None if (n_c, n_t) == (5000, 5000) else 0.5)


@check("srm_p_value's ratio is the share of users meant for control", uses=("srm_p_value",),
       edge="ratio is the share of users the design sends to control")
def srm_ratio(sub, ctx):
    for n_c, n_t, ratio in ((1000, 4000, 0.2), (1080, 3920, 0.2), (7000, 3000, 0.7), (260, 740, 0.25)):
        judge_srm(sub, n_c, n_t, ratio)


# ---------------------------------------------------------------------------------------------
# Checks: invalid input
# ---------------------------------------------------------------------------------------------
def expect_value_error(sub, fn, args, why):
    got = sub.run(raised_by, fn, *args)
    expect_raises(got, "ValueError", what=f"{fn}(...) with {why}", returned_hint="validate the input first and raise ValueError saying what is wrong",
                  shown=lambda result: literal(result))


@check("revenue_test raises ValueError: an arm of fewer than 2 users, alpha outside (0, 1), both arms constant", uses=("revenue_test",),
       edge="Raises ValueError when an arm has fewer than 2 users, when alpha is not in (0, 1), or when both arms are constant.")
def revenue_invalid(sub, ctx):
    good_c, good_t = np.array([1.0, 2.0, 4.0]), np.array([3.0, 5.0])
    for args, why in (((np.array([5.0]), good_t), "a control arm of 1 user"), ((good_c, np.zeros(0)), "an empty treatment arm"),
                      ((good_c, good_t, 0.0), "alpha = 0"), ((good_c, good_t, 1.0), "alpha = 1"), ((good_c, good_t, 1.5), "alpha = 1.5"),
                      ((np.array([2.0, 2.0, 2.0]), np.array([5.0, 5.0])), "both arms constant (se = 0)")):
        expect_value_error(sub, "revenue_test", args, why)


@check("ctr_test raises ValueError: clicks and views of different lengths, fewer than 2 users, no views, alpha outside (0, 1), se = 0",
       uses=("ctr_test",),
       edge="Raises ValueError when an arm's clicks and views differ in length, an arm has fewer than 2 users or no views, alpha is not in (0, 1),"
            " or the standard error is 0.")
def ctr_invalid(sub, ctx):
    c, v = np.array([1, 0, 2]), np.array([3, 2, 5])
    for args, why in (((c, v[:2], c, v), "control's views shorter than its clicks"), ((c, v, c[:1], v[:1]), "a treatment arm of 1 user"),
                      ((np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64), c, v), "a control arm without views"),
                      ((c, v, c, v, 0.0), "alpha = 0"), ((c, v, c, v, 1.0), "alpha = 1"),
                      ((np.zeros(3, dtype=np.int64), v, np.zeros(3, dtype=np.int64), v), "nobody clicking (se = 0)")):
        expect_value_error(sub, "ctr_test", args, why)


@check("srm_p_value raises ValueError: a negative count, no users, ratio outside (0, 1)", uses=("srm_p_value",),
       edge="Raises ValueError for a negative count, n_c + n_t == 0, or ratio not in (0, 1).")
def srm_invalid(sub, ctx):
    for args, why in (((-1, 10), "n_c = -1"), ((10, -3), "n_t = -3"), ((0, 0), "no users"), ((10, 10, 0.0), "ratio = 0"), ((10, 10, 1.0), "ratio = 1")):
        expect_value_error(sub, "srm_p_value", args, why)


@check("revenue_test and ctr_test leave their inputs unchanged", uses=("revenue_test", "ctr_test"))
def inputs_kept(sub, ctx):
    rng = ctx.rng(13)
    control, treatment = zero_inflated(rng, 12, 0.5, 3.0), zero_inflated(rng, 9, 0.5, 3.0)
    control[0] = 5.0
    inputs_unchanged(sub, "revenue_test", control, treatment, 0.05, scenario="12 control users against 9",
                     fix="compute new arrays (np.sort(x), x - x.mean()) instead of sorting or centring the caller's arrays in place")
    views = rng.integers(1, 30, (2, 10))
    clicks = rng.binomial(views, 0.2)
    inputs_unchanged(sub, "ctr_test", clicks[0], views[0], clicks[1], views[1], 0.05, scenario="10 users per arm",
                     fix="compute new arrays instead of writing into the caller's clicks and views")
