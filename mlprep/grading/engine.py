"""Grading one file against one exercise: the judge.

    grade_file(exercise, path, device="auto", timeout_s=None) -> GradeResult

The judge (this process) loads the grader and the reference; the learner's file runs only in a
sandbox process (grading/_runner.py). Each check gets a fresh sandbox after one that crashed or
hung, so one bad scenario does not hide the verdicts of the others. A failure of mlprep itself (the
grader raising, the reference failing) is reported as an internal error, never as the learner failing
or passing.

Time: the exercise's timeout_s bounds the whole grade (the Budget). Each check's own limit is made of
the reference's measured time for it (reference_times), so a hang is found within seconds; the code
that hung (the function in flight, or all that the check `uses`) is not called again by later
checks, which are reported as not run and why. A failed check reports the input it failed on (the
learner's last call, or the one the grader names), as Python the learner can paste.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from mlprep.bank import Exercise
from mlprep.errors import MlprepError
from mlprep.grading import CheckFailed, CheckSpec, Context, GraderDefect, Submission, reported_message, request_as_call
from mlprep.grading._files import load_module as load_file
from mlprep.grading._forkserver import prestart
from mlprep.grading._runner import OUTPUT_FLOOD_BYTES, Sandbox, SandboxBroken, SandboxConfig, SubmissionCrashed, SubmissionProblem, SubmissionRaised, SubmissionTimeout
from mlprep.results import CheckResult, GradeResult, overall_status, summary_message
from mlprep.text import limit_seconds, seconds_text

DEVICES = ("cpu", "cuda", "auto")
IMPORT_CHECK = "your file imports and defines the interface"


def module_name(kind: str, exercise_id: str) -> str:
    return f"mlprep_{kind}_{exercise_id.replace('-', '_')}"


_load_lock = threading.Lock()  # the self-check grades from several threads


def load_module(name: str, path: Path) -> ModuleType:
    """Import a bank file (grader, reference) under a fixed name, here in the judge, once."""
    with _load_lock:
        return load_file(name, path)


def collect_checks(grader: ModuleType) -> list[CheckSpec]:
    specs = [value.__mlprep_check__ for value in vars(grader).values() if hasattr(value, "__mlprep_check__")]
    names = [s.name for s in specs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise GraderDefect(f"check names are not unique: {sorted(duplicates)}")
    if not specs:
        raise GraderDefect("the grader defines no checks")
    return specs


def cuda_available() -> bool:
    """Whether torch, where something has imported it, sees a GPU (without torch nothing runs on one)."""
    if "torch" not in sys.modules:
        return False
    import torch  # waits for an import another thread has under way (sys.modules holds it half-initialised)

    return bool(torch.cuda.is_available())


def sandboxes_isolated() -> bool:
    """Whether the sandboxes here run in namespaces of their own, the bank's solutions and graders out of
    their sight (Linux with unprivileged user namespaces); where not, a file can read what it must not."""
    from mlprep.grading._forkserver import fork_server

    return fork_server().sandboxes_isolated()


def require_device(device: str) -> None:
    """`--device cuda` where no GPU is visible is a usage error, never a grade: its CUDA scenarios could
    not run, and a pass of the rest would be recorded as a pass on CUDA."""
    if device != "cuda":
        return
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        raise MlprepError("--device cuda: no GPU is visible here (torch.cuda.is_available() is False); "
                          "--device auto runs the CPU scenarios and reports the CUDA ones as skipped")


def plan_runs(specs: list[CheckSpec], device: str) -> list[tuple[str, CheckSpec, str, bool]]:
    """(check name, spec, device, runnable here) in order; the cuda runs are not runnable without a GPU."""
    runs = []
    for spec in specs:
        if spec.devices is None:
            runs.append((spec.name, spec, "cpu", True))
            continue
        for dev in spec.devices:
            if device != "auto" and dev != device:
                continue
            name = spec.name if dev == "cpu" else f"{spec.name} [{dev}]"
            runs.append((name, spec, dev, dev == "cpu" or cuda_available()))
    return runs


def _internal(exercise_id: str, message: str, started: float) -> GradeResult:
    return GradeResult(exercise_id, "error", f"internal error in mlprep (not your code): {message}", [], duration_s=time.perf_counter() - started, internal_error=True)


# Time limits. The exercise's timeout_s (or --timeout) bounds the whole grade of one submission. Each
# check also gets a limit of its own, measured: CHECK_FLOOR_S plus CHECK_HEADROOM times what the
# reference needed for that check on this machine (see reference_times), so a hang costs seconds and a
# correct but slower solution (loops, another library, a busy machine) still gets every check run.
CHECK_FLOOR_S = 5.0
CHECK_HEADROOM = 10.0
IMPORT_LIMIT_S = 10.0  # importing the learner's file on a quiet machine: a library the fork server has not loaded is slow
RUN_AT_LEAST_S = 0.05  # with less of the grade's budget left, a check is reported as not run
SHRINK_PER_GRADE_S = 2.0  # all the shrinking of one grade together: a failing grade stays quick to read


class Budget:
    """The time left for one grade; checks draw their limits from it, and shrinking (extra work the
    reference's timing does not cover) draws extensions from a small allowance of its own. `load`: the
    machine's contention() now (>= 1), which the checks' limits are scaled by: a busy machine gives a
    correct solution the time a quiet one would."""

    def __init__(self, limit_s: float, load: float = 1.0):
        self.limit_s = limit_s
        self.load = load
        self.deadline = time.monotonic() + limit_s
        self.shrink_left_s = SHRINK_PER_GRADE_S

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def import_limit(self) -> float:
        """Importing the learner's file: IMPORT_LIMIT_S scaled by the load, as every limit is (scikit-learn's import
        takes 10 s with four busy processes per core), within what is left."""
        return min(IMPORT_LIMIT_S * self.load, self.remaining())

    def grant(self, seconds: float) -> float:
        granted = max(0.0, min(seconds, self.remaining(), self.shrink_left_s))
        self.shrink_left_s -= granted
        return granted


def grade_files(submissions: list[tuple[Exercise, Path]], *, device: str = "auto", timeout_s: float | None = None, jobs: int | None = None,
                on_result: Callable[[Path, GradeResult], None] | None = None) -> list[GradeResult]:
    """Grade many files in this process, in parallel over the cores: one judge, one warm fork server,
    each submission still in a sandbox of its own with its own limits. Results in the given order."""
    from concurrent.futures import ThreadPoolExecutor

    def one(submission: tuple[Exercise, Path]) -> GradeResult:
        exercise, path = submission
        result = grade_file(exercise, path, device=device, timeout_s=timeout_s)
        if on_result is not None:
            on_result(path, result)
        return result

    # Each grade mostly waits on its sandbox process, so threads keep every core busy (as the self-check does).
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(one, submissions))


def grade_file(exercise: Exercise, path: Path, *, device: str = "auto", timeout_s: float | None = None) -> GradeResult:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    require_device(device)
    started = time.perf_counter()
    path = Path(path).resolve()
    unparsable = does_not_parse(path)  # found in milliseconds, before any sandbox (or the reference's timing) starts
    if unparsable is None:
        prestart(module_name("grader", exercise.id), exercise.grader_path)  # its imports overlap with ours below
    try:
        grader = load_module(module_name("grader", exercise.id), exercise.grader_path)
        reference = load_module(module_name("reference", exercise.id), exercise.reference_path)
        runs = plan_runs(collect_checks(grader), device)
    except Exception as exc:  # a broken bank file is mlprep's defect, not the learner's
        return _internal(exercise.id, f"the grader of {exercise.id} could not be loaded: {type(exc).__name__}: {exc}", started)
    if unparsable is not None:
        return _not_imported(exercise, runs, unparsable, 0.0, "", device, started)
    measured = reference_times(exercise, runs, reference, device)
    load = contention()
    # The exercise's limit (a quiet machine's) scales with the machine's load now; one given with --timeout is the user's, as given.
    limit = float(timeout_s) if timeout_s is not None else exercise.timeout_s * load
    return _grade(exercise, path, runs, reference, device, Budget(limit, load), measured, started)


def _grade(exercise: Exercise, path: Path, runs: list, reference: ModuleType, device: str, budget: Budget,
           measured: dict[str, float], started: float) -> GradeResult:
    """Grade one file: import it in a sandbox, then run each check under its own limit and the grade's budget."""
    config = SandboxConfig(path, exercise.grader_path, module_name("grader", exercise.id), exercise.functions, exercise.memory_mb, hidden_folders(exercise))
    sandbox = Sandbox(config)
    checks: list[CheckResult] = []
    internal = False
    hung: dict[str, str] = {}  # interface name -> the check in which it hit its time limit
    try:
        import_started = time.perf_counter()
        try:
            sandbox.start(budget.import_limit())
        except SandboxBroken as exc:
            return _internal(exercise.id, str(exc), started)
        except SubmissionProblem as problem:
            return _not_imported(exercise, runs, problem, time.perf_counter() - import_started, sandbox.output_text(), device, started)
        if sandbox.missing:
            names = ", ".join(sandbox.missing)
            message = f"your file does not define {names} (the exercise asks for {', '.join(exercise.functions)})"
            checks.append(CheckResult(IMPORT_CHECK, "error", message, {"missing": sandbox.missing}, time.perf_counter() - import_started))
            checks += [CheckResult(name, "skip", f"not run: {names} missing") for name, *_ in runs]
            return _result(exercise, checks, sandbox, device, started, budget)
        if sandbox.leftover_processes():
            message = "importing your file started processes that kept running; start no processes at import time"
            checks.append(CheckResult(IMPORT_CHECK, "error", message, {}, time.perf_counter() - import_started))
            checks += [CheckResult(name, "skip", "not run: your file did not import cleanly") for name, *_ in runs]
            return _result(exercise, checks, sandbox, device, started, budget)
        checks.append(CheckResult(IMPORT_CHECK, "pass", "", {}, time.perf_counter() - import_started))

        for name, spec, dev, runnable in runs:
            if not runnable:
                checks.append(CheckResult(name, "skip", f"{dev.upper()} is not available on this machine; this scenario did not run", {"unavailable": dev}))
                continue
            uses = spec.uses or exercise.functions
            blocked = next((code for code in uses if code in hung), None)
            if blocked is not None:
                checks.append(CheckResult(name, "skip", f"not run: {_code_name(blocked)} hit its time limit in the check {hung[blocked]!r},"
                                          " and this check would call it again", {"blocked_by": hung[blocked]}))
                continue
            if budget.remaining() < RUN_AT_LEAST_S:
                checks.append(CheckResult(name, "skip", f"not run: the time limit for the whole grade ({seconds_text(budget.limit_s)}) ran out",
                                          {"grade_limit_s": budget.limit_s}))
                continue
            if not sandbox.alive():
                try:
                    sandbox.start(budget.import_limit())  # a fresh process after a crash or a timeout
                except SandboxBroken as exc:
                    return _internal(exercise.id, str(exc), started)
                except SubmissionProblem as problem:
                    checks.append(CheckResult(name, "error", f"could not restart your code: {problem.message}", problem.details))
                    continue
            limit, why = _check_limit(name, measured, budget)
            result, timed_out = _run_check(name, spec, dev, sandbox, reference, replace(config, submission=exercise.reference_path), limit, why, budget)
            for code in timed_out:
                hung.setdefault(code, name)
            internal = internal or result.details.get("internal_error", False)
            checks.append(result)
    finally:
        sandbox.close()
    result = _result(exercise, checks, sandbox, device, started, budget)
    result.internal_error = internal
    if internal:
        result.message = "internal error in mlprep (not your code): " + result.message
    return result


