"""Checks for `minibatch-sgd`: mini-batch SGD graded by what grad_fn receives and by the stop rule.

grad_fn is the grader's: `sgd_run` (in the sandbox) builds the data from a few lines of code (the ones the
failing input shows), the row id in column 0, and passes a recording least-squares gradient that notes, for
every call, the row ids of the batch, the w it was given and the gradient it returned. The judge reads the
learner's own run: the batches of every epoch, each step against -lr times the gradient returned, and the
stop rule on the learner's own epochs. No trajectory is compared with the reference's; batch_size = N, where
nothing random is left, is compared with full-batch gradient descent computed here.
"""

import numpy as np

from mlprep.grading import Call, InPlace, assert_close, check, fail, fail_if_changed, inputs_from_code, listed, on_input, plural, scenario

STEP_RTOL = 1e-6  # a step w_next - w against -lr * g, relative (plus rounding of w itself)
STOP_BAND = 1e-9  # ratios this close to tol may fall either way
SCALE = 2.0**20

SETTINGS_ORDER = ("lr", "batch_size", "epochs", "tol")


# Scenarios (run in the sandbox) and their rendering
def record_run(module, data, w0, settings, rng):
    """One sgd run with a recording least-squares grad_fn: the row ids, w and gradient of every call,
    what sgd returned, and whether it changed data or w0."""
    before = InPlace(data=data, w0=w0)
    limit = settings["epochs"] * len(data) + 10
    ids, ws, gs = [], [], []

    def grad_fn(w, batch):
        if len(ids) >= limit:
            raise RuntimeError(f"grad_fn was called more than {limit} times, more than {settings['epochs']} epochs of batches need")
        b, w = np.asarray(batch, dtype=np.float64), np.array(w, dtype=np.float64)
        if b.ndim != 2 or b.shape[1] != data.shape[1]:
            raise TypeError(f"grad_fn(w, batch) expects batch = data[idx], a 2-D array of rows of data, got shape {b.shape}")
        if w.shape != w0.shape:
            raise TypeError(f"grad_fn(w, batch) expects w of w0's shape {w0.shape} first, got shape {w.shape}")
        X, y = b[:, 1:-1], b[:, -1]
        g = X.T @ (X @ w - y) / len(b) if len(b) else np.zeros_like(w)
        ids.append(np.rint(b[:, 0]).astype(np.int64))
        ws.append(w)
        gs.append(g.copy())
        return g

    final = module.sgd(grad_fn, w0, data, settings["lr"], settings["batch_size"], settings["epochs"], settings["tol"], rng)
    return {"ids": ids, "w": ws, "g": gs, "final": final.copy() if isinstance(final, np.ndarray) else final, "changed": before.changed(),
            "reordered": before.reordered()}


GRAD_FN_CODE = [
    "def grad_fn(w, batch):  # least squares on the batch; column 0 of data is the row id",
    "    calls.append((batch[:, 0].astype(int).tolist(), w.copy()))",
    "    X, y = batch[:, 1:-1], batch[:, -1]",
    "    return X.T @ (X @ w - y) / len(batch)",
]


def sgd_code(settings, seed):
    args = ", ".join(f"{k}={settings[k]!r}" for k in SETTINGS_ORDER)
    return f"sgd(grad_fn, w0, data, {args}, rng=np.random.default_rng({seed}))"


def run_code(data_code, settings, seed, show):
    return "\n".join([data_code, "calls = []  # (row ids, w) of every grad_fn call", *GRAD_FN_CODE, f"w = {sgd_code(settings, seed)}", show])


@scenario(repro=lambda interface, data_code, settings, seed, show="[ids for ids, _ in calls]": Call.code(run_code(data_code, settings, seed, show)))
def sgd_run(module, data_code, settings, seed, show="[ids for ids, _ in calls]"):
    """Scenario: one run on the data built by data_code, rng = np.random.default_rng(seed)."""
    data, w0 = inputs_from_code(data_code, "data", "w0")
    return record_run(module, data, w0, settings, np.random.default_rng(seed))


