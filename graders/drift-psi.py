"""Checks for `drift-psi`: the population stability index on bins cut at the training quantiles.

The quantile method is free, so the judge accepts a few values: the PSIs of np.quantile's 13 methods (at the
levels k / bins as code usually computes them) with a value on an edge in either bin, within the samples'
dtype tolerance. The training samples hold a multiple of `bins` distinct values, so the methods differ by
at most one training row per edge; hand-built production values stay out of the gaps around the edges.
A wrong value names the known mistake it equals, when one (or two) do.
"""

import math

import numpy as np

from mlprep.grading import as_float, assert_keeps_precision, check, check_each, fail, grid, inputs_unchanged, mistake_hint, shrink_on_failure, sized, tolerance_for

FLOOR = 1e-4
METHODS = ("linear", "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf", "hazen", "weibull",
           "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint", "nearest")


# -- the definition, judge side ---------------------------------------------------------------------
def f64(x):
    return np.asarray(x, dtype=np.float64)


def counts(edges, values, side="right"):
    """Rows of `values` per bin; the outer bins open-ended. side="right": a value on an edge goes up."""
    return np.bincount(np.searchsorted(edges, f64(values), side=side), minlength=len(edges) + 1)


def psi_of(ct, cp, n_train, n_prod, floor=lambda share: np.maximum(share, FLOOR), log=np.log):
    a, b = floor(ct / n_train), floor(cp / n_prod)
    return math.fsum((b - a) * log(b / a))


def interior_quantiles(bins):
    return np.arange(1, bins) / bins


def quantile_levels(bins):
    """The levels 1/bins, ..., (bins - 1)/bins as code usually computes them: they differ in the last bit (3 / 10 is not
    np.linspace(0, 1, 11)[3]), which moves the edge of the order-statistic methods by one row where n * level is an integer."""
    k = np.arange(1, bins)
    levels = (k / bins, np.linspace(0, 1, bins + 1)[1:-1], np.linspace(0, 100, bins + 1)[1:-1] / 100, k * (1 / bins),
              np.cumsum(np.full(bins - 1, 1 / bins)))
    return list({q.tobytes(): q for q in levels}.values())


def admissible(train, prod, bins):
    """The PSIs that the quantile methods, the usual ways of computing the levels, and both edge conventions give:
    default method first, each value once. Counts come from binary searches of the edges in the sorted samples."""
    train, prod = np.sort(f64(train)), np.sort(f64(prod))
    edge_sets = {}
    for method in METHODS:
        for levels in quantile_levels(bins):
            edges = np.quantile(train, levels, method=method)
            edge_sets.setdefault(edges.tobytes(), edges)
    found = []
    for edges in edge_sets.values():
        for below in ("left", "right"):  # values < edge, or <= edge, lie below it: a value on the edge goes up, or down
            ct, cp = (np.diff(np.r_[0, np.searchsorted(x, edges, side=below), x.size]) for x in (train, prod))
            value = psi_of(ct, cp, train.size, prod.size)
            if not any(math.isclose(value, v, rel_tol=1e-12, abs_tol=1e-15) for v in found):
                found.append(value)
    return found


def empty_bins(train, prod, bins):
    edges = np.quantile(f64(train), interior_quantiles(bins))
    return int((counts(edges, prod) == 0).sum() + (counts(edges, train) == 0).sum())


