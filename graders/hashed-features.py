"""Checks for `hashed-features`: bucket(), featurize() and expected_collisions() of the hashing trick.

The contract leaves the hash function to the learner (hashlib, FNV-1a, MurmurHash3...), so no check
compares a bucket with the reference's: every check judges a property any good hashing has, from the
learner's own buckets. Every batch of calls is a few lines of Python built here (run in the sandbox
by the `evaluate` scenario against the learner's names); a failure shows those lines, ending in the
statistic the check judges, so the failing input pastes and runs.

Statistical checks are judged with bounds computed from the number of keys, each at an error rate of
ALPHA = 1e-9 for an ideal random hash: exact binomial tails for counts (keys that share a bucket, signs
that agree), chi-square bounds (the toolkit's regularized incomplete gamma function) for bucket
counts, and a normal bound at z = 7 for the mean number of collisions over simulated tables. With
about 20 such bounds in a grade, a correct hash fails less than once in 10^7 grades (the chi-square
and normal tails are asymptotic: a factor of a few either way still leaves it below 1e-6), while each
known mistake misses its bound by orders of magnitude, every time. Cases are fixed (no random draws):
the same file gets the same verdict.

- Stability: the learner's file runs in fresh interpreters (subprocesses the sandbox starts and waits
  for, with PYTHONHASHSEED=1 and =2), which print their buckets and features; they must agree. A
  second pair (the same PYTHONHASHSEED) hashes the keys after other keys and in reverse order: a
  vocabulary (numbering keys as they come) gives other buckets.
- Independence of two hashings (field names, seeds, crosses' names): over N keys, how often the two
  buckets are equal (binomial, p = 1/m), how their difference (b - a) mod m spreads over 50 bins
  (chi-square: a constant offset, an ignored field name or seed put every difference in one bin), and
  whether their residues modulo 8 are independent (Pearson's chi-square on the 8 x 8 table: zlib.crc32,
  whose seed or prefix XORs a constant into the hash, or FNV-1a without a final mix, keep the two
  hashings' low bits tied).
- A cross is not a function of its fields' buckets: among rows whose fields share both buckets
  (n_buckets = 16), the crosses of two rows agree about 1 time in 16; any function of the buckets
  (their sum, product, or a hash of the bucket numbers) makes them agree every time.
- Signs: balanced, and among features sharing an index two signs agree about half the time; a sign
  taken from the index's bits agrees every time.
- expected_collisions: compared with n - m(1 - (1 - 1/m)^n) computed here without cancellation
  (a series in n/m where n << m), within |got - want| <= 1e-7 |want| + 1e-12 n_keys; and with the
  mean number of collisions of tables built with the learner's own bucket().

Hints follow the evidence: the value a known mistake gives (a constant offset between two hashings,
every bucket equal, a cross equal to the sum or product of its fields' indices, a sign equal to the
index's lowest bit, the formulas n^2 / 2m and m(1 - (1 - 1/m)^n)), or, after a stability failure, a
control: a third interpreter with the first one's PYTHONHASHSEED (agreeing with it shows that the
buckets follow Python's salted hash()).
"""

import ast
import functools
import json
import linecache
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

from mlprep.grading import (Call, as_float, binomial_band, check, chi_square_quantile, describe_value, expect_raises, fail, mistake_hint, raised_by,
                            scenario)

FUNCTIONS = ("bucket", "featurize", "expected_collisions")
ALPHA = 1e-9  # each statistical bound's error rate for an ideal random hash
NORMAL_Z = 7.0  # the normal bound of the simulated mean (two-sided ~2.6e-12; asymptotic)
BINS = 50  # bins of the difference (b - a) mod m between two hashings
RESIDUES = 8  # and the joint residues modulo 8 of the two buckets (the hashings' lowest bits)
RTOL, ATOL_PER_KEY = 1e-7, 1e-12  # expected_collisions: |got - want| <= RTOL |want| + ATOL_PER_KEY * n_keys
MARKER = "@@mlprep-hashed-features@@"

EDGE_INT_STR = "A value enters the key as its text, `str(value)`: the int 7 and the string \"7\" are the same value, in the same bucket."
EDGE_EMPTY = "With no fields and no crosses, featurize returns two empty arrays, the indices still of an integer dtype."
EDGE_ONE_BUCKET = "With one bucket, every key after the first collides: expected_collisions(n, 1) is n - 1 (and 0 for n = 0)."
EDGE_PRECISION = ("expected_collisions keeps its precision in real tables (n_buckets up to `2**40`): within 1e-7 relative plus"
                  " `1e-12 * n_keys`, where the textbook form `1 - (1 - 1/m)**n` loses every digit.")
EDGE_INVALID = "n_buckets < 1 or n_keys < 0 raises ValueError."


# ---------------------------------------------------------------------------------------------
# Scenarios (run in the sandbox): the grader's lines of code on the learner's names; fresh interpreters
# ---------------------------------------------------------------------------------------------
def _run_lines(names, code):
    """Run `code` (statements ending in an expression) in `names`; the expression's value."""
    tree = ast.parse(code)
    *body, last = tree.body
    exec(compile(ast.Module(body=body, type_ignores=[]), "<the grader's input>", "exec"), names)
    return eval(compile(ast.Expression(last.value), "<the grader's input>", "eval"), names)


def _packed(value):
    """A long list of integers travels as one int64 array (the judge reads types from short lists)."""
    if isinstance(value, tuple):
        return tuple(_packed(item) for item in value)
    if isinstance(value, list) and value and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in value):
        as_ints = [int(v) for v in value]
        if all(-(2**63) <= v < 2**63 for v in as_ints):
            return np.array(as_ints, dtype=np.int64)
    return value


@scenario(repro=lambda interface, code, pack=True: Call.code(code))
def evaluate(module, code, pack=True):
    """Scenario: the value of the grader's lines of code, run with np and the learner's functions in scope."""
    names = {"np": np}
    names.update({name: getattr(module, name) for name in FUNCTIONS if hasattr(module, name)})
    value = _run_lines(names, code)
    return _packed(value) if pack else value


CHILD = r"""
import importlib.util, json, sys
sys.path.insert(0, sys.argv[2])
spec = importlib.util.spec_from_file_location("submission", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
job = json.loads(sys.stdin.read())

def plain(x):
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x if x is None or isinstance(x, (bool, int, float, str)) else repr(x)

for field, value, n_buckets, seed in job["warmup"]:
    module.bucket(field, value, n_buckets, seed)
order = list(range(len(job["keys"])))[::-1 if job["reverse"] else 1]
buckets = [None] * len(order)
for i in order:
    field, value, n_buckets, seed = job["keys"][i]
    buckets[i] = plain(module.bucket(field, value, n_buckets, seed))
features = [None] * len(job["rows"])
for i in list(range(len(job["rows"])))[::-1 if job["reverse"] else 1]:
    row, fields, crosses, n_buckets, seed = job["rows"][i]
    features[i] = plain(module.featurize(row, fields, [tuple(c) for c in crosses], n_buckets, seed))
sys.stdout.write("\n" + sys.argv[3] + json.dumps({"buckets": buckets, "features": features}) + "\n")
"""