def repeat_code(data_code, settings, runs):
    lines = [data_code, "import random", "", "def run(seed):  # the row ids of every grad_fn call", "    calls = []",
             *("    " + line for line in GRAD_FN_CODE), f"    {sgd_code(settings, 'seed')}", "    return [ids for ids, _ in calls]", ""]
    for k, (seed, global_seed) in enumerate(runs):
        if global_seed is not None:
            lines.append(f"np.random.seed({global_seed}); random.seed({global_seed})")
        lines.append(f"run{k + 1} = run({seed})")
    return "\n".join(lines + [" == ".join(f"run{k + 1}" for k in range(len(runs)))])


@scenario(repro=lambda interface, data_code, settings, runs: Call.code(repeat_code(data_code, settings, runs)))
def sgd_repeat(module, data_code, settings, runs):
    """Scenario: several runs, each (seed, global_seed): np.random and random seeded with global_seed
    (unless None) before sgd runs with np.random.default_rng(seed)."""
    import random

    records = []
    for seed, global_seed in runs:
        if global_seed is not None:
            np.random.seed(global_seed)
            random.seed(global_seed)
        data, w0 = inputs_from_code(data_code, "data", "w0")
        records.append(record_run(module, data, w0, settings, np.random.default_rng(seed)))
    return records


# Problems: least squares, the row id in column 0
SMALL = ("data = np.array([[0.0, 1.0, 2.0], [1.0, -1.0, -1.5], [2.0, 0.5, 1.0], [3.0, 2.0, 4.5], [4.0, -0.5, -1.0]])"
         "  # row id, x, y\nw0 = np.array([0.5])")


def problem_code(seed, n, w_true, w0, noise=0.0, scale=1.0):
    """Lines that build data (n rows: id, x_1..x_d, y = x . w_true (+ noise)) and w0; scale multiplies y and w0."""
    y = f"X @ np.array({list(map(float, w_true))})" + (f" + {noise!r} * rng.standard_normal({n})" if noise else "")
    factor = "" if scale == 1 else "2.0**20 * "
    y = f"{factor}({y})" if factor else y
    return "\n".join([f"rng = np.random.default_rng({seed})", f"X = rng.standard_normal(({n}, {len(w_true)}))", f"y = {y}",
                      f"data = np.column_stack([np.arange({n}.0), X, y])  # column 0: the row id",
                      f"w0 = {factor}np.array({list(map(float, w0))})"])


def describe(data_code, settings):
    data = inputs_from_code(data_code, "data")
    return f"N = {len(data)}, " + ", ".join(f"{k} = {settings[k]!r}" for k in SETTINGS_ORDER)


# The judge's side: reading one run
def epoch_sizes(n, batch_size):
    return [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])


def epochs_of(record, n, batch_size):
    """The run's calls split into epochs of ceil(n / batch_size) calls (the last may be incomplete)."""
    per = len(epoch_sizes(n, batch_size))
    return [list(range(s, min(s + per, len(record["ids"])))) for s in range(0, len(record["ids"]), per)]