def mistakes(train, prod, bins):
    """{what the code does wrong: the PSI it then gives}, with np.quantile's default method."""
    train, prod = f64(train), f64(prod)
    nt, n_p = train.size, prod.size

    def on(edges, **kw):
        return psi_of(counts(edges, train), counts(edges, prod), nt, n_p, **kw)

    edges = np.quantile(train, interior_quantiles(bins))
    ct, cp = counts(edges, train), counts(edges, prod)
    a, b = np.maximum(ct / nt, FLOOR), np.maximum(cp / n_p, FLOOR)
    right = psi_of(ct, cp, nt, n_p)
    closed = np.quantile(train, np.linspace(0, 1, bins + 1))
    dropped_t, dropped_p = np.histogram(train, closed)[0], np.histogram(prod, closed)[0]
    return {
        "the bins were cut at the production sample's quantiles: they must come from the training sample, the reference distribution":
            on(np.quantile(prod, interior_quantiles(bins))),
        "the bins have equal widths between the training min and max: PSI's bins are cut at the training quantiles (equal shares of training rows)":
            on(np.linspace(train.min(), train.max(), bins + 1)[1:-1]),
        ("the outer bins end at the training min and max (np.histogram on edges from min to max), so production values outside the training"
         " range were dropped: the first and last bins are open-ended"): psi_of(dropped_t, dropped_p, nt, n_p),
        ("the outer bins end at the training min and max and the shares were taken over the rows inside: the first and last bins are"
         " open-ended, so every production value counts"): psi_of(dropped_t, dropped_p, max(dropped_t.sum(), 1), max(dropped_p.sum(), 1)),
        "this is in log10: PSI uses the natural log": right / math.log(10),
        "this is KL(prod || train) = sum p_prod ln(p_prod / p_train) alone: PSI is sum (p_prod - p_train) ln(p_prod / p_train)":
            math.fsum(b * np.log(b / a)),
        "this is KL(train || prod) = sum p_train ln(p_train / p_prod) alone: PSI is sum (p_prod - p_train) ln(p_prod / p_train)":
            math.fsum(a * np.log(a / b)),
        "this is -PSI: the difference is p_prod - p_train, with the same order as the ratio p_prod / p_train": -right,
        "1e-4 was added to every share (count / n + 1e-4): the shares are floored, max(count / n, 1e-4), and only empty or tiny bins change":
            psi_of(ct, cp, nt, n_p, floor=lambda share: share + FLOOR),
        "the floored shares were renormalised to sum to 1: the shares are max(count / n, 1e-4), as they are":
            psi_of(ct, cp, nt, n_p, floor=lambda share: np.maximum(share, FLOOR) / np.maximum(share, FLOOR).sum()),
        f"this has bins - 1 = {bins - 1} bins (np.linspace(0, 1, bins) has only bins - 2 interior points): bins - 1 interior edges at"
        f" 1/bins, ..., (bins - 1)/bins give {bins} bins": on(np.quantile(train, np.linspace(0, 1, bins)[1:-1])),
        f"this has bins + 1 = {bins + 1} bins: take the bins - 1 interior quantiles 1/bins, ..., (bins - 1)/bins as edges, not bins":
            on(np.quantile(train, np.linspace(0, 1, bins + 2)[1:-1])),
    }


def likely_cause(value, train, prod, bins):
    return mistake_hint(value, mistakes(train, prod, bins), wants=admissible(train, prod, bins), apart=(1e-6, 1e-12), say="Your value matches a known mistake: {}.",
                        two="Your value matches two known mistakes here: {}; or {}.")


# -- judging one call -------------------------------------------------------------------------------
def describe(train, prod, bins):
    train, prod = np.asarray(train), np.asarray(prod)
    def values(x, whose):
        return f"{x.size} {x.dtype.name} {whose} value{'s' if x.size != 1 else ''}"

    return f"{values(train, 'training')}, {values(prod, 'production')}, bins = {bins}"


def judge(sub, train, prod, bins=10, scenario="", pass_bins=True):
    """The learner's psi(train, prod, bins) is one of the admissible values; returns it."""
    got = sub.call("psi", train, prod, bins=bins) if pass_bins else sub.call("psi", train, prod)
    what = "psi(train, prod" + (", bins)" if pass_bins else ")")
    where = describe(train, prod, bins) + (f"; {scenario}" if scenario else "")
    value = as_float(got, what=what, scenario=where)
    assert_keeps_precision(got, np.asarray(train).dtype if np.asarray(train).dtype.kind == "f" else "float64", what=what, scenario=where)
    want = admissible(train, prod, bins)
    rtol, atol = tolerance_for("float32" if np.asarray(train).dtype == np.float32 else "float64")  # float32 samples may be computed in float32
    if any(abs(value - w) <= atol + rtol * abs(w) for w in want):
        return value
    others = f" (other quantile methods give {', '.join(f'{w:.10g}' for w in want[1:4])}: accepted too)" if len(want) > 1 else ""
    if not math.isfinite(value) and empty_bins(train, prod, bins):
        explain = lambda: ("A bin is empty here, so its share is 0 and ln(0) or x / 0 appears: floor every share at 1e-4,"
                           " share = max(count / n, 1e-4), before taking the log.")
    else:
        explain = (lambda: likely_cause(value, train, prod, bins)) if math.isfinite(value) else None
    fail(f"{what} ({where}): expected {want[0]:.10g}{others}, got {value!r}; allowed |got - expected| <= {atol:g} + {rtol:g} * |expected|.",
         explain=explain, what=what, scenario=where, first_index="(scalar)", expected=f"{want[0]!r}", got=f"{value!r}", rtol=rtol, atol=atol)