def _source_of(module):
    """The learner's file as the sandbox imported it (kept in linecache: the file itself may be out of sight)."""
    path = getattr(module, "__file__", None) or ""
    lines = linecache.getlines(path)
    if lines:
        return "".join(lines), os.path.dirname(path)
    with open(path, encoding="utf-8") as file:
        return file.read(), os.path.dirname(path)


def _fresh_repro(interface, job, runs):
    field, value, n_buckets, seed = job["keys"][0]
    seeds = " and ".join(f"PYTHONHASHSEED={run['hash_seed']}" for run in runs)
    return Call.code(f"# your file imported in fresh interpreters ({seeds}){', the keys in reverse order' * any(r['reverse'] for r in runs)}:\n"
                     f"bucket({field!r}, {value!r}, {n_buckets}, seed={seed})  # computed in each")


@scenario(repro=_fresh_repro)
def in_fresh_interpreters(module, job, runs):
    """Scenario: the learner's file imported in a fresh interpreter per run ({"hash_seed": PYTHONHASHSEED,
    "warmup": hash these keys first, "reverse": in reverse order}), each computing the job's buckets and
    features; per run, what it printed ({"buckets", "features"}) or {"error": what went wrong}."""
    source, folder = _source_of(module)
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "submission.py")
        with open(path, "w", encoding="utf-8") as file:
            file.write(source)
        processes = []
        for run in runs:
            env = {**os.environ, "PYTHONHASHSEED": str(run["hash_seed"])}
            message = json.dumps({"keys": job["keys"], "rows": job["rows"], "warmup": job["warmup"] if run["warmup"] else [],
                                  "reverse": run["reverse"]})
            process = subprocess.Popen([sys.executable, "-c", CHILD, path, folder, MARKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=env, cwd=scratch, text=True, encoding="utf-8", errors="replace")
            processes.append((process, message))
        results = []
        try:
            for process, message in processes:
                out, err = process.communicate(message, timeout=120)
                printed = [line for line in out.splitlines() if line.startswith(MARKER)]
                if process.returncode != 0 or not printed:
                    tail = (err.strip().splitlines() or ["(nothing on stderr)"])[-1]
                    results.append({"error": f"exit status {process.returncode}: {tail[:300]}"})
                else:
                    results.append(json.loads(printed[-1][len(MARKER):]))
        finally:
            for process, _ in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    return results


# ---------------------------------------------------------------------------------------------
# Bounds, judge side: binomial tails and chi-square quantiles (the toolkit's experiments), the occupancy distribution
# ---------------------------------------------------------------------------------------------
@functools.cache
def upper_bound(n, p):
    """The largest count of a Binomial(n, p) that passes: P(X > it) <= ALPHA (the toolkit's band splits its
    error rate between the two tails)."""
    return binomial_band(n, p, 2 * ALPHA)[1]


@functools.cache
def chi2_band(k):
    """(lo, hi) with P(X < lo) = P(X > hi) = ALPHA / 2 for k degrees of freedom."""
    return chi_square_quantile(ALPHA / 2, k), chi_square_quantile(1 - ALPHA / 2, k)


def true_collisions(n, m):
    """n - m(1 - (1 - 1/m)^n), without cancellation: for n << m by its alternating series
    C(n, 2)/m - C(n, 3)/m^2 + ..., else as n + m expm1(n log1p(-1/m))."""
    if n == 0:
        return 0.0
    if m == 1:
        return float(n - 1)
    if n / m > 1e-3:
        return n + m * math.expm1(n * math.log1p(-1.0 / m))
    term = n * (n - 1) / (2 * m)
    total, k = 0.0, 2
    while term != 0 and abs(term) > 1e-18 * abs(total):
        total += term
        term *= -(n - k) / ((k + 1) * m)
        k += 1
    return total


def collisions_sd(n, m):
    """The standard deviation of the number of collisions (n minus the buckets in use) of one table."""
    q1, q2 = (1 - 1 / m) ** n, (1 - 2 / m) ** n
    variance = m * q1 + m * (m - 1) * q2 - (m * q1) ** 2
    return math.sqrt(max(variance, 0.0))


# ---------------------------------------------------------------------------------------------
# Reading what came back
# ---------------------------------------------------------------------------------------------
def is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def ints_of(got, n, where, code, what):
    """`got` as an int64 array of n buckets (a long list travels packed), or a clean fail."""
    if isinstance(got, np.ndarray) and got.dtype == np.int64 and got.shape == (n,):
        return got
    items = list(got) if isinstance(got, (list, tuple)) else None
    if items is None or len(items) != n:
        fail(f"{where}: expected {n} results, got {describe_value(got)}",
             failing_input=Call.code(code), what=what, got="not a list of ints", first_index="")
    for i, item in enumerate(items):
        if not is_int(item):
            fail(f"{where}: result {i} is {describe_value(item)}; expected an int (a Python int or a NumPy integer)",
                 failing_input=Call.code(code), what=what, got="not an int", first_index="")
    fail(f"{where}: results beyond the int64 range (the largest {max(items)}); expected ints in [0, n_buckets)",
         failing_input=Call.code(code), what=what, got="n_buckets or more", first_index="")


def run(sub, code, pack=True):
    return sub.run(evaluate, code, pack)


# ---------------------------------------------------------------------------------------------
# Two hashings compared: equal how often, their difference spread how evenly
# ---------------------------------------------------------------------------------------------
def relation(a, b, m):
    """How b relates to a, as the judge reads it: "equal", "shifted" (b - a constant mod m), or ""."""
    if np.array_equal(a, b):
        return "equal"
    d = (b - a) % m
    return "shifted" if np.all(d == d[0]) else ""


def judge_independent(a, b, m, *, setup, names, what, hints, unit="keys"):
    """a and b (int64, reduced mod m) must look like two independent uniform hashings of the same keys.
    `setup`: the lines that compute a and b (as the failing input shows them); `names`: the two
    hashings in words; hints: {"equal": ..., "shifted": ...}, said when the values show it."""
    n = len(a)
    equal = int(np.sum(a == b))
    top = upper_bound(n, 1 / m)
    kind = relation(a, b, m)
    if equal > top:
        code = f"{setup}\nsum(x == y for x, y in zip(a, b))  # about {n / m:g}; more than {top} fails"
        fail(f"{names[1]} equals {names[0]} for {equal} of {n} {unit}; two independent hashings into {m} buckets agree about {n / m:g}"
             f" times (at most {top} pass, a bound at {ALPHA:g}). " + hints.get(kind, hints.get("dependent", "")),
             failing_input=Call.code(code), what=what, got=kind or "agree too often", first_index="")
    d = (b - a) % m
    counts = np.bincount(d * BINS // m, minlength=BINS)
    expected = n / BINS
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    lo, hi = chi2_band(BINS - 1)
    if not lo <= chi2 <= hi:
        code = f"{setup}\nnp.bincount([(y - x) % {m} * {BINS} // {m} for x, y in zip(a, b)], minlength={BINS})  # about {expected:g} each"
        fullest = int(np.argmax(counts))
        fail(f"the difference ({names[1]} - {names[0]}) mod {m} is not spread evenly over {BINS} bins: chi-square {chi2:.4g} with"
             f" {BINS - 1} degrees of freedom, outside [{lo:.4g}, {hi:.4g}] (bounds at {ALPHA:g}); {int(counts[fullest])} of {n} {unit} in bin"
             f" {fullest}, where about {expected:g} were expected. " + hints.get(kind, hints.get("dependent", "")),
             failing_input=Call.code(code), what=what, got=kind or "dependent", first_index="")
    if m % RESIDUES == 0:  # the lowest bits: a hash whose bits combine linearly keeps them related from one hashing to the other
        joint = np.bincount((a % RESIDUES) * RESIDUES + b % RESIDUES, minlength=RESIDUES**2).reshape(RESIDUES, RESIDUES)
        expected = np.outer(joint.sum(axis=1), joint.sum(axis=0)) / n  # independence, whatever each one's own spread
        seen = expected > 0
        chi2 = float(((joint - expected)[seen] ** 2 / expected[seen]).sum())
        df = (int(np.sum(joint.sum(axis=1) > 0)) - 1) * (int(np.sum(joint.sum(axis=0) > 0)) - 1)
        if df > 0 and chi2 > chi2_band(df)[1]:
            hi = chi2_band(df)[1]
            code = f"{setup}\nnp.bincount([x % 8 * 8 + y % 8 for x, y in zip(a, b)], minlength=64).reshape(8, 8)"
            fail(f"{names[1]} and {names[0]} are tied in their lowest bits: their residues modulo {RESIDUES} are far from independent"
                 f" (Pearson's chi-square {chi2:.4g} with {df} degrees of freedom, above {hi:.4g}, a bound at {ALPHA / 2:g}). A hash whose bits"
                 " combine linearly (zlib.crc32, whose seed or prefix only XORs a constant into the result; FNV-1a without a final mix)"
                 " keeps its low bits related from one key or seed to the next: use hashlib, or finish with a mixing step (MurmurHash3's"
                 " fmix64, splitmix64).", failing_input=Call.code(code), what=what, got="low bits related", first_index="")


# ---------------------------------------------------------------------------------------------
# Checks: bucket()
# ---------------------------------------------------------------------------------------------
RANGE_VALUES = [0, 7, -3, 2**70, "", "u17", "Zürich", "東京"]
RANGE_VALUES_TEXT = "[0, 7, -3, 2**70, '', 'u17', 'Zürich', '東京']"
RANGE_BUCKETS = [1, 2, 7, 1000, 2**20, 2**31]
RANGE_SEEDS = [0, 1, 2**32 - 1]


@check("bucket returns an int in [0, n_buckets) for any value, n_buckets and seed", uses=("bucket",))
def bucket_range(sub, ctx):
    setup = (f"values = {RANGE_VALUES_TEXT}\n"
             "cases = [('user', v, m, s) for v in values for m in [1, 2, 7, 1000, 2**20, 2**31] for s in [0, 1, 2**32 - 1]]\n"
             "got = [bucket(f, v, m, seed=s) for f, v, m, s in cases]")
    cases = [("user", v, m, s) for v in RANGE_VALUES for m in RANGE_BUCKETS for s in RANGE_SEEDS]
    got = run(sub, f"{setup}\ngot", pack=False)
    code = f"{setup}\n[(case, b) for case, b in zip(cases, got) if not 0 <= b < case[2]]  # must be empty"
    if not isinstance(got, list) or len(got) != len(cases):
        fail(f"bucket() on {len(cases)} cases: expected a list of {len(cases)} results, got {describe_value(got)}", failing_input=Call.code(code),
             what="bucket(field, value, n_buckets, seed)", got="not a list of ints", first_index="")
    for (field, value, m, seed), b in zip(cases, got):
        call = f"bucket({field!r}, {value!r}, {m}, seed={seed})"
        if not is_int(b):
            fail(f"{call} returned {describe_value(b)}: expected an int in [0, {m})", failing_input=Call.code(code),
                 what="bucket(field, value, n_buckets, seed)", got="not an int", first_index="")
        if b < 0:
            fail(f"{call} returned {int(b)}: expected an int in [0, n_buckets) = [0, {m}). A negative bucket is what a signed hash gives"
                 " with a remainder that keeps the dividend's sign (np.fmod, math.fmod, C's or Java's %): read the hash as unsigned, or use"
                 " Python's %, which is never negative for n_buckets > 0.", failing_input=Call.code(code),
                 what="bucket(field, value, n_buckets, seed)", got="negative", first_index="")
        if b >= m:
            fail(f"{call} returned {int(b)}: expected an int in [0, n_buckets) = [0, {m}); reduce the hash modulo n_buckets.",
                 failing_input=Call.code(code), what="bucket(field, value, n_buckets, seed)", got="n_buckets or more", first_index="")


STABLE_JOB = {
    "keys": ([["user", f"u{i}", 2**20, 0] for i in range(20)] + [["ad", i, 2**20, 3] for i in range(10)]
             + [["site", s, 2**20, 0] for s in ["news.example", "Zürich", "東京", ""]]),
    "rows": [[{"user": f"u{i}", "ad": 100 + i, "site": "news.example"}, ["user", "ad"], [["user", "ad"], ["user", "ad", "site"]], 2**20, seed]
             for i in range(4) for seed in (0, 3)],
    "warmup": [["user", f"w{i}", 2**20, 0] for i in range(50)],
}


def _first_difference(one, other):
    """(where, in words) the first bucket or feature that differs between two runs, or None."""
    for i, (x, y) in enumerate(zip(one["buckets"], other["buckets"])):
        if x != y:
            field, value, n_buckets, seed = STABLE_JOB["keys"][i]
            return i, f"bucket({field!r}, {value!r}, {n_buckets}, seed={seed})", x, y
    for i, (x, y) in enumerate(zip(one["features"], other["features"])):
        if x != y:
            row, fields, crosses, n_buckets, seed = STABLE_JOB["rows"][i]
            return len(STABLE_JOB["keys"]) + i, f"featurize({row!r}, {fields!r}, {[tuple(c) for c in crosses]!r}, {n_buckets}, seed={seed})", x, y
    return None


def _fresh_input(where, runs):
    """The failing input of a fresh-interpreter check: the call, and in words where it ran (distinct per check)."""
    if any(run["reverse"] for run in runs):
        return Call.code(f"# in a fresh interpreter (PYTHONHASHSEED=1), then in another after 50 other keys, the keys in reverse order:\n"
                         f"{where}  # the same in both, whatever came before")
    seeds = " and ".join(f"PYTHONHASHSEED={run['hash_seed']}" for run in runs)
    return Call.code(f"# your file imported in fresh interpreters ({seeds}), in each:\n{where}  # the same in every process")


def _fresh_runs(sub, runs, what):
    results = sub.run(in_fresh_interpreters, STABLE_JOB, runs)
    field, value, n_buckets, seed = STABLE_JOB["keys"][0]
    shown = _fresh_input(f"bucket({field!r}, {value!r}, {n_buckets}, seed={seed})", runs)
    if not isinstance(results, list) or len(results) != len(runs):
        fail(f"{what}: the fresh interpreters' results came back as {describe_value(results)}", failing_input=shown, what=what, got="no results",
             first_index="")
    for run_spec, result in zip(runs, results):
        if not isinstance(result, dict) or "error" in result:
            error = result.get("error") if isinstance(result, dict) else describe_value(result)
            fail(f"{what}: your file, imported in a fresh interpreter (PYTHONHASHSEED={run_spec['hash_seed']}), did not finish: {error}",
                 failing_input=shown, what=what, got="no results", first_index="")
        if len(result.get("buckets", [])) != len(STABLE_JOB["keys"]) or len(result.get("features", [])) != len(STABLE_JOB["rows"]):
            fail(f"{what}: a fresh interpreter's results came back incomplete", failing_input=shown, what=what, got="no results", first_index="")
    return results


def _differ_message(where, x, y, first, second, moved, total):
    return f"{where} gave {x!r} {first} and {y!r} {second} ({moved} of {total} results differ)"


@check("the same (field, value, seed) gives the same bucket and features in every process (PYTHONHASHSEED=1 and 2)")
def stable_across_processes(sub, ctx):
    runs = [{"hash_seed": 1, "warmup": False, "reverse": False}, {"hash_seed": 2, "warmup": False, "reverse": False}]
    first, second = _fresh_runs(sub, runs, "bucket() and featurize() in fresh interpreters")
    found = _first_difference(first, second)
    if found is None:
        return
    index, where, x, y = found
    everything = first["buckets"] + first["features"]
    moved = sum(a != b for a, b in zip(everything, second["buckets"] + second["features"]))

    def why():
        """A control: a third interpreter with the first one's PYTHONHASHSEED."""
        again = sub.control(in_fresh_interpreters, STABLE_JOB, runs[:1])
        if not (isinstance(again, list) and len(again) == 1 and isinstance(again[0], dict) and "buckets" in again[0]):
            return ""
        if _first_difference(first, again[0]) is None:
            return ("A third interpreter with PYTHONHASHSEED=1 again agrees with the first: your buckets follow Python's hash(), which is"
                    " salted per process for str, bytes and tuples of them (only ints hash to themselves). A model trained with one"
                    " process's buckets reads other weights at serving. Hash the key's UTF-8 bytes with hashlib (blake2b, md5) or a hash"
                    " you write (FNV-1a, MurmurHash3).")
        return ("Even two interpreters with the same PYTHONHASHSEED disagree: something in your hashing changes from run to run (an"
                " unseeded random draw, id(), the time).")

    differ = _differ_message(where, x, y, "with PYTHONHASHSEED=1", "with PYTHONHASHSEED=2", moved, len(everything))
    fail(f"In fresh interpreters importing your file, {differ}.",
         failing_input=_fresh_input(where, runs), explain=why, what="results in fresh interpreters", got="differ", first_index=str(index))


@check("a value's bucket does not depend on what was hashed before: no vocabulary, unseen values need no entry")
def no_vocabulary(sub, ctx):
    runs = [{"hash_seed": 1, "warmup": False, "reverse": False}, {"hash_seed": 1, "warmup": True, "reverse": True}]
    plain, shuffled = _fresh_runs(sub, runs, "bucket() and featurize() in fresh interpreters")
    found = _first_difference(plain, shuffled)
    if found is None:
        return
    index, where, x, y = found
    everything = plain["buckets"] + plain["features"]
    moved = sum(a != b for a, b in zip(everything, shuffled["buckets"] + shuffled["features"]))
    differ = _differ_message(where, x, y, "when the keys came in order", "after 50 other keys, with the keys in reverse order", moved, len(everything))
    fail(f"In two fresh interpreters (both PYTHONHASHSEED=1), {differ}."
         " A bucket must be a function of (field, value, seed) alone: numbering keys as they arrive (a vocabulary, a counter) gives every"
         " process its own numbering, and an id first seen at serving gets a bucket the model never trained. Hash the key instead.",
         failing_input=_fresh_input(where, runs),
         what="results after other keys", got="differ", first_index=str(index))


UNIFORM_N, UNIFORM_M = 100_000, 1000


@check("buckets are uniform: a chi-square bound over 10^5 ids", uses=("bucket",))
def uniform_buckets(sub, ctx):
    setup = f"got = [bucket('user', i, {UNIFORM_M}) for i in range({UNIFORM_N})]"
    got = np.mod(ints_of(run(sub, f"{setup}\ngot"), UNIFORM_N, "bucket('user', i, 1000) for 10^5 ids", setup, "bucket counts"), UNIFORM_M)
    counts = np.bincount(got, minlength=UNIFORM_M)
    expected = UNIFORM_N / UNIFORM_M
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    lo, hi = chi2_band(UNIFORM_M - 1)
    if lo <= chi2 <= hi:
        return
    code = (f"counts = np.bincount([bucket('user', i, {UNIFORM_M}) for i in range({UNIFORM_N})], minlength={UNIFORM_M})\n"
            f"float(((counts - {expected:g}) ** 2 / {expected:g}).sum())  # chi-square: {lo:.0f} to {hi:.0f} pass")
    if chi2 > hi:
        used = int(np.sum(counts > 0))
        fail(f"the ids 0..99999 of field 'user' in {UNIFORM_M} buckets are not uniform: chi-square {chi2:.4g} with {UNIFORM_M - 1} degrees of"
             f" freedom, above {hi:.4g} (a bound at {ALPHA / 2:g}); {used} of {UNIFORM_M} buckets are used, the fullest holds"
             f" {int(counts.max())} ids where about {expected:g} were expected. A hash must mix every byte of the key into every bit of"
             " the bucket: a sum of the bytes or a few characters of the key do not, nor does a hash whose low bits mix poorly (FNV-1a,"
             " a polynomial hash modulo 2**64) taken modulo an even n_buckets without a final mixing step.", failing_input=Call.code(code), what="bucket counts",
             got="uneven", first_index="")
    fail(f"the ids 0..99999 of field 'user' in {UNIFORM_M} buckets are spread more evenly than any hash spreads them: chi-square {chi2:.4g}"
         f" with {UNIFORM_M - 1} degrees of freedom, below {lo:.4g} (a bound at {ALPHA / 2:g}); each bucket holds between"
         f" {int(counts.min())} and {int(counts.max())} ids. That is what numbering the keys in order (a counter, a vocabulary, the id"
         " itself modulo n_buckets) gives, not hashing.", failing_input=Call.code(code), what="bucket counts", got="too even", first_index="")


PAIR_N, PAIR_M = 10_000, 1000


@check("the field name is part of the key: bucket('user', v) and bucket('ad', v) are independent", uses=("bucket",))
def field_name_in_key(sub, ctx):
    setup = f"a = [bucket('user', v, {PAIR_M}) for v in range({PAIR_N})]\nb = [bucket('ad', v, {PAIR_M}) for v in range({PAIR_N})]"
    a, b = run(sub, f"{setup}\na, b")
    a = np.mod(ints_of(a, PAIR_N, "bucket('user', v, 1000)", setup, "bucket('ad', v) against bucket('user', v)"), PAIR_M)
    b = np.mod(ints_of(b, PAIR_N, "bucket('ad', v, 1000)", setup, "bucket('ad', v) against bucket('user', v)"), PAIR_M)
    judge_independent(a, b, PAIR_M, setup=setup, names=("bucket('user', v)", "bucket('ad', v)"), what="bucket('ad', v) against bucket('user', v)",
                      hints={"equal": "The field name is not part of the key: user 7 and ad 7 share every weight. Hash the name and the value"
                                      " together ('user=7').",
                             "shifted": "bucket('ad', v) is bucket('user', v) plus a constant: the name and the value were hashed apart and"
                                        " combined afterwards. Hash them together as one key ('user=7')."})


@check("the field and the value are kept apart in the key: ('ab1', 'v1') and ('ab', '1v1') are different keys", uses=("bucket",))
def key_has_a_separator(sub, ctx):
    n = 500
    setup = (f"names = ['ab', 'user', 'x'] * {n // 3 + 1}\n"
             f"a = [bucket(f'{{names[i]}}{{i}}', f'v{{i}}', 2**20) for i in range({n})]\n"
             f"b = [bucket(names[i], f'{{i}}v{{i}}', 2**20) for i in range({n})]")
    a, b = run(sub, f"{setup}\na, b")
    what = "bucket(name + s, v) against bucket(name, s + v)"
    a = np.mod(ints_of(a, n, "bucket(name + s, v, 2**20)", setup, what), 2**20)
    b = np.mod(ints_of(b, n, "bucket(name, s + v, 2**20)", setup, what), 2**20)
    equal = int(np.sum(a == b))
    top = upper_bound(n, 2.0**-20)
    if equal <= top:
        return
    hint = (" The field name and the value were joined without a separator: 'ab1' + 'v1' and 'ab' + '1v1' are the same text. Put a"
            " character between them that no field name holds ('ab1=v1').") if equal == n else ""
    fail(f"bucket('ab1', 'v1') and bucket('ab', '1v1'), and {n - 1} pairs like them (the name's end moved into the value), fall in the same"
         f" bucket of 2**20 for {equal} of {n} pairs; different keys share a bucket about 1 time in 2**20 (at most {top} pass).{hint}",
         failing_input=Call.code(f"{setup}\nsum(x == y for x, y in zip(a, b))  # different keys: at most {top} of {n} agree"),
         what=what, got="equal" if equal == n else "agree too often", first_index="")


SEED_PAIRS = [(0, 1), (12345, 2**32 - 1)]


@check("different seeds give independent hashings", uses=("bucket",))
def seeds_independent(sub, ctx):
    for s0, s1 in SEED_PAIRS:
        setup = (f"a = [bucket('user', f'u{{i}}', {PAIR_M}, seed={s0}) for i in range({PAIR_N})]\n"
                 f"b = [bucket('user', f'u{{i}}', {PAIR_M}, seed={s1}) for i in range({PAIR_N})]")
        a, b = run(sub, f"{setup}\na, b")
        what = f"seed={s1} against seed={s0}"
        a = np.mod(ints_of(a, PAIR_N, f"bucket('user', f'u{{i}}', 1000, seed={s0})", setup, what), PAIR_M)
        b = np.mod(ints_of(b, PAIR_N, f"bucket('user', f'u{{i}}', 1000, seed={s1})", setup, what), PAIR_M)
        judge_independent(a, b, PAIR_M, setup=setup, names=(f"the bucket with seed={s0}", f"the bucket with seed={s1}"), what=what,
                          hints={"equal": "The seed changes nothing: it must be part of what is hashed (a salt, or bytes before the key).",
                                 "shifted": "Every bucket moved by the same amount: the seed was added to the hash or the bucket. Hash it"
                                            " with the key instead (a salt, or bytes before the key), so each seed is a new hashing."})


INT_VALUES = [0, 7, -3, 123456789, 2**40]


@check("an int value and its decimal string share a bucket: bucket('user', 7) == bucket('user', '7')", uses=("bucket",), edge=EDGE_INT_STR)
def int_and_string_alike(sub, ctx):
    setup = f"values = {INT_VALUES!r}\npairs = [(bucket('user', v, 2**20, seed=3), bucket('user', str(v), 2**20, seed=3)) for v in values]"
    got = run(sub, f"{setup}\npairs", pack=False)
    code = f"{setup}\n[v for v, (x, y) in zip(values, pairs) if x != y]  # must be empty"
    if not isinstance(got, list) or len(got) != len(INT_VALUES):
        fail(f"bucket() on {len(INT_VALUES)} pairs: got {describe_value(got)}", failing_input=Call.code(code), what="bucket of v and of str(v)",
             got="no results", first_index="")
    apart = [v for v, pair in zip(INT_VALUES, got) if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[0] == pair[1])]
    if apart:
        v = apart[0]
        fail(f"bucket('user', {v!r}, 2**20, seed=3) and bucket('user', {str(v)!r}, 2**20, seed=3) differ ({len(apart)} of {len(INT_VALUES)}"
             " values): a log stores the id as text, the serving code may hold it as an int, and both must reach the same weight. Build the"
             " key from str(value) (repr(value), or hashing the value's type with it, keeps them apart).", failing_input=Call.code(code),
             what="bucket of v and of str(v)", got="differ", first_index="")


# ---------------------------------------------------------------------------------------------
# Checks: featurize()
# ---------------------------------------------------------------------------------------------
def featurize_result(got, n, where, code, m=None):
    """(indices, signs) of length n: integer indices (in [0, m) when m is given), signs exactly +1 or -1."""
    shown = Call.code(code)
    if not isinstance(got, (list, tuple)) or len(got) != 2:
        fail(f"{where}: expected (indices, signs), got {describe_value(got)}", failing_input=shown, what="featurize(...)", got="not a pair",
             first_index="")
    indices, signs = got
    for name, value in (("indices", indices), ("signs", signs)):
        if not isinstance(value, np.ndarray) or value.shape != (n,):
            fail(f"{where}: expected {name} as a 1-D NumPy array of length {n} (one per field, then one per cross), got {describe_value(value)}",
                 failing_input=shown, what=name, got="shape", first_index="")
    if indices.dtype.kind not in "iu":
        fail(f"{where}: expected integer indices, got dtype {indices.dtype}", failing_input=shown, what="indices", got="dtype", first_index="")
    if signs.dtype.kind not in "iuf" or not np.all((signs == 1) | (signs == -1)):
        bad = signs[~((signs == 1) | (signs == -1))] if signs.dtype.kind in "biuf" else signs
        fail(f"{where}: every sign must be +1 or -1, got {bad[:5].tolist()} (dtype {signs.dtype})", failing_input=shown, what="signs",
             got="not +1 or -1", first_index="")
    if m is not None and (np.any(indices < 0) or np.any(indices >= m)):
        first = int(np.flatnonzero((indices < 0) | (indices >= m))[0])
        fail(f"{where}: index {first} is {int(indices[first])}, outside [0, n_buckets) = [0, {m})", failing_input=shown, what="indices",
             got="negative" if indices[first] < 0 else "n_buckets or more", first_index="")
    return indices, signs


FEATURE_CASES = [
    ({"user": 7, "ad": "a42", "site": "news.example", "hour": 13}, ["user", "ad", "site"], [("user", "ad"), ("user", "ad", "site")], 1000, 0),
    ({"user": "u99", "ad": 3, "site": "東京", "hour": 0}, ["user", "ad", "site"], [("user", "ad"), ("user", "ad", "site")], 2**20, 5),
    ({"user": 7, "ad": "a42", "device": "phone"}, ["device"], [("user", "device")], 2**20, 2**32 - 1),
]


@check("featurize: one index per field, then per cross; a field's index is bucket(field, row[field], n_buckets, seed); signs +1 or -1")
def featurize_layout(sub, ctx):
    for row, fields, crosses, m, seed in FEATURE_CASES:
        setup = (f"row = {row!r}\nfields, crosses = {fields!r}, {crosses!r}\nindices, signs = featurize(row, fields, crosses, {m}, seed={seed})\n"
                 f"want = [bucket(f, row[f], {m}, seed={seed}) for f in fields]")
        code = f"{setup}\nindices.tolist(), signs.tolist(), want  # indices[:{len(fields)}] must equal want"
        got, want = run(sub, f"{setup}\n(indices, signs), want", pack=False)
        where = f"featurize(row, {fields!r}, {crosses!r}, {m}, seed={seed})"
        indices, _ = featurize_result(got, len(fields) + len(crosses), where, code, m)
        if not isinstance(want, list) or len(want) != len(fields) or indices[: len(fields)].tolist() != [w if is_int(w) else None for w in want]:
            fail(f"{where}: the fields' indices are {indices[: len(fields)].tolist()}, but bucket() gives {want!r} for the same fields, values,"
                 " n_buckets and seed: a field's index is its bucket (pass seed on, and hash the same key)",
                 failing_input=Call.code(code), what="indices of the fields", got="not bucket()", first_index="")


@check("featurize with no fields and no crosses returns two empty arrays, the indices of an integer dtype", uses=("featurize",), edge=EDGE_EMPTY)
def featurize_empty(sub, ctx):
    code = "indices, signs = featurize({'user': 7}, [], [], 1000)\nindices.dtype, indices.shape, signs.shape  # an integer dtype, (0,), (0,)"
    got = run(sub, "featurize({'user': 7}, [], [], 1000)", pack=False)
    featurize_result(got, 0, "featurize({'user': 7}, [], [], 1000)", code, 1000)


PAIRS_CODE = "pairs = [g[k:k + 2] for g in groups.values() for k in range(0, len(g) - 1, 2)]"  # disjoint pairs within each group
# (A failing input never shows a count that depends on the learner's hash: the diagnosis compares inputs as text.)
STACKED = "\nnp.array([ind for ind, _ in out]), np.array([sg for _, sg in out])"  # the sandbox sends two arrays, not thousands of pairs


def stacked(got, n, k, where, code, m):
    """featurize's results for n rows, stacked in the sandbox as (indices, signs) of shape (n, k): the indices
    reduced mod m (the range is judged by featurize's layout check), the signs exactly +1 or -1."""
    shown = Call.code(code)
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(a, np.ndarray) and a.shape == (n, k) for a in got)):
        fail(f"{where} for {n} rows: expected (indices, signs) of length {k} each, got {describe_value(got)}", failing_input=shown,
             what="featurize(...)", got="shape", first_index="")
    indices, signs = got
    if indices.dtype.kind not in "iu":
        fail(f"{where}: expected integer indices, got dtype {indices.dtype}", failing_input=shown, what="indices", got="dtype", first_index="")
    if signs.dtype.kind not in "iuf" or not np.all((signs == 1) | (signs == -1)):
        fail(f"{where}: every sign must be +1 or -1, got dtype {signs.dtype}, values {np.unique(signs)[:5].tolist()}", failing_input=shown,
             what="signs", got="not +1 or -1", first_index="")
    return np.mod(indices.astype(np.int64), m), signs.astype(np.int64)