def check_partition(record, n, settings, what, shown, complete_last=False):
    """Every epoch (every complete one, unless complete_last) is consecutive batches of batch_size rows
    holding each row once."""
    bs = settings["batch_size"]
    want_sizes = epoch_sizes(n, bs)
    sizes = [len(i) for i in record["ids"]]
    where = f"{what}: with N = {n} and batch_size = {bs}, each epoch is {len(want_sizes)} calls of {listed(want_sizes, 12)} rows"
    if not sizes:
        fail(f"{where}, but grad_fn was never called", failing_input=shown)
    for e, calls in enumerate(epochs_of(record, n, bs)):
        got = [sizes[k] for k in calls]
        if len(calls) < len(want_sizes) and not complete_last and got == want_sizes[:len(got)] and calls[-1] == len(sizes) - 1:
            continue  # an incomplete last epoch: the stop-rule check reports it
        if got != want_sizes:
            hint = ""
            if all(s == bs for s in sizes) and n % bs:
                hint = (f"Every batch had {bs} rows: the last, partial batch of each epoch (N mod batch_size = {plural(n % bs, 'row')}) never"
                        " reached grad_fn; slice the permutation with range(0, N, batch_size) and keep the short final slice.")
            elif sum(got) == n and len(got) == len(want_sizes):
                hint = "The batches are consecutive slices of batch_size rows, only the last one shorter (not N split into equal parts)."
            fail(f"{where}; epoch {e + 1}'s calls got {listed(got, 12)} rows. {hint}", failing_input=shown, epoch=e + 1, sizes=got[:20])
        rows = np.concatenate([record["ids"][k] for k in calls])
        counts = np.bincount(rows[(rows >= 0) & (rows < n)], minlength=n)
        if (counts != 1).any() or len(rows) != n:
            twice, never = np.flatnonzero(counts > 1), np.flatnonzero(counts == 0)
            hint = ("Every epoch passes each row exactly once: split one permutation of the rows (rng.permutation(N)), instead of"
                    " drawing row indices with replacement.") if len(twice) else ""
            fail(f"{what}: epoch {e + 1} did not pass every row exactly once: row(s) {listed(twice, empty='none')} more than once, row(s)"
                 f" {listed(never, empty='none')} never. {hint}", failing_input=shown, epoch=e + 1)


def check_steps(record, w0, n, settings, what, shown):
    """The first call gets w0, each step is -lr * g, and sgd returns w after the last step."""
    lr = settings["lr"]
    ws, gs = [np.asarray(w) for w in record["w"]], [np.asarray(g) for g in record["g"]]
    if not ws:
        fail(f"{what}: grad_fn was never called", failing_input=shown)
    with on_input(shown):
        assert_close(ws[0], w0, what="w given to the first grad_fn call", scenario=what, hint="the first call gets w0 itself")
    final = record["final"]
    if not isinstance(final, np.ndarray):
        fail(f"{what}: sgd returned {type(final).__name__}, expected the final w as a NumPy array of shape {w0.shape}", failing_input=shown)
    if final.dtype != np.float64:
        fail(f"{what}: sgd returned a {final.dtype} array; return w as float64 (start from np.array(w0, dtype=np.float64))",
             failing_input=shown, dtype=str(final.dtype))
    nexts = ws[1:] + [final]
    for k, (w, g, w_next) in enumerate(zip(ws, gs, nexts)):
        last = k == len(ws) - 1
        if w_next.shape != w.shape:
            fail(f"{what}: sgd returned an array of shape {w_next.shape}, expected w0's shape {w.shape}", failing_input=shown)
        step, want = w_next.astype(np.float64) - w, -lr * g
        atol = 4e-16 * (np.abs(w) + np.abs(w_next)) + 1e-300
        if np.all(np.abs(step - want) <= atol + STEP_RTOL * np.abs(want)):
            continue
        size = len(record["ids"][k])
        ratio = float(step @ want / (want @ want)) if want @ want > 0 else np.nan
        hint = ""
        epoch_start = ws[epochs_of(record, n, settings["batch_size"])[-1][0]]
        if np.isclose(ratio, size) and size > 1:
            hint = f"The step is lr * {size} * g: grad_fn already returns the batch-mean gradient, so step by lr * g, unscaled."
        elif np.isclose(ratio, 1 / size) and size > 1:
            hint = f"The step is lr * g / {size}: grad_fn already returns the batch-mean gradient, so step by lr * g."
        elif np.isclose(ratio, size / settings["batch_size"]):
            hint = "The last, partial batch got a smaller step: every batch takes the same step lr * g, whatever its size."
        elif last and np.allclose(w_next, w, rtol=1e-12, atol=0):
            hint = "sgd returned the w from before the last step: return w after the last update."
        elif last and np.allclose(w_next, epoch_start, rtol=1e-12, atol=0):
            hint = "sgd returned w_start, the w the last epoch started from: return w after the last update."
        which = "sgd's returned w" if last else f"w given to call {k + 2}"
        fail(f"{what}: {which} is not the w given to call {k + 1} minus lr * (the gradient that call returned); step expected"
             f" {fmt_vec(want)}, got {fmt_vec(step)} (batch of {size} rows, lr = {lr!r}). {hint}", failing_input=shown, call=k + 1)