@functools.cache
def _banks_hidden() -> tuple[str, ...]:
    from mlprep.bank import bank_sources
    from mlprep.workspace import data_dir

    folders = [str(source.root / part) for source in bank_sources() for part in ("solutions", "graders")]
    return (*folders, str(data_dir()))


def hidden_folders(exercise: Exercise) -> tuple[str, ...]:
    """What the learner's process must not see: every bank's references, known bugs and graders (the answers,
    the checks), and mlprep's data folder (the progress store, the caches)."""
    return tuple(dict.fromkeys((str(exercise.root / "solutions"), str(exercise.root / "graders"), *_banks_hidden())))


def does_not_parse(path: Path) -> SubmissionRaised | None:
    """The file's syntax error, as the sandbox would report it, found by compiling it here (compiling runs
    nothing of it); None when it parses, or cannot be read (the sandbox then says why)."""
    try:
        source = path.read_bytes()
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError too
        where = f"  line {exc.lineno}: {(exc.text or '').rstrip()}" if exc.lineno else ""
        error = {"kind": "exception", "type": type(exc).__name__, "message": str(exc), "traceback": where}
        return SubmissionRaised(f"your file does not parse: {error['type']}: {error['message']}\n{where}".rstrip(), error)
    except Exception:  # noqa: BLE001 - unreadable, null bytes, a compiler limit: the sandbox's import reports it
        return None
    return None


