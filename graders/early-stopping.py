"""Checks for `early-stopping`: EarlyStopper(patience, min_delta) with step(loss) -> bool, best_round, best_loss.

Each case is one run in the sandbox (`run_stopper`), recording after each round what step returned,
best_round and best_loss; the judge's record is a brute force over the prefix of losses seen so far,
compared exactly (the losses are exact in binary, so only the contract decides a tie). A failure
names the known mistake whose whole record the learner's equals, when exactly one does.
"""

import math

import numpy as np

from mlprep.grading import (Call, CheckFailed, check, control_value, describe_value, expect_raises, fail, grid, literal, mistake_hint, raised_by, scenario,
                            shrink_on_failure)

RECORD = "(what step returned, best_round, best_loss) after each round"
A_LOSSES, B_LOSSES = [1.0, 0.5, 0.75, 0.875], [4.0, 3.0, 2.0, 1.0]  # two stoppers side by side: a stops at round 3, b never
MISTAKES = {
    "off_by_one": "stops only once more than patience rounds have passed without improvement (> patience instead of >= patience): one round late",
    "min_delta_ignored": "ignores min_delta: every decrease counts as an improvement",
    "ties": "counts a loss equal to best_loss - min_delta as an improvement (<= instead of <)",
    "relative": "reads min_delta as relative (loss < best_loss * (1 - min_delta)); it is absolute: loss < best_loss - min_delta",
    "small_gains": "lowers best_loss on decreases smaller than min_delta, which are not improvements",
    "nan_continues": "does not stop on a NaN or infinite loss",
    "no_reset": "does not reset the count of rounds without improvement when a round improves",
    "one_based": "counts rounds from 1; best_round is 0-based",
}


def plain(value):
    """A NumPy scalar or 0-d array as the Python value it holds: step may return np.bool_, best_round may be an np.int64."""
    return value.item() if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0 else value


def stopper_code(interface, patience, min_delta, losses):
    made = f"EarlyStopper({patience})" if min_delta is None else f"EarlyStopper({patience}, min_delta={literal(min_delta)})"
    return Call.code(f"stopper = {made}\nhistory = []\nfor loss in {literal(list(losses))}:\n    stop = stopper.step(loss)\n"
                     f"    history.append((stop, stopper.best_round, stopper.best_loss))\n    if stop:\n        break\nhistory  # {RECORD}")


@scenario(repro=stopper_code)
def run_stopper(module, patience, min_delta, losses):
    """Scenario: [[step's result, best_round, best_loss]] per round, until step returns something true."""
    stopper = module.EarlyStopper(patience) if min_delta is None else module.EarlyStopper(patience, min_delta=min_delta)
    history = []
    for loss in losses:
        stop = stopper.step(loss)
        history.append([stop, getattr(stopper, "best_round", "<missing>"), getattr(stopper, "best_loss", "<missing>")])
        if stop:
            break
    return history


TWO_CODE = (f"a, b = EarlyStopper(2), EarlyStopper(2)\nsteps = [(a.step(x), b.step(y)) for x, y in zip({A_LOSSES}, {B_LOSSES})]\n"
            "steps, (a.best_round, a.best_loss, b.best_round, b.best_loss)")


@scenario(repro=lambda interface: Call.code(TWO_CODE))
def two_stoppers(module):
    a, b = module.EarlyStopper(2), module.EarlyStopper(2)
    steps = [[a.step(x), b.step(y)] for x, y in zip(A_LOSSES, B_LOSSES)]
    return steps, [getattr(s, name, None) for s in (a, b) for name in ("best_round", "best_loss")]


@scenario(repro=lambda interface: Call.code(f"b = EarlyStopper(2)\n[b.step(y) for y in {B_LOSSES}], b.best_round, b.best_loss"))
def interference(module):
    """Scenario, a control: a fresh stopper on B_LOSSES, then another after a third stopper took a record low loss; with its own
    state, the second gives the same steps, best_round and best_loss as the first."""
    records = []
    for _ in range(2):
        b = module.EarlyStopper(2)
        records.append([[b.step(y) for y in B_LOSSES], getattr(b, "best_round", None), getattr(b, "best_loss", None)])
        module.EarlyStopper(2).step(-1e6)
    return records


# -- the judge's side: brute force, and the known mistakes --------------------------------------------
def brute_force(patience, min_delta, losses):
    """[(stop, best_round, best_loss)] per round until the first stop; best_round None before any finite loss."""
    d, out = min_delta or 0.0, []
    for t, loss in enumerate(losses):
        best_round, best_loss = None, math.inf
        for s, x in enumerate(losses[:t + 1]):
            if math.isfinite(x) and x < best_loss - d:
                best_round, best_loss = s, x
        stop = not math.isfinite(loss) or (best_round is not None and t - best_round >= patience)
        out.append((stop, best_round, best_loss))
        if stop:
            break
    return out


