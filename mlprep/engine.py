"""Grading one file against one exercise: the judge.

    grade_file(exercise, path, device="auto", timeout_s=None) -> GradeResult

The judge (this process) loads the grader and the reference; the learner's file runs only in a
sandbox process (grading/_runner.py). Each check gets a fresh sandbox after one that crashed or
hung, so one bad scenario does not hide the verdicts of the others. A failure of mlprep itself (the
grader raising, the reference failing) is reported as an internal error, never as the learner failing
or passing.

`python -m mlprep.engine ID FILE` grades a file and prints the verdicts (a developer's shortcut).
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from mlprep.bank import Exercise
from mlprep.grading import CheckFailed, CheckSpec, Context, GraderDefect, Submission
from mlprep.grading._files import load_module as load_file
from mlprep.grading._forkserver import prestart
from mlprep.grading._runner import OUTPUT_FLOOD_BYTES, Sandbox, SandboxBroken, SandboxConfig, SubmissionCrashed, SubmissionProblem, SubmissionRaised, SubmissionTimeout
from mlprep.results import CheckResult, GradeResult, overall_status, summary_message

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
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available())


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


def grade_file(exercise: Exercise, path: Path, *, device: str = "auto", timeout_s: float | None = None) -> GradeResult:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    started = time.perf_counter()
    path = Path(path).resolve()
    prestart(module_name("grader", exercise.id), exercise.grader_path)  # its imports overlap with ours below
    try:
        grader = load_module(module_name("grader", exercise.id), exercise.grader_path)
        reference = load_module(module_name("reference", exercise.id), exercise.reference_path)
        runs = plan_runs(collect_checks(grader), device)
    except Exception as exc:  # a broken bank file is mlprep's defect, not the learner's
        return _internal(exercise.id, f"the grader of {exercise.id} could not be loaded: {type(exc).__name__}: {exc}", started)

    limit = float(timeout_s) if timeout_s is not None else exercise.timeout_s
    config = SandboxConfig(path, exercise.grader_path, module_name("grader", exercise.id), exercise.functions, exercise.memory_mb, limit)
    sandbox = Sandbox(config)
    checks: list[CheckResult] = []
    internal = False
    try:
        import_started = time.perf_counter()
        try:
            sandbox.start()
        except SandboxBroken as exc:
            return _internal(exercise.id, str(exc), started)
        except SubmissionProblem as problem:
            status = "timeout" if isinstance(problem, SubmissionTimeout) else "error"
            checks.append(CheckResult(IMPORT_CHECK, status, problem.message, problem.details, time.perf_counter() - import_started))
            checks += [CheckResult(name, "skip", "not run: your file did not import") for name, *_ in runs]
            return _result(exercise, checks, sandbox, device, started)
        if sandbox.missing:
            names = ", ".join(sandbox.missing)
            message = f"your file does not define {names} (the exercise asks for {', '.join(exercise.functions)})"
            checks.append(CheckResult(IMPORT_CHECK, "error", message, {"missing": sandbox.missing}, time.perf_counter() - import_started))
            checks += [CheckResult(name, "skip", f"not run: {names} missing") for name, *_ in runs]
            return _result(exercise, checks, sandbox, device, started)
        if sandbox.leftover_processes():
            message = "importing your file started processes that kept running; start no processes at import time"
            checks.append(CheckResult(IMPORT_CHECK, "error", message, {}, time.perf_counter() - import_started))
            checks += [CheckResult(name, "skip", "not run: your file did not import cleanly") for name, *_ in runs]
            return _result(exercise, checks, sandbox, device, started)
        checks.append(CheckResult(IMPORT_CHECK, "pass", "", {}, time.perf_counter() - import_started))

        for name, spec, dev, runnable in runs:
            if not runnable:
                checks.append(CheckResult(name, "skip", f"{dev.upper()} is not available on this machine; this scenario did not run"))
                continue
            if not sandbox.alive():
                try:
                    sandbox.start()  # a fresh process after a crash or a timeout
                except SandboxBroken as exc:
                    return _internal(exercise.id, str(exc), started)
                except SubmissionProblem as problem:
                    checks.append(CheckResult(name, "error", f"could not restart your code: {problem.message}", problem.details))
                    continue
            result = _run_check(name, spec, dev, sandbox, reference, replace(config, submission=exercise.reference_path))
            internal = internal or result.details.get("internal_error", False)
            checks.append(result)
    finally:
        sandbox.close()
    result = _result(exercise, checks, sandbox, device, started)
    result.internal_error = internal
    if internal:
        result.message = "internal error in mlprep (not your code): " + result.message
    return result


def _run_check(name: str, spec: CheckSpec, device: str, sandbox: Sandbox, reference: ModuleType, reference_config: SandboxConfig) -> CheckResult:
    before_output = sandbox.output_total
    start = time.perf_counter()
    limit = reference_config.timeout_s
    sub = Submission(sandbox, device, limit)
    reference_sandboxes: list[Sandbox] = []

    def reference_sandbox() -> Submission:
        """The reference in a sandbox like the learner's, for timings that compare like with like."""
        reference_sandboxes.append(Sandbox(reference_config))
        try:
            reference_sandboxes[-1].start()
        except (SubmissionProblem, SandboxBroken) as problem:
            raise GraderDefect(f"the reference could not start in a sandbox: {problem}") from None
        return Submission(reference_sandboxes[-1], device, limit)

    status, message, details = "pass", "", {}
    try:
        spec.fn(sub, Context(device, reference, reference_sandbox))
    except CheckFailed as failure:
        status, message, details = "fail", failure.message, failure.details
    except SubmissionTimeout as problem:
        status, message, details = "timeout", problem.message, problem.details
    except (SubmissionRaised, SubmissionCrashed) as problem:
        status, message, details = "error", problem.message, {k: v for k, v in problem.details.items() if k in ("type", "kind", "signal", "exit_code")}
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
    return CheckResult(name, status, message, details, time.perf_counter() - start)


def _devices_used(device: str) -> str:
    """What actually ran: cpu, cuda, or both (auto with a GPU)."""
    if device == "cpu" or not cuda_available():
        return "cpu"
    return "cuda" if device == "cuda" else "cpu+cuda"


def _result(exercise: Exercise, checks: list[CheckResult], sandbox: Sandbox, device: str, started: float) -> GradeResult:
    return GradeResult(
        id=exercise.id,
        status=overall_status(checks),
        message=summary_message(checks),
        checks=checks,
        output=sandbox.output_text(),
        device=_devices_used(device),
        duration_s=time.perf_counter() - started,
    )


def _main(argv: list[str]) -> int:
    from mlprep.bank import load_bank

    if len(argv) not in (2, 3):
        print("usage: python -m mlprep.engine ID FILE [cpu|cuda|auto]", file=sys.stderr)
        return 2
    exercise_id, file_path = argv[0], argv[1]
    device = argv[2] if len(argv) > 2 else "auto"
    result = grade_file(load_bank().get(exercise_id), Path(file_path), device=device)
    for check in result.checks:
        print(f"[{check.status:>7}] {check.name} ({check.duration_s:.2f}s)")
        if check.message:
            print("          " + check.message.replace("\n", "\n          "))
    if result.output:
        print("--- output ---\n" + result.output[:2000])
    print(f"{result.status.upper()}: {result.message} ({result.duration_s:.1f}s)")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