@check("a cross is hashed from its fields' names and values: it changes with either value, and with the names", uses=("featurize",))
def cross_from_names_and_values(sub, ctx):
    n, m = 1000, 2**20
    call = "featurize({{'user': i{}, 'ad': 10**6 + i{}}}, ['user'], [('user', 'ad')], 2**20)[0][1]"
    setup = (f"base = [{call.format('', '')} for i in range({n})]\n"
             f"user_changed = [{call.format(' + 5000', '')} for i in range({n})]\n"
             f"ad_changed = [{call.format('', ' + 5000')} for i in range({n})]")
    results = run(sub, f"{setup}\nbase, user_changed, ad_changed")
    where = "featurize(row, ['user'], [('user', 'ad')], 2**20)"
    base, user_changed, ad_changed = (np.mod(ints_of(r, n, f"the crosses of {where}", setup, "cross"), m) for r in results)
    top = upper_bound(n, 1 / m)
    for changed, name in ((user_changed, "user"), (ad_changed, "ad")):
        equal = int(np.sum(changed == base))
        if equal > top:
            fail(f"the cross ('user', 'ad') keeps its index for {equal} of {n} rows when only the value of '{name}' changes (i to i + 5000);"
                 f" a cross hashed from both values changes but about 1 time in 2**20 (at most {top} pass): the value of '{name}' is not in"
                 " the cross's key.", failing_input=Call.code(f"{setup}\nsum(x == y for x, y in zip(base, {name}_changed))  # at most {top}"
                                                               f" of {n} stay"),
                 what=f"cross after a new {name}", got="unchanged" if equal == n else "agree too often", first_index="")
    n, m = 5000, 1000
    rows = f"rows = [{{'user': i, 'ad': 10**6 + i, 'site': i, 'app': 10**6 + i}} for i in range({n})]"
    setup = (f"{rows}\nout = [featurize(row, ['user'], [('user', 'ad'), ('site', 'app')], {m})[0] for row in rows]\n"
             "a, b = [int(x[1]) for x in out], [int(x[2]) for x in out]")
    where = f"featurize(row, ['user'], [('user', 'ad'), ('site', 'app')], {m})"
    got = run(sub, f"{rows}\nout = [featurize(row, ['user'], [('user', 'ad'), ('site', 'app')], {m}) for row in rows]{STACKED}", pack=False)
    indices, _ = stacked(got, n, 3, where, f"{setup}\na[:10], b[:10]", m)
    judge_independent(indices[:, 1], indices[:, 2], m, setup=setup, names=("the cross ('user', 'ad')", "the cross ('site', 'app')"),
                      what="cross ('site', 'app') against ('user', 'ad')", unit="rows",
                      hints={"equal": "Crosses of other fields with the same values share their index: the cross's key holds the values"
                                      " without the field names. Hash 'user=7' and 'ad=42' together, names included."})


