"""Speed of mlprep against baselines measured in the same run (issue 28's targets).

    python bench/bench.py [--runs 15] [--skip-selfcheck] [--skip-tests] [--json FILE] [--markdown]

Each pair runs the baseline and the mlprep command alternately, `--runs` times each, as fresh
processes (what a user waits for, start-up and teardown included), so machine load hits both alike;
the ratio is median(command) / median(baseline). Targets:

- `mlprep list`, `show`, `hint`, `progress`, and a shell completion of exercise ids
                                                  <= 1.3x  `python -c "import typer"`
- `mlprep show adamw`, the first time (the prompt's Markdown rendered, not from the cache)
                                                  <= 3x    `python -c "import typer"`
- `mlprep grade adamw` on a correct attempt       <= 1.3x  `python -c "import torch"`
- `mlprep grade adamw` on a known bug              <= 2.5x  `python -c "import torch"` (failing
                                                  inputs found and shrunk included)
- `mlprep grade adamw` on a file that never returns  within the exercise's time limit + 5 s
- `mlprep grade adamw --dir` of 40 files          <= 0.3x  40 separate `mlprep grade adamw --file` runs
- `mlprep grade` of each Phase E exercise's reference  <= 15 s
- `mlprep selfcheck` of the whole bank            <= 180 s wall on 2 cores (every reference, stub, known bug,
                                                  alternative), with the number of submissions graded
- `mlprep selfcheck --changed` with nothing changed  <= 0.05x the whole-bank run above
- `python -m pytest` (the README's test command)  <= 480 s

Everything runs against a temporary MLPREP_HOME; your own progress is not touched.
Exit status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUICK_TARGET = 1.3  # list, show, hint, progress, completion: against `import typer`
GRADE_TARGET = 1.3  # a correct attempt of adamw: against `import torch`


def mlprep_command() -> list[str]:
    """The console script a user runs, next to this interpreter; `python -m mlprep` otherwise."""
    script = Path(sys.executable).parent / "mlprep"
    return [str(script)] if script.exists() else [sys.executable, "-m", "mlprep"]


def wall(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode not in ok:
        sys.exit(f"bench: {' '.join(argv)} exited with {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    return elapsed


def compare(name: str, argv: list[str], baseline_name: str, baseline: list[str], target: float, runs: int, env: dict[str, str],
            ok: tuple[int, ...] = (0,), before: Callable[[], None] | None = None) -> dict:
    """`before`, if given, runs before every run of the command (not timed): e.g. emptying a cache."""
    wall(argv, env, ok), wall(baseline, env)  # warm the page cache (and measure the reference once); not counted
    command_s, baseline_s = [], []
    for _ in range(runs):
        baseline_s.append(wall(baseline, env))
        if before is not None:
            before()
        command_s.append(wall(argv, env, ok))
    command_median, baseline_median = statistics.median(command_s), statistics.median(baseline_s)
    ratio = command_median / baseline_median
    return {"what": name, "median_s": round(command_median, 3), "baseline": baseline_name, "baseline_median_s": round(baseline_median, 3),
            "ratio": round(ratio, 2), "target": f"<= {target:g}x", "meets": ratio <= target}


def hang(env: dict[str, str], folder: Path) -> dict:
    """One grade of an adamw that never returns: the whole grade's time against the exercise's limit + 5 s."""
    sys.path.insert(0, str(REPO))
    from mlprep.bank import load_bank

    bound = load_bank(REPO).get("adamw").timeout_s + 5.0
    path = folder / "never_returns.py"
    path.write_text("def adamw(w, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):\n    while True:\n        pass\n")
    elapsed = wall([*mlprep_command(), "grade", "adamw", "--file", str(path)], env, ok=(1,))
    return {"what": "mlprep grade adamw (never returns)", "median_s": round(elapsed, 2), "baseline": f"{bound:g} s", "baseline_median_s": bound,
            "ratio": round(elapsed / bound, 2), "target": f"< {bound:g} s", "meets": elapsed < bound}


# Issue 16: a course grades a cohort's files in one command instead of a shell loop of separate runs.
BATCH_FILES = 40
BATCH_TARGET = 0.3


def batch(env: dict[str, str], folder: Path) -> dict:
    """40 submissions of adamw (the reference, its alternatives and known bugs, copied to 40 files):
    one `--dir` grade against 40 separate `--file` grades, one after the other as a shell loop runs them."""
    sys.path.insert(0, str(REPO))
    from mlprep.bank import load_bank

    adamw = load_bank(REPO).get("adamw")
    reference = adamw.reference_path.read_text()
    sources = [reference, *(p.read_text() for p in adamw.alternatives()), *(b.apply(reference) for b in adamw.bugs())]
    cohort = folder / "cohort"
    cohort.mkdir()
    for number in range(BATCH_FILES):
        (cohort / f"learner_{number:02d}.py").write_text(sources[number % len(sources)])
    mlprep = mlprep_command()
    wall([*mlprep, "grade", "adamw", "--file", str(cohort / "learner_00.py")], env)  # warm-up (reference timings cached), not counted
    together = wall([*mlprep, "grade", "adamw", "--dir", str(cohort)], env, ok=(0, 1))
    apart = sum(wall([*mlprep, "grade", "adamw", "--file", str(path)], env, ok=(0, 1)) for path in sorted(cohort.glob("*.py")))
    ratio = together / apart
    return {"what": f"mlprep grade adamw --dir ({BATCH_FILES} files, {os.cpu_count()} cores)", "median_s": round(together, 2),
            "baseline": f"{BATCH_FILES} separate --file runs", "baseline_median_s": round(apart, 2), "ratio": round(ratio, 2),
            "target": f"<= {BATCH_TARGET:g}x", "meets": ratio <= BATCH_TARGET}


def within(what: str, elapsed: float, limit_s: float, **extra: object) -> dict:
    """A row judged against a limit in seconds rather than a baseline."""
    return {"what": what, "median_s": round(elapsed, 2), "baseline": f"{limit_s:g} s", "baseline_median_s": limit_s, "ratio": round(elapsed / limit_s, 2),
            "target": f"<= {limit_s:g} s", "meets": elapsed <= limit_s, **extra}


# Issue 26: a grade of each new exercise's reference, the reference's timings measured beforehand.
PHASE_E = ("hashed-features", "ab-test", "walk-forward")
PHASE_E_LIMIT_S = 15.0


def phase_e(env: dict[str, str]) -> list[dict]:
    rows = []
    for exercise_id in PHASE_E:
        reference = str(REPO / "solutions" / exercise_id / "reference.py")
        argv = [*mlprep_command(), "grade", exercise_id, "--file", reference]
        wall(argv, env)  # measures the reference once (cached), not counted
        rows.append(within(f"mlprep grade {exercise_id} (its reference)", statistics.median(wall(argv, env) for _ in range(3)), PHASE_E_LIMIT_S))
    return rows


# Issue 28: the self-check of the whole bank within 3 minutes on 2 cores, and nothing proved again when nothing changed.
SELFCHECK_LIMIT_S = 180.0
UNCHANGED_SHARE = 0.05


def selfcheck(env: dict[str, str]) -> list[dict]:
    report_path = Path(env["MLPREP_HOME"]) / "selfcheck.json"
    times, reports = [], []
    for options in ([], ["--changed"]):  # a cold cache proves everything; then nothing has changed
        start = time.perf_counter()
        with open(report_path, "w") as out:
            done = subprocess.run([*mlprep_command(), "selfcheck", "--json", *options], env=env, stdout=out, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - start)
        reports.append(json.loads(report_path.read_text()))
        if done.returncode != 0:
            print(f"bench: the self-check found problems (exit {done.returncode}); timing it anyway", file=sys.stderr)
    cold, warm = reports
    return [within(f"mlprep selfcheck (whole bank, {cold['submissions']} submissions, {os.cpu_count()} cores)", times[0], SELFCHECK_LIMIT_S,
                   submissions=cold["submissions"], selfcheck_ok=cold["ok"]),
            within(f"mlprep selfcheck --changed (nothing changed: {warm['submissions']} graded)", times[1], round(times[0] * UNCHANGED_SHARE, 1),
                   submissions=warm["submissions"], selfcheck_ok=warm["ok"])]


# Issue 28: the README's test command, the whole-bank self-check inside it, within 8 minutes on 2 cores.
TESTS_LIMIT_S = 480.0


def tests(env: dict[str, str]) -> dict:
    test_env = {key: value for key, value in env.items() if key != "MLPREP_HOME"}  # the tests make their own data folders
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=REPO, env=test_env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0:
        print(f"bench: the tests failed (exit {done.returncode}): {summary}", file=sys.stderr)
    return within(f"python -m pytest ({summary.strip('= ')})", elapsed, TESTS_LIMIT_S, tests_ok=done.returncode == 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command and of its baseline (default 15)")
    parser.add_argument("--skip-selfcheck", action="store_true", help="leave out the whole-bank self-check (a few minutes)")
    parser.add_argument("--skip-tests", action="store_true", help="leave out the README's test command (several minutes)")
    parser.add_argument("--json", dest="json_path", type=Path, help="also write the rows as JSON to this file")
    parser.add_argument("--markdown", action="store_true", help="also print the rows as the README's table")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="mlprep-bench-"))
    env = {**os.environ, "MLPREP_HOME": str(home), "NO_COLOR": "1"}
    env.pop("MLPREP_BANK", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: compiled modules cached after the first run
    mlprep = mlprep_command()
    typer_baseline = [sys.executable, "-c", "import typer"]
    torch_baseline = [sys.executable, "-c", "import torch"]
    try:
        # A correct attempt of adamw in the workspace: the stub written by `attempt`, then the reference.
        wall([*mlprep, "attempt", "adamw"], env)
        shutil.copyfile(REPO / "solutions" / "adamw" / "reference.py", home / "workspace" / "adamw" / "adamw.py")
        rows = [compare(f"mlprep {' '.join(cmd)}", [*mlprep, *cmd], 'python -c "import typer"', typer_baseline, QUICK_TARGET, args.runs, env)
                for cmd in (["list"], ["show", "adamw"], ["hint", "adamw"], ["progress"])]
        completion = {**env, "_MLPREP_COMPLETE": "complete_bash", "COMP_WORDS": "mlprep grade ad", "COMP_CWORD": "2"}
        rows.append(compare("mlprep <Tab> (bash completion of: grade ad)", mlprep, 'python -c "import typer"', typer_baseline, QUICK_TARGET, args.runs, completion))
        rows.append(compare("mlprep show adamw (first time: Markdown rendered)", [*mlprep, "show", "adamw"], 'python -c "import typer"', typer_baseline,
                            3.0, args.runs, env, before=lambda: shutil.rmtree(home / "cache" / "prompts", ignore_errors=True)))
        rows.append(compare("mlprep grade adamw (correct attempt)", [*mlprep, "grade", "adamw"], 'python -c "import torch"', torch_baseline, GRADE_TARGET,
                            args.runs, env))
        buggy = home / "no_bias_correction.py"
        sys.path.insert(0, str(REPO))
        from mlprep.bank import load_bank

        adamw = load_bank(REPO).get("adamw")
        buggy.write_text(next(b for b in adamw.bugs() if b.name == "no_bias_correction").apply(adamw.reference_path.read_text()))
        rows.append(compare("mlprep grade adamw (a known bug)", [*mlprep, "grade", "adamw", "--file", str(buggy)], 'python -c "import torch"',
                            torch_baseline, 2.5, args.runs, env, ok=(1,)))
        rows.append(hang(env, home))
        rows.append(batch(env, home))
        rows += phase_e(env)
        if not args.skip_selfcheck:
            rows += selfcheck(env)
        if not args.skip_tests:
            rows.append(tests(env))
    finally:
        shutil.rmtree(home, ignore_errors=True)

    print(f"{'what':62} {'median':>9} {'baseline':>26} {'ratio':>6}  {'target':10} ok")
    for row in rows:
        baseline = f"{row['baseline']} {row['baseline_median_s']:.3f}s" if not row["baseline"].endswith(" s") else "-"
        print(f"{row['what']:62} {row['median_s']:>8.3f}s {baseline:>26} {row['ratio']:>6.2f}  {row['target']:10} {'yes' if row['meets'] else 'NO'}")
    print(f"({args.runs} runs of each command and baseline, alternating; medians; {os.cpu_count()} cores; python {sys.version.split()[0]})")
    if args.json_path:
        args.json_path.write_text(json.dumps(rows, indent=2))
    if args.markdown:
        print("\n| what | median | baseline (median) | ratio | target |\n|---|---|---|---|---|")
        for row in rows:
            baseline = f"{row['baseline']} {row['baseline_median_s']:.3f} s" if not row["baseline"].endswith(" s") else ""
            print(f"| `{row['what']}` | {row['median_s']:.3f} s | {baseline} | {row['ratio']:.2f} | {row['target']} |")
    return 0 if all(row["meets"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
