"""Time and memory budgets, measured against the reference in the same run: a time ratio, the growth of a
cost with the input's size, and a call's peak memory measured from outside Python's allocator."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from mlprep.grading._calls import Call
from mlprep.grading._wire import encode
from mlprep.grading.checks import GraderDefect, fail, joined
from mlprep.grading.handles import Context, Interface, Request, Submission, request_as_call
from mlprep.grading.values import describe_value

def time_ratio(sub: Submission, ctx: Context, scenario: Callable, *args: Any, repeats: int = 3, max_ratio: float | None = None,
               what: str = "", hint: str = "", **kwargs: Any) -> tuple[float, float, float]:
    """(learner seconds, reference seconds, ratio), best of `repeats`, measured in this same run.

    Both run in sandboxes (the reference in one of its own, see Context.reference_submission), alternately, and
    each run's cost is measured by the judge from outside the learner's process (Submission.last_cost_s: its CPU
    seconds, or the wall seconds around the round trip where those cannot be measured), so that machine load
    moves neither and the learner cannot fake its time. With `max_ratio`, a learner run still going at max_ratio
    times the reference's best time (plus a second, TIMED_SLACK_S) is stopped and the check fails: a slow
    submission costs the bound, not the whole time limit."""
    from mlprep.grading._runner import SubmissionProblem, SubmissionTimeout

    reference_sub = ctx.reference_submission()
    reference: list[float] = []
    learner: list[float] = []
    for _ in range(repeats):
        try:
            reference_sub._run(scenario, args, kwargs, timed=True)
        except SubmissionProblem as problem:
            raise GraderDefect(f"the reference failed the timed scenario {scenario.__name__}: {problem.message}") from None
        reference.append(reference_sub.last_cost_s)
        best_reference = max(min(reference), 1e-9)
        bound = max_ratio * best_reference + TIMED_SLACK_S if max_ratio is not None else None
        cpu = sub.times_cpu()
        try:
            # A cut-off in wall seconds, where CPU time is not measured, has its slack grown with the machine's load.
            sub._run(scenario, args, kwargs, timed=True, cpu_cutoff_s=bound if cpu else None,
                     cutoff_s=None if bound is None or cpu else bound + TIMED_SLACK_S * (ctx.load - 1))
        except SubmissionTimeout as stopped:
            if bound is None or sub.remaining_s() <= 0:
                raise
            fail(joined(f"{what or scenario.__name__}: stopped after {bound:.2f} s{_cpu_words(stopped)}, more than {max_ratio:g}x the reference's"
                       f" {best_reference:.2f} s measured in the same run.", hint), reference_s=best_reference, cutoff_s=bound, max_ratio=max_ratio,
                 # what was compared, for the diagnosis: the seconds themselves change from run to run
                 what=what or scenario.__name__, got=f"more than {max_ratio:g}x the reference's time", first_index="")
        learner.append(sub.last_cost_s)
    best_learner, best_reference = min(learner), max(min(reference), 1e-9)
    return best_learner, best_reference, best_learner / best_reference


TIMED_SLACK_S = 1.0  # on top of what a bound allows a timed run, for the round trip (and x the machine's load, for wall time)


def _cpu_words(stopped: Any) -> str:
    """How a stopped timed run's seconds were counted (a SubmissionTimeout's details say), for its message."""
    return " of CPU time" if stopped.details.get("cpu_limit_reached") else ""


# Growth: how a cost grows with the input's size, against the reference's growth in the same run
GROWTH_VERDICT_S = 0.5  # of the check's time kept for the verdict when a run at the large size is stopped at the check's limit
_GROWTH_FLOOR = {"time": 1e-6, "memory": 2**20}  # costs below this count as this (no growth from nothing)
_GROWTH_REPEATS = {"time": (7, 3), "memory": (2, 1)}  # default runs (at the small size, at the large size) per side


@dataclass(frozen=True)
class Growth:
    """What growth_check measured: the learner's and the reference's cost (seconds or bytes) at the small and
    at the large size, best of the runs, and their growths (large / small)."""

    measure: str
    sizes: tuple[float, float]
    learner: tuple[float, float]
    reference: tuple[float, float]

    @property
    def learner_growth(self) -> float:
        return self.learner[1] / max(self.learner[0], _GROWTH_FLOOR[self.measure])

    @property
    def reference_growth(self) -> float:
        return self.reference[1] / max(self.reference[0], _GROWTH_FLOOR[self.measure])


def _factor(x: float) -> str:
    """A growth factor as a person writes it: 8.03, 110, 1,028."""
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def _cost_text(value: float, measure: str) -> str:
    if measure == "time":
        return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} bytes"


_REFERENCE_PEAKS: dict[tuple, tuple[list[float], list[float]]] = {}  # growth_check's reference peaks (measure="memory"), by Context.reference_key


def growth_check(sub: Submission, ctx: Context, scenario: Callable, small_args: Sequence[Any], large_args: Sequence[Any], *,
                 sizes: tuple[float, float], max_growth: float, what: str, measure: str = "time", size_format: str = "n = {:,}", hint: str = "",
                 repeats: tuple[int, int] | None = None, calls: tuple[int, int] = (1, 1), failing_input: Call | None = None) -> Growth:
    """A complexity claim as a measurement: from the small input to the large one, the learner's cost grows at
    most `max_growth` times as much as the reference's, both measured in this same run (so machine load and
    the machine's speed cancel out). One mechanism for every claim of the kind: O(n log n) time, memory
    linear in T.

    `scenario(module, *small_args)` and `scenario(module, *large_args)` run on the learner's module and on the
    reference's, each in a sandbox (the reference in one of its own, see Context.reference_submission);
    `sizes` = (small, large), shown as `size_format` says ("{:,} rows", "T = {:,}"). Costs are the best of `repeats` =
    (runs at the small size, runs at the large size) per side, the learner's and the reference's alternately.

    measure="time": each run's cost is measured from outside the learner's process, as time_ratio does (its CPU
    seconds, which a busy machine does not move: in wall time a short run is scheduled at once and a long one
    waits its turn, so growths would grow with the load). Default repeats (7, 3), the sizes interleaved (small,
    large, small, large...) so that a change of load between runs hits both sizes alike where wall time is all
    there is. The learner's run at the large size is stopped once it costs more than the bound allows (max_growth x
    the reference's growth x the learner's own time at the small size, plus TIMED_SLACK_S, that times the
    machine's contention, Context.load, where it is wall time), or than what is left of the check's time limit,
    and the check fails: a quadratic solution costs that bound, and on a busy machine still fails rather than
    timing out (the same verdict, for the diagnosis). So choose the sizes such that a quadratic solution is
    quick at the small one (the bound is proportional to that time), and the large one far enough (100x,
    300x) for its growth to stand out. `calls` = (at the small size, at the large size) says how many calls of
    the learner's code one run of the scenario makes, and costs are per call:
    several calls a run at the small size (on fresh inputs) keep the round trip, about half a millisecond,
    from swamping it; otherwise the reference's small time is mostly round trip, its growth looks smaller
    than it is, and a correct solution that is slow per element looks as if it grew faster.

    measure="memory": the scenario measures its call itself with `measure_peak_memory` and returns the peak
    bytes (an int). Default repeats (2, 1): the first run at the small size pays for one-time allocations
    (thread pools, library workspaces), the smaller of the two counts.

    A verdict that fails by less than twice what is allowed is measured once more, both sides, before it
    stands (the best of all the runs counts): a spike of load during one run does not fail a correct
    solution. Running out of memory at either size fails the check too, as growing too fast. A failure reports both
    growths, the sizes, and what a linear and a quadratic algorithm would give; its details record what was
    compared (`what`) and the verdict (`got`), not the measured numbers, which change from run to run, so
    that the diagnosis compares runs by what failed. Its failing input is the scenario at the large size,
    unless `failing_input` names another (code that measures both sizes, say)."""
    from mlprep.grading._runner import SubmissionProblem, SubmissionTimeout

    if measure not in _GROWTH_REPEATS:
        raise GraderDefect(f"growth_check measures 'time' or 'memory', not {measure!r}")
    small_runs, large_runs = repeats or _GROWTH_REPEATS[measure]
    floor = _GROWTH_FLOOR[measure]
    n_small, n_large = sizes
    small_text, large_text = size_format.format(n_small), size_format.format(n_large)
    ratio = n_large / n_small
    word = "time" if measure == "time" else "peak memory"
    verdict = {"what": what, "got": f"its {word}'s growth from {small_text} to {large_text} is more than {max_growth:g}x the reference's",
               "first_index": ""}
    costs: dict[tuple[str, int], list[float]] = {(who, i): [] for who in ("learner", "reference") for i in (0, 1)}
    failing = failing_input or _scenario_call(scenario, large_args, sub.device, ctx.interface)
    scale = (f"For scale: {large_text} is {ratio:g}x the size of {small_text}, so a {word} linear in the size grows about {ratio:g}x"
             + (" (n log n a little more)" if measure == "time" else "") + f", a quadratic one about {ratio * ratio:,.0f}x."
             + (f" (Times are per call: a run at {small_text} makes {calls[0]} calls.)" if measure == "time" and calls[0] > 1 else ""))

    def best(who: str, i: int) -> float:
        return min(costs[(who, i)])

    def growth(who: str) -> float:
        return best(who, 1) / max(best(who, 0), floor)

    def reference_growth_text() -> str:
        if not costs[("reference", 1)]:
            return f"the reference needed {_cost_text(best('reference', 0), measure)} at {small_text}"
        return (f"the reference's grew {_factor(growth('reference'))}x ({_cost_text(best('reference', 0), measure)} to"
                f" {_cost_text(best('reference', 1), measure)}) in the same run")

    def measured(value: Any, who: str, i: int) -> float:
        if measure == "time":
            return (ctx.reference_submission() if who == "reference" else sub).last_cost_s / calls[i]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not value >= 0:
            if who == "reference":
                raise GraderDefect(f"the memory scenario {scenario.__name__} returned {describe_value(value)}, not a number of bytes")
            fail(joined(f"{what}: the memory measurement in your process returned {describe_value(value)}, not a number of bytes.", hint),
                 failing_input=failing, **verdict)
        return float(value)

    # The reference's peak memory does not depend on the machine's load, so it is measured once per judge process
    # (a batch, the self-check) for each reference, scenario and sizes; its time is measured in every run.
    peaks_key = ctx.reference_key(scenario, small_args, large_args) if measure == "memory" else None
    kept_peaks = _REFERENCE_PEAKS.get(peaks_key) if peaks_key is not None else None

    def run_reference(i: int) -> None:
        if kept_peaks is not None:
            costs[("reference", i)] = list(kept_peaks[i])
            return
        try:
            value = ctx.reference_submission()._run(scenario, (small_args, large_args)[i], {}, timed=measure == "time")  # a memory scenario measures itself
        except SubmissionProblem as problem:
            raise GraderDefect(f"the reference failed the growth scenario {scenario.__name__}: {problem.message}") from None
        costs[("reference", i)].append(measured(value, "reference", i))

    def run_learner(i: int, cutoff: float | None = None, cpu_cutoff: float | None = None) -> None:
        at = (small_text, large_text)[i]
        def out_of_memory(said: str) -> str:
            before = ""
            if i:
                needed = best("learner", 0)
                before = f"; at {small_text} it needed {_cost_text(needed, measure)}" + (
                    f", which grown {ratio * ratio:,.0f}x (quadratically) would be {_cost_text(needed * ratio * ratio, measure)}" if measure == "memory" else "")
            return joined(f"{what}: at {at} {said}{before}; {reference_growth_text()}. {scale}", hint)

        try:
            with out_of_memory_said(out_of_memory, fails=dict(failing_input=failing, max_growth=max_growth, sizes=[n_small, n_large], **verdict)):
                value = sub._run(scenario, (small_args, large_args)[i], {}, cutoff_s=cutoff, timed=measure == "time", cpu_cutoff_s=cpu_cutoff)
        except SubmissionTimeout as stopped:
            if cutoff is None or sub.remaining_s() <= 0:
                raise
            if stopped.details.get("cpu_limit_reached"):
                cutoff = cpu_cutoff
            at_least = cutoff / calls[1] / max(best("learner", 0), floor)
            allowed = max_growth * growth("reference")
            why = ("" if at_least > allowed else f" (all the time this check had left, {_factor(cutoff / calls[1] / best('reference', 1))}x"
                   f" the reference's {_cost_text(best('reference', 1), measure)} there)")
            fail(joined(f"{what}: your code's run at {large_text} was stopped after {cutoff:.2f} s{_cpu_words(stopped)}{why}, when its time had grown more than"
                       f" {_factor(at_least)}x its {_cost_text(best('learner', 0), measure)} at {small_text}; {reference_growth_text()}."
                       f" Allowed: {max_growth:g}x the reference's growth ({_factor(allowed)}x). {scale}", hint),
                 failing_input=failing, learner_small=best("learner", 0), reference=[best("reference", 0), best("reference", 1)],
                 cutoff_s=cutoff, max_growth=max_growth, sizes=[n_small, n_large], **verdict)
        costs[("learner", i)].append(measured(value, "learner", i))

    def measure_round() -> Growth:
        for i in _interleaved(small_runs, large_runs):
            run_reference(i)
            if i == 0:
                run_learner(0)
                continue
            bound = max_growth * growth("reference") * max(best("learner", 0), floor)
            # Stopped at the bound, or else where the check's own time limit would end it (a timeout is no verdict on the
            # growth, and a busy machine must not turn this check's failure into one).
            left = sub.remaining_s() - GROWTH_VERDICT_S
            if measure != "time":
                run_learner(1)
            elif sub.times_cpu() and bound * calls[1] + TIMED_SLACK_S < left:
                run_learner(1, cutoff=left, cpu_cutoff=bound * calls[1] + TIMED_SLACK_S)
            else:  # in wall seconds: where CPU time is not measured, or where the check's time ends first
                cutoff = min(bound * calls[1] + TIMED_SLACK_S * ctx.load, left)
                run_learner(1, cutoff=cutoff if cutoff > 0 else None)
            if best("learner", 1) > 2 * bound:  # failing by more than any machine noise: no need to run it again
                break
        return Growth(measure, (n_small, n_large), (best("learner", 0), best("learner", 1)), (best("reference", 0), best("reference", 1)))

    found = measure_round()
    if peaks_key is not None and kept_peaks is None and costs[("reference", 1)]:
        _REFERENCE_PEAKS[peaks_key] = (list(costs[("reference", 0)]), list(costs[("reference", 1)]))  # copies: a second round adds to costs
    if max_growth * found.reference_growth < found.learner_growth < 2 * max_growth * found.reference_growth:
        found = measure_round()  # failing, but not by far: measured once more (both sides, the best of all runs counts) before the verdict
    if found.learner_growth > max_growth * found.reference_growth:
        fail(joined(f"{what}: your code's {word} grew {_factor(found.learner_growth)}x from {small_text} to {large_text}"
                   f" ({_cost_text(found.learner[0], measure)} to {_cost_text(found.learner[1], measure)}); {reference_growth_text()}."
                   f" Allowed: {max_growth:g}x the reference's growth ({_factor(max_growth * found.reference_growth)}x). {scale}", hint),
             failing_input=failing, learner=list(found.learner), reference=list(found.reference), learner_growth=found.learner_growth,
             reference_growth=found.reference_growth, max_growth=max_growth, sizes=[n_small, n_large], **verdict)
    return found


@contextlib.contextmanager
def out_of_memory_said(words: Callable[[str], str], fails: dict[str, Any] | None = None) -> Iterator[None]:
    """The learner's code running out of memory inside the block, said in the check's words: `words(said)` gets
    the runner's sentence ("your code ran out of memory (MemoryError): it tried to allocate more than the 512 MiB
    ...") and returns the message, to which the learner's traceback is added. With `fails` (the details of a
    budget's failed verdict, failing_input among them), running out of memory fails the check as going over
    the budget does; without, it stays the error it was (its details kept)."""
    from mlprep.grading._runner import SubmissionRaised

    try:
        yield
    except SubmissionRaised as problem:
        if problem.details.get("kind") != "memory":
            raise
        said, _, trace = problem.message.partition("\n")
        message = words(said) + (f"\n{trace}" if trace else "")
        if fails is not None:
            fail(message, **fails)
        raise SubmissionRaised(message, problem.details) from None


def _interleaved(small_runs: int, large_runs: int) -> list[int]:
    """The order of a growth check's runs, 0 at the small size and 1 at the large: one small run first (the bound at
    the large size needs the learner's time there), then the large size's runs spread evenly among the other small ones."""
    spread = [((k + 0.5) / (small_runs - 1), 0) for k in range(small_runs - 1)] + [((k + 0.5) / large_runs, 1) for k in range(large_runs)]
    return [0] + [i for _, i in sorted(spread)]


def _scenario_call(scenario: Callable, args: Sequence[Any], device: str, interface: Interface) -> Call:
    """A scenario's run as the learner's code it stands for (through its repro), without running it."""
    message = {"op": "run", "module": scenario.__module__, "scenario": scenario.__name__, "args": list(args), "kwargs": {}}
    return request_as_call(Request("run", scenario.__name__, scenario, encode(message), device), interface)


class PeakMemory:
    """What measure_peak_memory saw: `bytes`, the peak beyond what was in use when the block began, and
    `method`, how it was measured."""

    def __init__(self) -> None:
        self.bytes = 0
        self.method = ""


@contextlib.contextmanager
def measure_peak_memory(device: str = "cpu") -> Iterator[PeakMemory]:
    """Sandbox side, inside a scenario: the peak memory the block allocates beyond what was in use when it
    began, measured outside Python's allocator, so that NumPy's, torch's and Python's own allocations all
    count (tracemalloc sees only those made through Python's hooks).

    On CUDA: torch.cuda's peak allocation (max_memory_allocated after reset_peak_memory_stats). On the CPU:
    the process's peak resident set (VmHWM), reset as the block begins (5 written to /proc/self/clear_refs),
    after the C allocator has handed its free pages back to the system (malloc_trim), so that memory the
    block takes from the allocator's free lists counts as well. Its threshold for serving an allocation
    with fresh pages of its own (mmap) is fixed at glibc's default, 128 KiB: left to itself, glibc raises
    it after big blocks are freed (up to 32 MiB) and then serves them from pages it kept, so that the same
    call would measure less in a process with a history than in a fresh one. That setting stays for the
    rest of the process: measure a sandbox's memory after timing it, not before. Where clear_refs cannot
    be written, the resident set is sampled every millisecond instead (which can miss a shorter peak)."""
    meter = PeakMemory()
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        try:
            yield meter
        finally:
            torch.cuda.synchronize(device)
            meter.bytes, meter.method = max(0, int(torch.cuda.max_memory_allocated(device) - base)), "torch.cuda.max_memory_allocated"
        return
    if _mallopt is not None:
        _mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
    _gc_collect()
    if _malloc_trim is not None:
        _malloc_trim(0)
    if _reset_peak_rss():
        base = _status_bytes("VmHWM")
        try:
            yield meter
        finally:
            meter.bytes, meter.method = max(0, _status_bytes("VmHWM") - base), "peak resident set (VmHWM)"
        return
    base = _resident_bytes()
    peak = [base]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.001):
            peak[0] = max(peak[0], _resident_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield meter
    finally:
        stop.set()
        sampler.join()
        meter.bytes, meter.method = max(0, max(peak[0], _resident_bytes()) - base), "resident set sampled every millisecond"


def _reset_peak_rss() -> bool:
    try:
        with _open("/proc/self/clear_refs", "w") as control:
            control.write("5")  # resets VmHWM to the current resident set (Linux 4.0+)
        return True
    except OSError:
        return False


def _status_bytes(field: str) -> int:
    with _open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":")) * 1024


def _resident_bytes() -> int:
    with _open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE_BYTES


def _bind_libc(name: str) -> Callable[..., int] | None:
    try:
        return getattr(ctypes.CDLL(None), name, None)
    except OSError:
        return None


# Bound at import, before any learner code runs in the sandbox.
_open, _gc_collect = open, gc.collect
_malloc_trim, _mallopt = _bind_libc("malloc_trim"), _bind_libc("mallopt")
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