@check("a cross is not computed from its fields' buckets: rows whose fields share both buckets get independent crosses", uses=("featurize",))
def cross_not_from_buckets(sub, ctx):
    n, m = 2000, 16
    rows = f"rows = [{{'user': i, 'ad': (7919 * i) % 100003}} for i in range({n})]"
    setup = f"{rows}\nout = [featurize(row, ['user', 'ad'], [('user', 'ad')], {m})[0] for row in rows]"
    where = f"featurize(row, ['user', 'ad'], [('user', 'ad')], {m})"
    got = run(sub, f"{rows}\nout = [featurize(row, ['user', 'ad'], [('user', 'ad')], {m}) for row in rows]{STACKED}", pack=False)
    ind, _ = stacked(got, n, 3, where, f"{setup}\nout[:10]", m)
    groups = {}
    for user, ad, cross in ind.tolist():
        groups.setdefault((user, ad), []).append(cross)
    pairs = [(g[k], g[k + 1]) for g in groups.values() for k in range(0, len(g) - 1, 2)]
    agree = sum(x == y for x, y in pairs)
    top = upper_bound(len(pairs), 1 / m)
    if agree <= top:
        return
    if np.array_equal(ind[:, 2], (ind[:, 0] + ind[:, 1]) % m):
        kind, hint = "sum", "The cross is (index of 'user' + index of 'ad') % n_buckets."
    elif np.array_equal(ind[:, 2], (ind[:, 0] * ind[:, 1]) % m):
        kind, hint = "product", "The cross is (index of 'user' * index of 'ad') % n_buckets."
    elif agree == len(pairs):
        kind, hint = "function of the buckets", "The cross follows its fields' buckets, not their values."
    else:
        kind, hint = "agree too often", ("The crosses agree far more often than chance, though not always: the cross's hash keeps the structure of"
                                         " its fields' low bits (a hash without a final mixing step does), or it depends on their buckets.")
    code = (f"{setup}\ngroups = {{}}\nfor ind in out:\n    groups.setdefault((int(ind[0]), int(ind[1])), []).append(int(ind[2]))\n"
            f"{PAIRS_CODE}\nsum(x == y for x, y in pairs) / len(pairs)  # about 1/{m}")
    fail(f"Of {len(pairs)} pairs of rows whose 'user' and 'ad' share both buckets (different values), {agree} get the same cross; crosses"
         f" hashed from the values agree about 1 time in {m} (at most {top} pass). {hint}"
         + ("" if kind == "agree too often" else " Once two values collide, every cross they enter collides too: hash the fields' names and"
            " values together ('user=7' with 'ad=42')."),
         failing_input=Call.code(code), what="crosses of rows with the same buckets", got=kind, first_index="")