def fmt_vec(v):
    return "[" + ", ".join(f"{x:.6g}" for x in np.asarray(v, dtype=np.float64)[:6]) + (", ...]" if len(v) > 6 else "]")


def epoch_ends(record, n, settings):
    """(w at the start, w at the end, complete?) per epoch, from the learner's own calls (the end of the
    last one computed from its last gradient, so that what sgd returns does not matter here)."""
    lr, ws, gs = settings["lr"], record["w"], record["g"]
    per = len(epoch_sizes(n, settings["batch_size"]))
    after_last = np.asarray(ws[-1]) - lr * np.asarray(gs[-1])
    out = []
    for calls in epochs_of(record, n, settings["batch_size"]):
        end = np.asarray(ws[calls[-1] + 1]) if calls[-1] + 1 < len(ws) else after_last
        out.append((np.asarray(ws[calls[0]]), end, len(calls) == per))
    return out


def check_stop(record, n, settings, what, shown):
    """Stops right after the first epoch where the relative change is <= tol, and not before; else
    runs all epochs."""
    tol, epochs = settings["tol"], settings["epochs"]
    ends = epoch_ends(record, n, settings)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverged run's weights: an inf norm, no warning on mlprep's stderr
        changes = [(float(np.linalg.norm(b - a)), float(np.linalg.norm(a))) for a, b, _ in ends]
    ran = len(ends)
    if not ends[-1][2]:
        k = len(epochs_of(record, n, settings["batch_size"])[-1])
        fail(f"{what}: sgd stopped in the middle of epoch {ran}, after {k} of its {len(epoch_sizes(n, settings['batch_size']))} batches."
             " The stop rule is tested once per epoch, after its last batch, on the change over the whole epoch (not after every"
             " batch)", failing_input=shown, epochs_run=ran)
    absolute = next((e + 1 for e, (d, _) in enumerate(changes) if d <= tol), None)
    abs_hint = (f" Your run stopped at the first epoch where ||w_end - w_start|| <= tol = {tol!r} itself, an absolute test; the rule"
                " is relative: ||w_end - w_start|| <= tol * ||w_start||, which a rescaled problem meets at the same epoch.")
    for e, (d, size) in enumerate(changes[:-1]):
        if d <= tol * size * (1 - STOP_BAND):
            fail(f"{what}: after epoch {e + 1}, ||w_end - w_start|| = {d:.6g} <= tol * ||w_start|| = {tol!r} * {size:.6g}, so sgd"
                 f" should have stopped there and returned; it ran {ran} epochs." + (abs_hint if absolute == ran else ""),
                 failing_input=shown, stop_epoch=e + 1, epochs_run=ran)
    d, size = changes[-1]
    if ran > epochs:
        fail(f"{what}: sgd ran {ran} epochs, more than epochs = {epochs}", failing_input=shown, epochs_run=ran)
    if ran < epochs and d > tol * size * (1 + STOP_BAND):
        fail(f"{what}: sgd stopped after epoch {ran} of {epochs}, where ||w_end - w_start|| = {d:.6g} > tol * ||w_start|| ="
             f" {tol!r} * {size:.6g}; it stops only when the change is at most that." + (abs_hint if absolute == ran else ""),
             failing_input=shown, epochs_run=ran)
    return ran


def run_once(sub, data_code, settings, seed=0, show="[ids for ids, _ in calls]"):
    record = sub.run(sgd_run, data_code, settings, seed, show)
    return record, Call.code(run_code(data_code, settings, seed, show)), inputs_from_code(data_code, "data", "w0")