# -- inputs: distinct training values, a multiple of bins of them ------------------------------------
def sample(rng, kind, n):
    if kind == "normal":
        return rng.standard_normal(n)
    if kind == "lognormal":  # amounts in dollars: skewed
        return rng.lognormal(3.0, 1.0, n)
    return rng.exponential(2.0, n)


def as_case(drawn):
    train, prod, bins = drawn
    return np.array(train, dtype=np.float64), np.array(prod), bins


def small_case(bins, m):
    """Hypothesis cases (train, prod, bins): m distinct training integers per bin, 1-8 production values in halves."""
    from hypothesis import strategies as st

    return st.tuples(st.lists(st.integers(-12, 12), unique=True, min_size=bins * m, max_size=bins * m), st.lists(grid(-30, 30, 2), min_size=1, max_size=8),
                     st.just(bins)).map(as_case)


def shrinking(sub):
    return shrink_on_failure(sub, lambda: sized((2, 4), (1, 4), then=small_case), lambda case: judge(sub, *case))


HAND_TRAIN = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0])  # skewed: 3 per bin with bins = 4


# -- the cases: (train, prod, bins, what) per check, and all of them for the inputs-unchanged check ----------
def identical_cases(ctx):
    rng = ctx.rng(1)
    cases = [(HAND_TRAIN, HAND_TRAIN.copy(), 4, "")]
    for kind, n, bins in (("normal", 1000, 10), ("lognormal", 10**4, 10), ("exponential", 500, 5)):
        x = sample(rng, kind, n)
        cases.append((x, x.copy(), bins, f"{kind}, prod = train"))
    return cases


def hand_built_cases(ctx):
    # Training shares 1/4 each (edges between 4 and 8, 32 and 64, 256 and 512); production shares 1/2, 1/4, 1/8, 1/8.
    return [(HAND_TRAIN, np.array([1.5, 3.0, 2.5, 1.0, 20.0, 12.0, 100.0, 1500.0]), 4, "production shares 1/2, 1/4, 1/8, 1/8"),
            (HAND_TRAIN[::-1].copy(), np.array([1500.0, 10.0, 100.0, 3.0, 20.0, 700.0, 2000.0, 900.0]), 4,
             "training values unsorted; production shares 1/8, 1/4, 1/8, 1/2")]


def same_distribution_cases(ctx):
    rng = ctx.rng(2)
    return [(sample(rng, kind, 10**5), sample(rng, kind, 10**5), 10, f"{kind}, two independent samples of one distribution") for kind in ("normal", "lognormal")]


def cents_cases(ctx):
    rng = ctx.rng(3)
    train = sample(rng, "lognormal", 10**4)
    return [(train, sample(rng, "lognormal", 5000) * scale, 10, what)
            for scale, what in ((100.0, "production in cents (dollars * 100)"), (0.01, "production in hundreds of dollars (dollars / 100)"))]


def empty_bins_cases(ctx):
    train = sample(ctx.rng(4), "normal", 1000)
    return [(HAND_TRAIN, np.array([20.0, 24.0, 12.0, 10.0]), 4, "every production value in the second bin: three empty bins"),
            (HAND_TRAIN, np.array([1.0, 3.0, 600.0, 700.0, 900.0, 1500.0]), 4, "the middle two bins empty in production"),
            (train, train[train > 0.5], 10, "production = the training values above 0.5: the lower bins empty")]


def open_bins_cases(ctx):
    return [(HAND_TRAIN, np.array([-50.0, 0.5, 1.5, 3.0, 20.0, 100.0, 5000.0, 1e6]), 4, "values below the training min and above its max"),
            (HAND_TRAIN, np.array([-1.0, -2.0, 3.0, 10.0, 100.0, 4000.0]), 4, "two values below the training min, one above its max")]