@check("signs are balanced and independent of the index: features sharing a bucket agree in sign about half the time", uses=("featurize",))
def signs_independent(sub, ctx):
    n, m = 3000, 16
    rows = f"rows = [{{'user': i, 'ad': 50000 + i}} for i in range({n})]"
    setup = (f"{rows}\nout = [featurize(row, ['user', 'ad'], [('user', 'ad')], {m}) for row in rows]\n"
             "pairs = [(int(i), int(s)) for ind, sg in out for i, s in zip(ind, sg)]")
    where = f"featurize(row, ['user', 'ad'], [('user', 'ad')], {m})"
    got = run(sub, f"{rows}\nout = [featurize(row, ['user', 'ad'], [('user', 'ad')], {m}) for row in rows]{STACKED}", pack=False)
    indices, signs = stacked(got, n, 3, where, f"{setup}\npairs[:10]", m)
    index, sign = indices.ravel(), signs.ravel()
    total = len(sign)
    plus = int(np.sum(sign == 1))
    lo, hi = binomial_band(total, 0.5, ALPHA)
    if not lo <= plus <= hi:
        kind = "all +1" if plus == total else "all -1" if plus == 0 else "unbalanced"
        fail(f"{where}: {plus} of {total} signs are +1; a sign independent of everything else is +1 about half the time ({lo} to {hi} pass)."
             + (" Every sign is the same: the sign must come from the hash, so that colliding features cancel out on average instead of"
                " adding up." if kind != "unbalanced" else ""),
             failing_input=Call.code(f"{setup}\nsum(s == 1 for _, s in pairs)  # about {total // 2} of {total}: {lo} to {hi} pass"),
             what="signs that are +1", got=kind, first_index="")
    groups = {}
    for i, s in zip(index.tolist(), sign.tolist()):
        groups.setdefault(i, []).append(s)
    pairs = [(g[k], g[k + 1]) for g in groups.values() for k in range(0, len(g) - 1, 2)]
    agree = sum(x == y for x, y in pairs)
    top = upper_bound(len(pairs), 0.5)
    if agree <= top:
        return
    if np.array_equal(sign, 1 - 2 * (index & 1)) or np.array_equal(sign, 2 * (index & 1) - 1):
        kind = "the index's lowest bit"
        hint = (" Every sign is +1 exactly on even indices (or exactly on odd ones): it is the bucket's own lowest bit. Take it from bits"
                " the bucket does not use (another 8 bytes of the digest, or a second hash).")
    else:
        kind, hint = "agree too often", " The sign follows the index: take it from bits of the hash the bucket does not use."
    fail(f"Of {len(pairs)} pairs of features that share an index (different keys, {m} buckets), {agree} have the same sign; independent signs"
         f" agree about half the time (at most {top} pass).{hint} Tied to the bucket, colliding features add up instead of cancelling.",
         failing_input=Call.code(f"{setup}\ngroups = {{}}\nfor i, s in pairs:\n    groups.setdefault(i, []).append(s)\n"
                                 f"{PAIRS_CODE}\nsum(x == y for x, y in pairs) / len(pairs)  # about 1/2"),
         what="signs of features sharing an index", got=kind, first_index="")