def _not_imported(exercise: Exercise, runs: list, problem: SubmissionProblem, seconds: float, output: str, device: str, started: float) -> GradeResult:
    status = "timeout" if isinstance(problem, SubmissionTimeout) else "error"
    checks = [CheckResult(IMPORT_CHECK, status, problem.message, problem.details, seconds)]
    checks += [CheckResult(name, "skip", "not run: your file did not import") for name, *_ in runs]
    return GradeResult(exercise.id, overall_status(checks), summary_message(checks), checks, output=output, device=_devices_used(device),
                       duration_s=time.perf_counter() - started)


def _code_name(name: str) -> str:
    return f"{name}()" if name[:1].islower() else name


def _check_limit(name: str, measured: dict[str, float], budget: Budget) -> tuple[float, str]:
    """This check's time limit, and the words that say where it comes from."""
    remaining = budget.remaining()
    whole = f"what was left of the time limit for the whole grade ({seconds_text(budget.limit_s)})"
    if name not in measured:
        return remaining, whole
    limit = (CHECK_FLOOR_S + CHECK_HEADROOM * measured[name]) * budget.load
    if limit >= remaining:
        return remaining, whole
    busy = f", times {budget.load:.2g}: the machine is that much busier than a quiet one now" if budget.load > 1.05 else ""
    return limit, f"{CHECK_FLOOR_S:g} s plus {CHECK_HEADROOM:g}x the {measured[name]:.2g} s the reference takes for this check{busy}"