def random_cases(ctx):
    rng, cases = ctx.rng(5), []
    for bins, n_train, n_prod, kind, shift, scale in ((3, 30, 17, "normal", 0.5, 1.0), (5, 200, 150, "exponential", 0.0, 1.5),
                                                      (10, 1000, 2000, "lognormal", 0.0, 1.2), (20, 10**4, 5000, "normal", -0.3, 0.8)):
        train = sample(rng, kind, n_train)
        cases.append((train, sample(rng, kind, n_prod) * scale + shift, bins, f"{kind}, production scaled by {scale:g} and shifted by {shift:g}"))
    return cases


def bins_cases(ctx):
    rng = ctx.rng(6)
    train, prod = sample(rng, "lognormal", 1000), sample(rng, "lognormal", 800) * 1.3
    return [(train, prod, bins, "") for bins in (10, 2, 5, 20)]


def dtype_cases(ctx):
    rng = ctx.rng(7)
    train = rng.permutation(1000).astype(np.int64)
    return [(HAND_TRAIN.astype(np.float32), np.array([1.5, 3.0, 2.5, 1.0, 20.0, 12.0, 100.0, 1500.0], dtype=np.float32), 4, "float32"),
            (train, rng.integers(100, 1300, 700), 10, "distinct integers 0-999, production integers 100-1299"),
            (train.astype(np.int32), (train[:500] * 2).astype(np.int32), 5, "int32")]


# -- checks -----------------------------------------------------------------------------------------
identical = check_each("identical samples give 0", identical_cases, judge)
hand_built = check_each("hand-built shares: PSI = sum((p_prod - p_train) * ln(p_prod / p_train))", hand_built_cases, judge)


@check("same distribution, large samples: PSI < 0.01")
def same_distribution(sub, ctx):
    for train, prod, bins, what in same_distribution_cases(ctx):
        with shrinking(sub):
            value = judge(sub, train, prod, bins, what)
        if not value < 0.01:
            fail(f"psi(train, prod, bins) ({describe(train, prod, 10)}; {what.split(',')[0]}): two samples of one distribution gave {value:.4g}, expected < 0.01")


@check("cents vs dollars (prod = dollars * 100 or / 100): PSI > 1, finite")
def cents_vs_dollars(sub, ctx):
    for train, prod, bins, what in cents_cases(ctx):
        with shrinking(sub):
            value = judge(sub, train, prod, bins, what)
        if not value > 1.0:
            fail(f"psi(train, prod, bins) ({describe(train, prod, 10)}; {what}): expected a PSI far above 1, got {value:.4g}")


empty_bins_floor = check_each(
    "empty bins give a finite PSI: each share is max(count / n, 1e-4)", empty_bins_cases, judge,
    edge="Shares: this prompt settles the floor as `share = max(count / n, 1e-4)` for each bin of each sample, with n that sample's length,"
         " and no renormalisation afterwards.")
open_outer_bins = check_each("outer bins are open-ended: production values beyond the training range count", open_bins_cases, judge)


@check("random samples: skewed and shifted, 3 to 20 bins")
def random_samples(sub, ctx):
    with shrinking(sub):
        for case in random_cases(ctx):
            judge(sub, *case)


@check("bins: the default is 10; bins = 2, 5, 20")
def bin_counts(sub, ctx):
    (train, prod, _, _), *others = bins_cases(ctx)
    judge(sub, train, prod, 10, "bins left at its default", pass_bins=False)
    for train, prod, bins, _ in others:
        judge(sub, train, prod, bins)


dtypes = check_each("float32 and integer samples; float64 samples give a float64 result", dtype_cases, judge)


@check("inputs unchanged")
def inputs_kept(sub, ctx):
    rng = ctx.rng(8)
    train, prod = sample(rng, "normal", 200), sample(rng, "normal", 100) + 0.2
    inputs_unchanged(sub, "psi", train, prod, bins=10, scenario="unsorted float64 samples (sorting them in place would change them)")
    for cases in (hand_built_cases, open_bins_cases, empty_bins_cases, dtype_cases, identical_cases, bins_cases, random_cases, cents_cases, same_distribution_cases):
        for train, prod, bins, what in cases(ctx):  # every check's inputs, extreme ones included, small ones first
            inputs_unchanged(sub, "psi", train, prod, bins=bins, scenario=describe(train, prod, bins) + (f"; {what}" if what else ""))