# Checks
PARTITION_CASES = [  # (data code, settings): tol = 0 keeps every epoch
    (SMALL, {"lr": 0.1, "batch_size": 2, "epochs": 3, "tol": 0.0}),
    (problem_code(1, 20, [1.5, -2.0, 0.5], [0.5, 0.5, 0.5], noise=0.3), {"lr": 0.05, "batch_size": 6, "epochs": 4, "tol": 0.0}),
    (problem_code(2, 20, [1.5, -2.0, 0.5], [0.5, 0.5, 0.5], noise=0.3), {"lr": 0.05, "batch_size": 1, "epochs": 2, "tol": 0.0}),
    (problem_code(3, 20, [1.5, -2.0, 0.5], [0.5, 0.5, 0.5], noise=0.3), {"lr": 0.05, "batch_size": 20, "epochs": 3, "tol": 0.0}),
    (problem_code(4, 37, [2.0, -1.0], [0.0, 1.0], noise=0.3), {"lr": 0.05, "batch_size": 8, "epochs": 3, "tol": 0.0}),
]


STOP_CASES = [
    (problem_code(81, 20, [3.0, -4.0, 12.0], [1.0, 1.0, 1.0]), {"lr": 0.2, "batch_size": 4, "epochs": 200, "tol": 1e-3}),
    (problem_code(82, 30, [0.25, 0.5], [1.0, -1.0]), {"lr": 0.1, "batch_size": 7, "epochs": 200, "tol": 1e-4}),
    (problem_code(83, 20, [1.5, -2.0, 0.5], [0.5, 0.5, 0.5], noise=0.3), {"lr": 0.05, "batch_size": 6, "epochs": 12, "tol": 1e-12}),
]

@check("every epoch passes each row once, in consecutive batches of batch_size (the last one partial)")
def every_row_every_epoch(sub, ctx):
    for data_code, settings in PARTITION_CASES:
        record, shown, (data, _) = run_once(sub, data_code, settings)
        check_partition(record, len(data), settings, describe(data_code, settings), shown, complete_last=True)


@check("a new order every epoch")
def reshuffled(sub, ctx):
    for data_code, settings in (PARTITION_CASES[1], PARTITION_CASES[4]):
        record, shown, (data, _) = run_once(sub, data_code, settings)
        n, what = len(data), describe(data_code, settings)
        check_partition(record, n, settings, what, shown, complete_last=True)
        orders = [np.concatenate([record["ids"][k] for k in calls]) for calls in epochs_of(record, n, settings["batch_size"])]
        for e in range(1, len(orders)):
            if np.array_equal(orders[e], orders[e - 1]):
                unshuffled = np.array_equal(orders[e], np.arange(n))
                hint = ("The rows came in their stored order, 0, 1, 2, ...: shuffle them with rng at the start of every epoch." if unshuffled else
                        "Draw a new permutation (rng.permutation(N)) at the start of every epoch, not once before the loop.")
                fail(f"{what}: epoch {e + 1} passed the rows in the same order as epoch {e}. {hint}", failing_input=shown, epoch=e + 1)


@check("each batch moves w by -lr * grad_fn(w, batch), the last partial batch too; sgd returns the last w")
def sgd_steps(sub, ctx):
    for data_code, settings in (PARTITION_CASES[0], PARTITION_CASES[1], PARTITION_CASES[4], STOP_CASES[0]):
        record, shown, (data, w0) = run_once(sub, data_code, settings, show="w, [w for _, w in calls]")
        check_steps(record, w0, len(data), settings, describe(data_code, settings), shown)


EPOCHS_SHOW = "len(calls) / {per}  # epochs run ({per} calls each)"