def _run_check(name: str, spec: CheckSpec, device: str, sandbox: Sandbox, reference: ModuleType, reference_config: SandboxConfig,
               limit: float, why: str, budget: Budget) -> tuple[CheckResult, set[str]]:
    """One check's verdict, and the interface names that hit the time limit in it (the code a later check must not call again)."""
    before_output = sandbox.output_total
    start = time.perf_counter()
    sub = Submission(sandbox, device, limit, budget.grant)
    reference_sandboxes: list[Sandbox] = []

    def reference_sandbox() -> Submission:
        """The reference in a sandbox like the learner's, for timings that compare like with like."""
        reference_sandboxes.append(Sandbox(reference_config))
        try:
            reference_sandboxes[-1].start(IMPORT_LIMIT_S * budget.load)
        except (SubmissionProblem, SandboxBroken) as problem:
            raise GraderDefect(f"the reference could not start in a sandbox: {problem}") from None
        return Submission(reference_sandboxes[-1], device, max(budget.remaining(), limit))

    ctx = Context(device, reference, reference_sandbox, load=budget.load)
    status, message, details, failing = "pass", "", {}, None
    timed_out: set[str] = set()
    try:
        spec.fn(sub, ctx)
    except CheckFailed as failure:
        status, details = "fail", failure.details
        failing = failure.failing_input or _last_input(sub, ctx)
        try:
            message = reported_message(failure)
        except Exception as exc:  # the grader's explanation broke: mlprep's defect
            status, message = "error", f"internal grader error (a bug in mlprep, not in your code): {type(exc).__name__}: {exc}"
            details = {"internal_error": True, "traceback": traceback.format_exc(limit=6)}
    except SubmissionTimeout as problem:
        status, message, details = "timeout", f"{problem.message} (this check's limit: {why})", {**problem.details, "limit_s": round(limit, 3)}
        request = sub.in_flight
        timed_out = {request.name} if request is not None and request.op == "call" else set(spec.uses or reference_config.functions)
        failing = _last_input(sub, ctx, in_flight=True)
    except (SubmissionRaised, SubmissionCrashed) as problem:
        status, message, details = "error", problem.message, {k: v for k, v in problem.details.items() if k in ("type", "kind", "signal", "exit_code")}
        if problem.details.get("kind") == "floating_point":
            status = "fail"  # a warning the contract forbids (sub.errstate): a wrong behaviour, not a crash
        if problem.details.get("kind") != "not_implemented":  # a stub raises on every input: none is worth showing
            failing = _last_input(sub, ctx, in_flight=True)
    except Exception as exc:  # the grader itself broke: mlprep's defect
        status = "error"
        message = f"internal grader error (a bug in mlprep, not in your code): {type(exc).__name__}: {exc}"
        details = {"internal_error": True, "traceback": traceback.format_exc(limit=6)}
    finally:
        for reference_box in reference_sandboxes:
            reference_box.close()
    leftover = sandbox.leftover_processes() if sandbox.alive() else []
    if leftover and status in ("pass", "fail"):
        status = "error"
        message = (f"your code left {len(leftover)} process(es) running after it returned (pid {', '.join(map(str, leftover[:5]))}); "
                   "wait for every process you start (join, wait, close the pool). They have been killed.")
        details = {"leftover_processes": len(leftover)}
    if leftover:
        sandbox.stop()  # kills them all; the next check gets a fresh sandbox
    printed = sandbox.output_total - before_output
    if printed > OUTPUT_FLOOD_BYTES and status == "pass":
        status = "fail"
        message = f"your code printed {printed / 2**20:.1f} MiB of output during this check (limit {OUTPUT_FLOOD_BYTES / 2**20:g} MiB); remove the debugging prints"
    failing_input = "" if status == "pass" or failing is None else _render_input(failing)
    if spec.edge and status in ("fail", "error", "timeout"):
        message = f"{message} (An edge case the contract settles: {spec.edge})"
    result = CheckResult(name, status, message, details, time.perf_counter() - start, failing_input, spec.edge)
    result.failing_call = failing if failing_input else None
    return result, timed_out