# ---------------------------------------------------------------------------------------------
# Checks: expected_collisions()
# ---------------------------------------------------------------------------------------------
def collision_mistakes(n, m):
    q = (1 - 1 / m) ** n
    return {
        "n**2 / (2 * n_buckets), the birthday approximation, which holds only for n_keys far below n_buckets (and counts pairs, not keys)": n * n / (2 * m),
        "n_keys * (n_keys - 1) / (2 * n_buckets): the expected number of colliding pairs, not of keys that collide": n * (n - 1) / (2 * m),
        "n_buckets * (1 - (1 - 1/n_buckets)**n_keys): the expected number of buckets in use; the collisions are n_keys minus it": m * (1 - q),
        "n_buckets * (1 - 1/n_buckets)**n_keys: the expected number of empty buckets": m * q,
        "1 - (1 - 1/n_buckets)**n_keys: the chance that one given bucket is used": 1 - q,
    }


def judge_collisions(sub, n, m, *, naive_hint=False):
    got = as_float(sub.call("expected_collisions", n, m), what=f"expected_collisions({n}, {m})")
    want = true_collisions(n, m)
    atol = ATOL_PER_KEY * n
    if abs(got - want) <= RTOL * abs(want) + atol:
        return
    hint = mistake_hint(got, collision_mistakes(n, m), want=want, rtol=1e-9, atol=1e-12, say="Your value is {}.")
    if not hint and naive_hint and abs(got - (n - m * (1 - (1 - 1 / m) ** n))) <= 1e-9 * max(abs(got), 1e-300):
        hint = (f"Your value is the textbook n - m * (1 - (1 - 1/m)**n) in float64: 1 - 1/{m} is rounded to the nearest float64 and the"
                f" rounding error, raised to the power {n}, swamps a result of {want:.6g}. Compute 1 - (1 - 1/m)**n as"
                " -math.expm1(n * math.log1p(-1/m)), which keeps every digit.")
    fail(f"expected_collisions({n}, {m}): expected {want:.10g} (n - m(1 - (1 - 1/m)^n)), got {got:.10g}; allowed |got - expected| <="
         f" {RTOL:g} * |expected| + {ATOL_PER_KEY:g} * n_keys. {hint}".strip(),
         what="expected_collisions(n_keys, n_buckets)", first_index=f"({n}, {m})", got=f"{got:.17g}", expected=f"{want:.17g}", rtol=RTOL,
         atol=atol)