@check("stops after the first epoch with ||w_end - w_start|| <= tol * ||w_start||, else runs all epochs")
def stop_rule(sub, ctx):
    for seed, (data_code, settings) in enumerate(STOP_CASES):
        data = inputs_from_code(data_code, "data")
        per = len(epoch_sizes(len(data), settings["batch_size"]))
        record, shown, _ = run_once(sub, data_code, settings, seed, show=EPOCHS_SHOW.format(per=per))
        what = describe(data_code, settings)
        check_partition(record, len(data), settings, what, shown)
        check_stop(record, len(data), settings, what, shown)


SCALED_SETTINGS = {"lr": 0.2, "batch_size": 4, "epochs": 100, "tol": 1e-3}


@check("scaling w0 and y by 2**20 does not change when it stops")
def scale_invariant_stop(sub, ctx):
    settings = SCALED_SETTINGS
    runs = []
    for scale in (1.0, SCALE):
        data_code = problem_code(81, 20, [3.0, -4.0, 12.0], [1.0, 1.0, 1.0], scale=scale)
        record, shown, (data, _) = run_once(sub, data_code, settings, show=EPOCHS_SHOW.format(per=5))
        what = describe(data_code, settings) + (", w0 and y scaled by 2**20" if scale != 1 else "")
        check_partition(record, len(data), settings, what, shown)
        runs.append((len(epochs_of(record, len(data), settings["batch_size"])), shown, record, what, len(data)))
    (plain, _, plain_record, *_), (scaled, shown, scaled_record, *_) = runs
    common = min(len(plain_record["ids"]), len(scaled_record["ids"]))
    differ = next((k for k in range(common) if not np.array_equal(plain_record["ids"][k], scaled_record["ids"][k])), None)
    if differ is not None:
        fail(f"{runs[1][3]}: with the same rng seed, call {differ + 1} got other rows than in the unscaled run, so the two runs cannot"
             " be compared; the order must come from rng alone (the same seed, the same batches)", failing_input=shown, call=differ + 1)
    if plain != scaled:
        def absolute_stop(record):  # the epoch an absolute test ||w_end - w_start|| <= tol stops at
            ends = epoch_ends(record, runs[0][4], settings)
            with np.errstate(over="ignore", invalid="ignore"):
                return next((e + 1 for e, (a, b, _) in enumerate(ends) if np.linalg.norm(b - a) <= settings["tol"]), settings["epochs"])
        hint = (" Both runs stopped where ||w_end - w_start|| <= tol itself first held, an absolute test: compare the change with"
                " tol * ||w_start|| instead." if absolute_stop(plain_record) == plain and absolute_stop(scaled_record) == scaled else "")
        fail(f"{runs[0][3]}: the run stopped after {plain} epochs, but after {scaled} with w0 and y multiplied by 2**20, which scales"
             " every w and every step exactly by 2**20 (the same seed giving the same batches), so the relative change of every epoch"
             " is the same in both." + hint, failing_input=shown, epochs_plain=plain, epochs_scaled=scaled)
    for _, shown, record, what, n in runs:
        check_stop(record, n, settings, what, shown)


FULL_BATCH = (problem_code(91, 20, [1.5, -2.0, 0.5], [0.5, 0.5, 0.5], noise=0.3), {"lr": 0.5, "batch_size": 20, "epochs": 300, "tol": 1e-4})


@check("batch_size = N is full-batch gradient descent")
def full_batch(sub, ctx):
    data_code, settings = FULL_BATCH
    record, shown, (data, w0) = run_once(sub, data_code, settings, show="w, len(calls)")
    what = describe(data_code, settings)
    check_partition(record, len(data), settings, what, shown)
    ran = check_stop(record, len(data), settings, what, shown)
    check_steps(record, w0, len(data), settings, what, shown)
    X, y, w = data[:, 1:-1], data[:, -1], w0.copy()
    for _ in range(ran):
        w = w - settings["lr"] * X.T @ (X @ w - y) / len(data)
    with on_input(shown):
        assert_close(record["final"], w, what=f"w after {ran} epochs", scenario=what + ", against full-batch gradient descent", rtol=1e-9, atol=1e-12)