def simulate(patience, min_delta, losses, mistake):
    """The record a stopper with the known `mistake` (a key of MISTAKES) gives."""
    d, best_round, best_loss, wait, out = min_delta or 0.0, None, math.inf, 0, []
    for t, loss in enumerate(losses):
        if not math.isfinite(loss) and mistake != "nan_continues":
            out.append((True, best_round, best_loss))
            break
        threshold = {"min_delta_ignored": best_loss, "relative": best_loss * (1 - d) if d < 1 else -math.inf}.get(mistake, best_loss - d)
        if loss < threshold or (mistake == "ties" and loss == threshold):
            best_round, best_loss, wait = t + (mistake == "one_based"), loss, wait if mistake == "no_reset" else 0
        else:
            wait += 1
            best_loss = min(best_loss, loss) if mistake == "small_gains" else best_loss
        out.append((wait > patience if mistake == "off_by_one" else wait >= patience, best_round, best_loss))
        if out[-1][0]:
            break
    return out


def read_two(got):
    """two_stoppers' record (steps, best values), NumPy scalars read as the Python values they hold."""
    steps, best = got
    return [[plain(v) for v in pair] for pair in steps], [plain(v) for v in best]


def two_records(mistake=None):
    """two_stoppers' record for stoppers with the known `mistake` (None: the contract's), or None where one would stop early."""
    a, b = (brute_force(2, None, losses) if mistake is None else simulate(2, None, losses, mistake) for losses in (A_LOSSES, B_LOSSES))
    if len(a) < len(A_LOSSES) or len(b) < len(B_LOSSES):
        return None
    return [[x[0], y[0]] for x, y in zip(a, b)], [a[-1][1], a[-1][2], b[-1][1], b[-1][2]]


def two_stoppers_hint(sub, got):
    """Shared state, when a fresh stopper on B_LOSSES gives other values after another stopper took a record low loss; otherwise
    the known mistake that the record shows."""
    runs = control_value(sub, interference, read=lambda runs: [[[plain(stop) for stop in steps], plain(r), plain(loss)] for steps, r, loss in runs])
    if runs is None:
        return ""
    if runs[0] != runs[1]:
        return (f"A fresh stopper on {B_LOSSES} gives steps {runs[0][0]}, best_round {runs[0][1]!r} and best_loss {runs[0][2]!r}, and another one, after"
                f" a third stopper took the loss -1e6, {runs[1][0]}, {runs[1][1]!r} and {runs[1][2]!r}: the stoppers share state. Keep every piece of"
                " state on self (set in __init__), never in class attributes or globals that all stoppers share.")
    mistakes = [(text, lambda key=key: two_records(key)) for key, text in MISTAKES.items()]
    return mistake_hint(got, mistakes, want=two_records(), say="Another stopper stepped in between changes nothing of a fresh one's values, so each"
                        " keeps its own state; they behave like one that {}.")


def same(got, want):
    return len(got) == len(want) and all(isinstance(g[0], bool) and g[0] == w[0] and (w[1] is None or (g[1] == w[1] and g[2] == w[2])) for g, w in zip(got, want))


def likely_mistake(got, patience, min_delta, losses, want):
    mistakes = [(text, lambda key=key: simulate(patience, min_delta, losses, key)) for key, text in MISTAKES.items()]
    return mistake_hint(got, mistakes, say="Your stopper behaves like one that {}.", same=same, is_right=lambda record: same(record, want))


def why(t, want, patience, min_delta, losses):
    """Why round t's expected record is what it is, in the contract's words."""
    stop, best_round, best_loss = want[t]
    d = min_delta or 0.0
    if not math.isfinite(losses[t]):
        return f"round {t}'s loss is {losses[t]}: a NaN or infinite loss stops at once and changes neither best_round nor best_loss"
    if best_round == t == 0:
        return "round 0's loss is the first finite one, which always improves"
    if best_round == t:
        return f"{losses[t]!r} < best_loss - min_delta = {want[t - 1][2]!r} - {d!r}: round {t} improves"
    reason = (f"the last improvement was round {best_round} (loss {best_loss!r}); no later loss is below best_loss - min_delta ="
              f" {best_loss!r} - {d!r} = {best_loss - d!r}")
    return f"{reason}, so patience = {patience} runs out at round {best_round} + {patience} = {best_round + patience}" if stop else (
        f"{reason}, and round {t} is {t - best_round} round(s) after it, fewer than patience = {patience}")