FORMULA_CASES = [(0, 10), (1, 10), (2, 10), (10, 10), (23, 365), (100, 1000), (1000, 1000), (2000, 1000), (5000, 1000), (10_000, 10_000),
                 (100_000, 1000)]


@check("expected_collisions equals n - m(1 - (1 - 1/m)^n)", uses=("expected_collisions",))
def collisions_formula(sub, ctx):
    for n, m in FORMULA_CASES:
        judge_collisions(sub, n, m)


@check("expected_collisions with one bucket: n_keys - 1 (0 for no keys)", uses=("expected_collisions",), edge=EDGE_ONE_BUCKET)
def collisions_one_bucket(sub, ctx):
    for n in (0, 1, 7):
        judge_collisions(sub, n, 1)


PRECISION_CASES = [(1000, 2**24), (10_000, 2**30), (10**6, 2**32), (2, 2**40)]


@check("expected_collisions keeps its precision for large tables (n_buckets up to 2**40)", uses=("expected_collisions",), edge=EDGE_PRECISION)
def collisions_precision(sub, ctx):
    for n, m in PRECISION_CASES:
        judge_collisions(sub, n, m, naive_hint=True)


SIMULATIONS = [(1000, 1000, 10), (2000, 500, 5), (300, 2000, 20)]  # (n_keys, n_buckets, tables)