def _last_input(sub: Submission, ctx: Context, in_flight: bool = False):
    request = sub.in_flight if in_flight and sub.in_flight is not None else sub.last_request
    return None if request is None else request_as_call(request, ctx.interface)


def _render_input(call) -> str:
    try:
        return str(call)
    except Exception as exc:  # noqa: BLE001 - a value that will not print must not cost the verdict
        return f"(the failing input could not be shown: {type(exc).__name__}: {exc})"


# ---------------------------------------------------------------------------------------------
# The reference's measured time per check, which each check's limit is made of
# ---------------------------------------------------------------------------------------------
_times: dict[str, dict[str, float]] = {}  # per cache key, for this process
_times_lock = threading.Lock()
_exercise_locks: dict[str, threading.Lock] = {}


@functools.cache
def _toolkit_digest() -> bytes:
    """The grading package's sources (the toolkit and the judge), hashed once per process (they do not change
    under a running mlprep)."""
    digest = hashlib.sha256()
    for file in sorted(Path(__file__).resolve().parent.glob("*.py")):
        digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.digest()


def version_key(exercise: Exercise, device: str) -> str:
    """Changes whenever what a check runs can change: grader, reference, toolkit; and the machine's devices."""
    digest = hashlib.sha256(_toolkit_digest())
    for file in (exercise.grader_path, exercise.reference_path):
        digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    digest.update(f"{device} cuda={cuda_available()}".encode())
    return digest.hexdigest()[:32]