def judge(sub, patience, min_delta, losses, what=""):
    made = f"EarlyStopper({patience})" if min_delta is None else f"EarlyStopper({patience}, min_delta={min_delta!r})"
    scenario_text = f"{made} on {len(losses)} losses{what}"
    got = [[plain(value) for value in row] for row in sub.run(run_stopper, patience, min_delta, list(losses))]
    want = brute_force(patience, min_delta, losses)
    for t, (stop, best_round, best_loss) in enumerate(want):
        if t >= len(got):
            fail(f"{scenario_text}: the run ended after round {len(got) - 1}, before round {t}.")
        g_stop, g_round, g_loss = got[t]
        message = None
        if not isinstance(g_stop, bool):
            message = f"step(losses[{t}]) returned {describe_value(g_stop)}; it must return a bool, True or False"
        elif g_stop != stop:
            message = f"at round {t} (loss {losses[t]!r}) step returned {g_stop}, expected {stop}: {why(t, want, patience, min_delta, losses)}"
        elif best_round is not None and (g_round != best_round or g_loss != best_loss):
            message = (f"after round {t} (loss {losses[t]!r}) best_round, best_loss = {g_round!r}, {g_loss!r}; expected {best_round}, {best_loss!r}:"
                       f" {why(t, want, patience, min_delta, losses)}")
        if message:
            details = {"what": "step's result, best_round, best_loss", "first_index": f"round {t}", "expected": repr(want[t]), "got": repr(tuple(got[t]))}
            raise CheckFailed(f"{scenario_text}: {message}.", details, explain=lambda: likely_mistake(got, patience, min_delta, losses, want))


def noisy_curve(rng, T, noise):
    """A validation curve: fast descent, then slow overfitting, plus noise; multiples of 1/512."""
    t = np.arange(T)
    curve = 0.4 + 1.6 * 2.0 ** (-t / 8) + 0.003 * t + noise * rng.standard_normal(T)
    return [round(float(x) * 512) / 512 for x in curve]


def small_curves():
    from hypothesis import strategies as st

    return st.tuples(st.integers(1, 4), st.sampled_from([0.0, 0.25, 0.5]), st.lists(grid(0, 16, 4), min_size=1, max_size=12))


# -- checks -----------------------------------------------------------------------------------------
@check("stops at round best_round + patience (min_delta left at its default)")
def stops_after_patience(sub, ctx):
    for patience in (1, 2, 3):
        judge(sub, patience, None, [1.0, 0.8, 0.6, 0.7, 0.65, 0.9])
    judge(sub, 2, None, [3, 2, 2, 4, 1], what=" (ints)")


@check("an improvement resets the count of rounds without one")
def improvement_resets(sub, ctx):
    judge(sub, 2, None, [1.0, 0.9, 0.95, 0.85, 0.9, 0.92, 0.99])
    judge(sub, 3, None, [5.0, 6.0, 7.0, 4.0, 4.5, 3.0, 3.5, 3.25, 3.75, 3.5])


@check("an improvement is loss < best_loss - min_delta (absolute; an equal loss is none)")
def min_delta_absolute(sub, ctx):
    judge(sub, 2, None, [1.0, 1.0, 1.0, 0.5])
    judge(sub, 3, 0.25, [2.0, 1.875, 1.75, 1.5, 1.375, 1.25, 1.25, 1.0])
    judge(sub, 2, 0.5, [8.0, 7.75, 7.5, 7.25, 6.0, 5.75, 5.5, 5.25])


@check("a NaN, inf or -inf loss stops at once",
       edge="A NaN, `inf` or `-inf` loss means training diverged: `step` returns `True` at once and changes neither `best_round` nor `best_loss`.")
def nonfinite_stops(sub, ctx):
    for losses in ([1.0, 0.5, math.nan], [2.0, math.inf], [3.0, 2.5, 2.75, -math.inf, 1.0], [math.nan, 1.0]):
        judge(sub, 3, 0.25, losses)


@check("best round and stop round on noisy validation curves")
def noisy_curves(sub, ctx):
    rng = ctx.rng(1)
    with shrink_on_failure(sub, small_curves, lambda case: judge(sub, *case)):
        for T, noise, patience, min_delta in ((40, 0.01, 3, 0.0), (80, 0.02, 5, 1 / 512), (150, 0.03, 10, 4 / 512), (300, 0.01, 20, 0.0), (60, 0.05, 1, 8 / 512)):
            judge(sub, patience, min_delta, noisy_curve(rng, T, noise), what=f", noise {noise:g}")


@check("two stoppers do not share state")
def independent_stoppers(sub, ctx):
    got, want = read_two(sub.run(two_stoppers)), two_records()
    if got != want:
        fail(f"two EarlyStopper(2) objects stepped in turn, a on {A_LOSSES} and b on {B_LOSSES}: expected steps {want[0]} and (a.best_round,"
             f" a.best_loss, b.best_round, b.best_loss) = {tuple(want[1])}, got {got[0]} and {tuple(got[1])}.", explain=lambda: two_stoppers_hint(sub, got))


@check("patience < 1 or min_delta < 0 raises ValueError", edge="`patience < 1` or `min_delta < 0` raises `ValueError`.")
def invalid_arguments(sub, ctx):
    for patience, min_delta in ((0, 0.0), (-1, 0.0), (2, -0.1)):
        expect_raises(sub.run(raised_by, "EarlyStopper", patience, min_delta=min_delta), exact=True, what=f"EarlyStopper({patience}, min_delta={min_delta})",
                      shown=lambda result: "a stopper", raised_hint="check the arguments in __init__.", returned_hint="check the arguments in __init__.")