@check("expected_collisions agrees with tables built with your bucket()", uses=("bucket", "expected_collisions"))
def collisions_simulated(sub, ctx):
    for n, m, tables in SIMULATIONS:
        setup = f"tables = [[bucket('user', f't{{t}}-{{i}}', {m}) for i in range({n})] for t in range({tables})]"
        got = run(sub, f"{setup}\n[len(set(table)) for table in tables], expected_collisions({n}, {m})", pack=False)
        band = NORMAL_Z * collisions_sd(n, m) / math.sqrt(tables)  # the simulated mean's normal bound
        code = f"{setup}\nsum({n} - len(set(t)) for t in tables) / {tables}, expected_collisions({n}, {m})  # within ±{band:.3g}"
        if not isinstance(got, tuple) or len(got) != 2 or not isinstance(got[0], list) or len(got[0]) != tables:
            fail(f"{tables} tables of {n} keys: got {describe_value(got)}", failing_input=Call.code(code), what="collisions in simulated tables",
                 got="no results", first_index="")
        used, claimed = got
        claimed = as_float(claimed, what=f"expected_collisions({n}, {m})")
        simulated = n - float(np.mean(used))
        truth = true_collisions(n, m)
        if abs(simulated - claimed) <= band and abs(simulated - truth) <= band:
            continue
        if abs(simulated - truth) > band:
            why = (f"Random hashing gives {truth:.6g} on average ({simulated:.6g} is outside {truth:.6g} ± {band:.3g}): your bucket() does not"
                   " spread distinct keys like a hash" + (" (no collisions at all: keys numbered as they come)" if simulated == max(0, n - m) else "")
                   + ".")
        else:
            why = f"Your tables agree with n - m(1 - (1 - 1/m)^n) = {truth:.6g}: it is expected_collisions that is off."
        fail(f"{tables} tables of {n} distinct keys hashed with your bucket() into {m} buckets have {simulated:.6g} collisions on average (keys"
             f" in a bucket an earlier key holds), expected_collisions({n}, {m}) says {claimed:.6g}; they must agree within"
             f" {NORMAL_Z:g} standard errors, ±{band:.3g}. {why}", failing_input=Call.code(code),
             what=f"expected_collisions({n}, {m}) against {tables} tables", first_index="",
             got=f"{claimed:.17g}" if abs(simulated - truth) <= band else "tables off", rtol=RTOL, atol=0.0)


@check("invalid input raises ValueError: n_buckets < 1, n_keys < 0", edge=EDGE_INVALID)
def invalid_input(sub, ctx):
    for fn, args in (("bucket", ("user", 7, 0)), ("bucket", ("user", 7, -4)), ("featurize", ({"user": 7}, ["user"], [], 0)),
                     ("expected_collisions", (-1, 10)), ("expected_collisions", (10, 0))):
        why = f"n_keys = {args[0]}" if fn == "expected_collisions" and args[0] < 0 else f"n_buckets = {args[-1] if fn != 'featurize' else args[3]}"
        expect_raises(sub.run(raised_by, fn, *args), "ValueError", what=f"{fn} with {why}",
                      returned_hint="check n_buckets >= 1 (and n_keys >= 0) first and raise ValueError saying which is wrong")