def _times_file(exercise: Exercise) -> Path:
    from mlprep.workspace import data_dir

    return data_dir() / "cache" / "reference-times" / f"{exercise.id}.json"


CONTENTION_WORK = 200_000  # iterations of a fixed bit of Python: about 10 ms of one core
MAX_LOAD = 20.0  # beyond this the machine is not busy but stalled: a time limit still ends the grade


def contention() -> float:
    """How many times longer work takes on this machine now than its own CPU time (>= 1): about 1 on a
    quiet machine, 5 with four busy processes per core (they share the cores), whatever the machine's speed.
    The CPU time is this thread's: the process's would count the judge's other threads too (a batch grades
    several files at once, and NumPy computes expected values on all cores), and a busy judge read as quiet."""
    wall, cpu = time.perf_counter(), time.thread_time()
    total = 0
    for i in range(CONTENTION_WORK):
        total += i * i
    wall, cpu = time.perf_counter() - wall, max(time.thread_time() - cpu, 1e-6)
    return min(max(wall / cpu, 1.0), MAX_LOAD)


def reference_times(exercise: Exercise, runs: list, reference: ModuleType, device: str) -> dict[str, float]:
    """Seconds the reference takes for each check on this machine when it is quiet: measured by grading
    the reference itself, divided by the machine's contention() then (once per grader, reference and
    toolkit version, then cached in the data folder); {} when that fails (each check then gets what is
    left of the grade's budget)."""
    with _times_lock:
        lock = _exercise_locks.setdefault(exercise.id, threading.Lock())
    with lock:  # concurrent grades of one exercise (the self-check) measure it once
        try:
            key = version_key(exercise, device)
        except OSError:
            return {}
        if key not in _times:
            _times[key] = _load_times(exercise, key)
        wanted = [name for name, _, _, runnable in runs if runnable]
        if any(name not in _times[key] for name in wanted):
            load = contention()
            result = _grade(exercise, exercise.reference_path, runs, reference, device, Budget(exercise.timeout_s * load, load), {}, time.perf_counter())
            if not result.passed:
                return {}
            load = (load + contention()) / 2  # before and after: the grade itself is part of what runs
            _times[key].update({c.name: round(c.duration_s / load, 4) for c in result.checks if c.status == "pass" and c.name != IMPORT_CHECK})
            _save_times(exercise, key, _times[key])
        return dict(_times[key])


def _load_times(exercise: Exercise, key: str) -> dict[str, float]:
    try:
        data = json.loads(_times_file(exercise).read_text(encoding="utf-8"))
        if data.get("key") == key and isinstance(data.get("quiet_seconds"), dict):
            return {str(k): float(v) for k, v in data["quiet_seconds"].items() if isinstance(v, (int, float)) and v >= 0}
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    return {}


def _save_times(exercise: Exercise, key: str, seconds: dict[str, float]) -> None:
    """Best effort: a data folder that cannot be written only means measuring again next time."""
    from mlprep.workspace import atomic_write

    try:
        atomic_write(_times_file(exercise), json.dumps({"key": key, "quiet_seconds": seconds}, indent=1, sort_keys=True))
    except OSError:
        pass


def _devices_used(device: str) -> str:
    """What actually ran: cpu, cuda, or both (auto with a GPU)."""
    if device == "cpu" or not cuda_available():
        return "cpu"
    return "cuda" if device == "cuda" else "cpu+cuda"


def _result(exercise: Exercise, checks: list[CheckResult], sandbox: Sandbox, device: str, started: float, budget: Budget) -> GradeResult:
    return GradeResult(
        id=exercise.id,
        status=overall_status(checks),
        message=summary_message(checks),
        checks=checks,
        output=sandbox.output_text(),
        device=_devices_used(device),
        duration_s=time.perf_counter() - started,
        time_limit_s=limit_seconds(budget.limit_s),  # as the messages say it
    )