REPEAT_DATA = problem_code(5, 20, [1.5, -2.0, 0.5], [0.5, 0.5, 0.5], noise=0.3)
REPEAT_SETTINGS = {"lr": 0.05, "batch_size": 6, "epochs": 3, "tol": 0.0}


def same_batches(a, b):
    return len(a["ids"]) == len(b["ids"]) and all(np.array_equal(x, y) for x, y in zip(a["ids"], b["ids"]))


@check("the same rng seed gives the same batches, whatever np.random's and random's global state")
def deterministic_per_seed(sub, ctx):
    runs = [(7, 1), (7, 2)]
    first, second = sub.run(sgd_repeat, REPEAT_DATA, REPEAT_SETTINGS, runs)
    if not first["ids"]:
        fail(f"{describe(REPEAT_DATA, REPEAT_SETTINGS)}: grad_fn was never called")
    if same_batches(first, second):
        return
    control = sub.control(sgd_repeat, REPEAT_DATA, REPEAT_SETTINGS, [(7, 3), (7, 3)])
    hint = ""
    if isinstance(control, (list, tuple)) and len(control) == 2 and same_batches(*control):
        hint = ("With the global state seeded alike, the two runs agree: the shuffling draws from np.random's (or random's) global"
                " generator; draw it from rng (rng.permutation(N)), the Generator passed in.")
    elif control is not None:
        hint = "They differ even with the global state seeded alike: all randomness must come from rng, the Generator passed in."
    fail(f"{describe(REPEAT_DATA, REPEAT_SETTINGS)}: two runs with rng = np.random.default_rng(7) gave different batches (np.random"
         f" and random seeded with 1 before the first, 2 before the second). {hint}")


@check("the order comes from rng: another seed, another order")
def order_from_rng(sub, ctx):
    first, second = sub.run(sgd_repeat, REPEAT_DATA, REPEAT_SETTINGS, [(0, None), (1, None)])
    if not (first["ids"] and second["ids"]):
        fail(f"{describe(REPEAT_DATA, REPEAT_SETTINGS)}: grad_fn was never called")
    if np.array_equal(first["ids"][0], second["ids"][0]):
        if np.array_equal(first["ids"][0], np.arange(len(first["ids"][0]))):
            hint = "The first batch is rows 0, 1, 2, ... in order: shuffle the rows with rng."
        else:
            hint = "The permutation must be drawn from rng, the Generator passed in (not from a generator of your own with a fixed seed)."
        fail(f"{describe(REPEAT_DATA, REPEAT_SETTINGS)}: np.random.default_rng(0) and np.random.default_rng(1) gave the same first"
             f" batch. {hint}")


def unchanged_fix(record):
    """The remedy for each input changed in place, by what the change shows: data's own rows in another order (shuffled), or new values."""
    fixes = {"data": ("shuffle an index array (rng.permutation(N)) and index data with it, instead of shuffling data itself (it now holds its rows in"
                      " another order)" if "data" in record["reordered"] else "read data and write into a copy, never into data itself"),
             "w0": "start from a copy, w = np.array(w0, dtype=float), and update with w = w - lr * g"}
    return "; ".join(fixes[name] for name in record["changed"])


@check("data and w0 unchanged")
def inputs_kept(sub, ctx):
    scaled = problem_code(81, 20, [3.0, -4.0, 12.0], [1.0, 1.0, 1.0], scale=SCALE)
    for data_code, settings in (*PARTITION_CASES, *STOP_CASES, (scaled, SCALED_SETTINGS), FULL_BATCH, (REPEAT_DATA, REPEAT_SETTINGS)):
        record = run_once(sub, data_code, settings)[0]
        fail_if_changed(record["changed"], who="sgd", where=describe(data_code, settings), fix=unchanged_fix(record),
                        failing_input=Call.code(run_code(data_code, settings, 0, f"{', '.join(record['changed'])}  # changed by sgd")))
